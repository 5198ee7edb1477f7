"""The offline device kit (`make device-kit`, scripts/device_kit.py) and its sweep (scripts/device_sweep.sh),
without network: the kit's list covers what its packages require, the completeness check finds what is
missing, and the sweep's dry run plans the jobs it should with presets that exist."""
from __future__ import annotations

import importlib.metadata
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))
import device_kit  # noqa: E402
import device_kit_ft  # noqa: E402


def _wheel(dest: Path, name: str, version: str, requires: list[str]) -> Path:
    path = dest / f"{name.replace('-', '_')}-{version}-py3-none-any.whl"
    meta = "Metadata-Version: 2.1\nName: {}\nVersion: {}\n{}\n".format(
        name, version, "".join(f"Requires-Dist: {r}\n" for r in requires))
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(f"{name.replace('-', '_')}-{version}.dist-info/METADATA", meta)
    return path


def test_missing_requirements_finds_what_neither_the_kit_nor_the_device_has(tmp_path):
    wheels = [
        _wheel(tmp_path, "gymnasium", "1.4.0", ["numpy>=1.22", "cloudpickle>=1.2", "farama-notifications>=0.0.1",
                                                 "pygame>=2.1; extra == \"classic-control\""]),
        _wheel(tmp_path, "hydra-core", "1.3.8", ["omegaconf<2.4,>=2.2", "antlr4-python3-runtime==4.9.*",
                                                  "importlib-resources; python_version < \"3.9\""]),
        _wheel(tmp_path, "omegaconf", "2.3.1", ["antlr4-python3-runtime==4.9.*"]),
        _wheel(tmp_path, "antlr4-python3-runtime", "4.11.0", []),
        _wheel(tmp_path, "pufferlib-core", "3.0.23", ["torch==2.9.0", "pyro-ppl"]),
    ]
    missing = device_kit.missing_requirements(wheels, "3.12", device_has={"numpy", "cloudpickle"},
                                              no_deps={"pufferlib-core"})
    # farama-notifications is neither carried nor there; antlr4 is carried at a version hydra and omegaconf
    # refuse; the extra, the marker for old Pythons and pufferlib's pins (installed --no-deps) are not asked for
    assert sorted(m.split(":")[0] for m in missing) == ["gymnasium", "hydra-core", "omegaconf"]
    assert any("farama-notifications" in m for m in missing)
    assert all("carried: 4.11.0" in m for m in missing if "antlr4" in m)
    (tmp_path / "ok").mkdir()
    good = wheels[:3] + [_wheel(tmp_path / "ok", "antlr4-python3-runtime", "4.9.3", []),
                         _wheel(tmp_path, "farama-notifications", "0.0.6", [])]
    assert device_kit.missing_requirements(good, "3.12", device_has={"numpy", "cloudpickle"}) == []


def test_the_kit_list_covers_what_its_packages_require_here():
    # the installed metadata of every package the kit carries (the versions it carries): each requirement for
    # Python 3.12 is carried or on the device, so `pip install --no-index` there resolves
    from packaging.requirements import Requirement

    carried = {device_kit.canonical(n) for n in device_kit.KIT + device_kit.CARRIED_ANYWAY}
    env = {"python_version": "3.12", "python_full_version": "3.12.0", "sys_platform": "linux",
           "platform_system": "Linux", "platform_machine": "x86_64", "extra": ""}
    missing = []
    for name in device_kit.KIT:
        if device_kit.canonical(name) in device_kit.NO_DEPS:
            continue
        for line in importlib.metadata.distribution(name).requires or []:
            req = Requirement(line)
            if req.marker is not None and not req.marker.evaluate(env):
                continue
            dep = device_kit.canonical(req.name)
            if dep not in carried and dep not in device_kit.DEVICE_HAS:
                missing.append(f"{name}: {line}")
    assert missing == []


def test_the_kit_pins_this_venvs_versions():
    specs = device_kit.pinned(["gymnasium", "hydra-core"])
    assert specs == [f"gymnasium=={importlib.metadata.version('gymnasium')}",
                     f"hydra-core=={importlib.metadata.version('hydra-core')}"]
    with pytest.raises(SystemExit, match="not installed"):
        device_kit.pinned(["no-such-package-here"])


def test_the_ft_kit_carries_every_requirement_of_what_it_carries_for_3_13t():
    # the free-threaded interpreter has no packages of its own: everything its wheels require must travel
    from packaging.requirements import Requirement

    names = device_kit_ft.BINARY + device_kit_ft.PURE
    carried = {device_kit.canonical(n) for n in names}
    env = {"python_version": "3.13", "python_full_version": "3.13.0", "sys_platform": "linux",
           "platform_system": "Linux", "platform_machine": "x86_64", "implementation_name": "cpython",
           "platform_python_implementation": "CPython", "os_name": "posix", "extra": ""}
    missing = []
    for name in names:
        for line in importlib.metadata.distribution(name).requires or []:
            req = Requirement(line)
            if req.marker is not None and not req.marker.evaluate(env):
                continue
            if device_kit.canonical(req.name) not in carried:
                missing.append(f"{name}: {line}")
    assert missing == []


def test_the_ft_kit_refuses_an_interpreter_that_is_not_a_relocatable_free_threaded_3_13(tmp_path):
    with pytest.raises(SystemExit, match="free-threaded 3.13 is needed"):
        device_kit_ft.check_interpreter(Path(sys.executable))  # the GIL build the suite runs on
    with pytest.raises(SystemExit, match="make python-ft"):
        device_kit_ft.check_interpreter(tmp_path / "bin" / "python3")


def test_the_packed_interpreter_leaves_its_tests_gui_modules_static_library_and_caches_behind(tmp_path):
    prefix = tmp_path / "prefix"
    keep = ["bin/python3.13t", "lib/python3.13t/os.py", "lib/python3.13t/ensurepip/__init__.py",
            "lib/python3.13t/lib-dynload/_json.cpython-313t-x86_64-linux-gnu.so", "include/python3.13t/Python.h",
            "lib/python3.13t/config-3.13t-x86_64-linux-gnu/Makefile", "lib/python3.13t/unittest/case.py",
            "lib/python3.13t/ensurepip/_bundled/pip-25.1.1-py3-none-any.whl"]
    drop = ["lib/python3.13t/test/test_os.py", "lib/python3.13t/idlelib/idle.py", "lib/python3.13t/tkinter/ttk.py",
            "lib/python3.13t/config-3.13t-x86_64-linux-gnu/libpython3.13t.a", "lib/python3.13t/__pycache__/os.pyc",
            "lib/python3.13t/json/__pycache__/x.pyc", "share/man/man1/python3.1", "lib/pkgconfig/python3.pc",
            "lib/python3.13t/lib-dynload/_testcapi.cpython-313t-x86_64-linux-gnu.so",
            "lib/python3.13t/site-packages/pip/__init__.py", "lib/python3.13t/pydoc_data/topics.py",
            "lib/libpython3.13t.a"]
    for rel in keep + drop:
        (prefix / rel).parent.mkdir(parents=True, exist_ok=True)
        (prefix / rel).write_text("x")
    import os
    os.link(prefix / "bin/python3.13t", prefix / "bin/python3.13")  # as `make install` leaves them: one file
    out = tmp_path / "python-ft.tar.xz"
    device_kit_ft.pack_python(prefix, out)
    import tarfile
    with tarfile.open(out) as tar:
        members = {m.name.removeprefix("python-ft/") for m in tar.getmembers() if m.isfile()}
        link = tar.getmember("python-ft/bin/python3.13")
    assert members == set(keep)
    assert link.issym() and link.linkname == "python3.13t"


def _dry_run(*args: str) -> str:
    proc = subprocess.run(["bash", "scripts/device_sweep.sh", "--dry-run", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=60, env={"PATH": "/usr/bin:/bin", "OUT_DIR": "/tmp/device-dry-run"})
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_device_sweep_dry_run_plans_every_job_with_existing_presets():
    out = _dry_run()
    steps = [line[2:] for line in out.splitlines() if line.startswith("+ ")]
    assert "--no-index" in steps[0] and "--no-deps" in steps[1] and "pufferlib-core" in steps[1]
    assert "build_ext --inplace" in steps[2] and "reactorbench-device.pth" in steps[3]
    paired = [s for s in steps if " compare " in s]
    standalone = [s for s in steps if " -m harness -m " in s]
    workers = [int(re.search(r"workers=(\d+)", s).group(1)) for s in paired]
    assert workers[0] == 16 and sorted(set(workers)) == [4, 8, 16]  # issue 46: 16, 8 and 4, the widest first
    for w in (4, 8, 16):
        scenarios = {re.search(r"scenario=(\w+)", s).group(1) for s in paired if f"workers={w} " in s}
        assert scenarios == {"gym", "atari", "marl", "dqn"}
    assert all("compare.min_cycles=20" in s for s in paired)  # at least 20 cycles per cell
    assert all("compare.respawn_s=0" in s for s in paired)  # the budget holds one set of processes per job
    wide = {re.search(r"scenario=(\w+)", s).group(1) for s in paired
            if "workers=16 " in s and "scenario.num_envs=64" in s}
    assert wide == {"gym", "atari"}  # four envs per worker at the widest count
    assert all("backends=[serial,reactor,capacity_lockstep]" in s for s in paired)
    presets = set()
    for s in standalone:
        presets |= set(re.search(r"backend=(\S+)", s).group(1).split(","))
    assert "ray" not in " ".join(steps)  # Ray cannot be carried
    assert {"serial", "reactor", "puffer", "ale_vector", "vector"} <= {p.replace("_overwork", "") for p in presets}
    for preset in presets | {"serial", "reactor", "capacity_lockstep"}:
        assert (REPO / "conf" / "backend" / f"{preset}.yaml").exists(), preset


def test_device_sweep_local_dry_run_is_short_and_installs_nothing():
    out = _dry_run("--local")
    steps = [line[2:] for line in out.splitlines() if line.startswith("+ ")]
    assert not any("pip install" in s for s in steps)
    assert {int(w) for s in steps for w in re.findall(r"workers=(\d+)", s)} == {1, 2}


def test_device_sweep_ft_unpacks_the_kit_and_pairs_threads_on_3_13t_with_processes_at_16_and_8():
    out = _dry_run("--ft")
    steps = [line[2:] for line in out.splitlines() if line.startswith("+ ")]
    ft = [s for s in steps if ".device/ft" in s]
    assert ft[0] == "tar xJf .device/ft/python-ft.tar.xz -C .device/ft"
    assert ft[1] == ".device/ft/python-ft/bin/python3 -m venv .device/ft/venv"
    assert "--no-index --find-links .device/ft/wheels" in ft[2] and "ale-py" in ft[2]
    assert "build_ext --inplace" in ft[3] and "sys._is_gil_enabled()" in ft[5]
    # the C is generated again by the kit's Cython before that build (touching the .pyx files)
    assert steps[steps.index(ft[3]) - 1].startswith("find reactor_backend scenarios -name *.pyx -exec touch")
    paired = [s for s in steps if " compare " in s]
    assert [(re.search(r"scenario=(\w+)", s).group(1), int(re.search(r"workers=(\d+)", s).group(1))) for s in paired] \
        == [("gym", 16), ("atari", 16), ("gym", 8), ("atari", 8)]
    # processes first, threads on the free-threaded interpreter second: the job's main ratio is threads / processes
    assert all("backends=[reactor,reactor_threads@ft,serial,serial@ft,capacity_lockstep,capacity_lockstep@ft]" in s
               for s in paired)
    assert not [s for s in steps if " -m harness -m " in s]  # nothing else in this call
    for preset in ("reactor", "reactor_threads", "serial", "capacity_lockstep"):
        assert (REPO / "conf" / "backend" / f"{preset}.yaml").exists(), preset
    assert "results in /tmp/ft-device-dry-run" in out


def test_device_sweep_ft_local_dry_run_installs_only_the_free_threaded_kit():
    steps = [line[2:] for line in _dry_run("--ft", "--local").splitlines() if line.startswith("+ ")]
    assert [s for s in steps if "pip install" in s] == [s for s in steps if "pip install" in s and ".device/ft" in s]
    assert {int(w) for s in steps for w in re.findall(r"workers=(\d+)", s)} == {2}


def test_device_sweep_refuses_unknown_arguments():
    proc = subprocess.run(["bash", "scripts/device_sweep.sh", "--lcoal"], cwd=REPO, capture_output=True, text=True,
                          timeout=30)
    assert proc.returncode == 2 and "unknown argument --lcoal" in proc.stderr
