"""The offline kit for a lent many-core machine (`make device-kit`): the wheels it lacks, in ``.device/wheels``.

That machine has no network and its own Python (3.12 by default, ``--python-version``) with torch, numpy, pandas,
scipy, matplotlib, Cython, psutil, pytest, PyYAML, cloudpickle, packaging and typing-extensions
(``DEVICE_HAS``); it lacks gymnasium, ale-py, hydra-core, omegaconf, antlr4-python3-runtime, pettingzoo,
farama-notifications and pufferlib-core. The kit carries each package of ``KIT`` at the version this
checkout's ``.venv`` runs (so the device runs what the tests here ran), as a wheel for that Python on
manylinux x86_64: ``pip download --no-deps --only-binary=:all:``, or ``pip wheel --no-deps`` from the sdist for
a pure-Python package that has no wheel (antlr4-python3-runtime 4.9.3). The small ones the device has anyway
(``CARRIED_ANYWAY``) travel too, in case its versions are older than what the kit's packages ask for
(``pip install --no-index`` keeps an installed version that satisfies them).

Then it checks, offline, that the kit is complete (`missing_requirements`: every requirement of every carried
wheel, markers evaluated for the device's Python, is carried or in ``DEVICE_HAS``; ``pufferlib-core`` is
installed with ``--no-deps``: it pins torch==2.9.0 and its vectorizer needs only numpy, gymnasium and psutil)
and that the kit and the tree that travels fit in ``--max-mib`` (48). It writes ``.device/manifest.txt``.

    python scripts/device_kit.py [--dest .device] [--python-version 3.12] [--max-mib 48]
"""
from __future__ import annotations

import argparse
import email.parser
import importlib.metadata
import re
import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

#: what the device runs that it lacks (distribution names as in the venv)
KIT = ["gymnasium", "ale-py", "hydra-core", "omegaconf", "antlr4-python3-runtime", "pettingzoo",
       "farama-notifications", "pufferlib-core"]
#: small dependencies the device has, carried anyway in case its versions are too old
CARRIED_ANYWAY = ["cloudpickle", "typing-extensions", "pyyaml", "packaging"]
#: what the device has (KINDS.md's package list): requirements on these need no wheel
DEVICE_HAS = {"torch", "numpy", "pandas", "scipy", "matplotlib", "cython", "psutil", "pytest", "pyyaml",
              "cloudpickle", "packaging", "typing-extensions", "setuptools", "wheel", "tqdm", "pillow",
              "rich", "nvidia-ml-py"}
#: installed with --no-deps on the device (its pins are not what it needs to vectorize)
NO_DEPS = {"pufferlib-core"}
PLATFORMS = ["manylinux_2_17_x86_64", "manylinux2014_x86_64", "manylinux_2_24_x86_64", "manylinux_2_27_x86_64",
             "manylinux_2_28_x86_64", "manylinux_2_31_x86_64", "manylinux_2_34_x86_64", "manylinux_2_35_x86_64",
             "manylinux1_x86_64"]


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pinned(names: list[str]) -> list[str]:
    """``name==version`` at the version installed in this interpreter (the one the tests here ran)."""
    out = []
    for name in names:
        try:
            out.append(f"{name}=={importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            raise SystemExit(f"device-kit: {name} is not installed in {sys.executable}: run `make install` "
                             f"(pufferlib-core: `make install-puffer`) first") from None
    return out


def platform_args() -> list[str]:
    """pip's ``--platform`` arguments for every manylinux x86_64 tag the device takes (`PLATFORMS`)."""
    return [arg for p in PLATFORMS for arg in ("--platform", p)]


def pip_download(spec: str, dest: Path, target: list[str]) -> bool:
    """``pip download`` of one wheel of ``spec`` (no sdist, no dependencies) for ``target`` (pip's
    ``--python-version``, ``--implementation``, ``--abi``, ``--platform`` arguments) into ``dest``; False where the
    package index has none."""
    cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:", *target,
           "-d", str(dest), spec]
    return subprocess.run(cmd, capture_output=True, text=True).returncode == 0


def wheels_of(spec: str, folder: Path) -> list[Path]:
    """The wheels in ``folder`` of ``spec``'s distribution (any version unless ``spec`` pins one), sorted."""
    name, _, version = spec.partition("==")
    stem = canonical(name).replace("-", "_")
    return sorted(w for w in folder.glob(f"*-{version or '*'}-*.whl")
                  if canonical(w.name.split("-")[0]).replace("-", "_") == stem)


def fetch(spec: str, dest: Path, python_version: str) -> None:
    """One wheel of ``spec`` for the device into ``dest``: a binary for its Python and platform, else built
    from the sdist when the package is pure Python."""
    if pip_download(spec, dest, ["--python-version", python_version, "--implementation", "cp", *platform_args()]):
        return
    build = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(dest), spec]
    done = subprocess.run(build, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"device-kit: no wheel for {spec} (Python {python_version}, manylinux x86_64):\n"
                         f"{done.stderr[-2000:]}")
    built = wheels_of(spec.split("==")[0], dest)
    if not built or not all(w.name.endswith("-none-any.whl") for w in built):
        raise SystemExit(f"device-kit: {spec} has no wheel for the device and is not pure Python: cannot carry it")


def wheel_metadata(wheel: Path) -> email.message.Message:
    with zipfile.ZipFile(wheel) as z:
        name = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        return email.parser.Parser().parsestr(z.read(name).decode())


def missing_requirements(wheels: list[Path], python_version: str, device_has: set[str] = DEVICE_HAS,
                         no_deps: set[str] = NO_DEPS) -> list[str]:
    """Every requirement of a carried wheel (extras left out, markers evaluated for the device's Python) that
    neither a carried wheel nor the device provides, as ``package: requirement``; empty when the kit is whole."""
    from packaging.requirements import Requirement
    from packaging.version import Version

    env = {"python_version": python_version, "python_full_version": f"{python_version}.0",
           "sys_platform": "linux", "platform_system": "Linux", "platform_machine": "x86_64",
           "os_name": "posix", "implementation_name": "cpython", "platform_python_implementation": "CPython",
           "extra": ""}
    carried = {}
    metas = {}
    for wheel in wheels:
        meta = wheel_metadata(wheel)
        carried[canonical(meta["Name"])] = Version(meta["Version"])
        metas[canonical(meta["Name"])] = meta
    missing = []
    for name, meta in sorted(metas.items()):
        if name in no_deps:
            continue
        for line in meta.get_all("Requires-Dist") or []:
            req = Requirement(line)
            if req.marker is not None and not req.marker.evaluate(env):
                continue
            dep = canonical(req.name)
            if dep in carried:
                if req.specifier and not req.specifier.contains(carried[dep], prereleases=True):
                    missing.append(f"{name}: {line} (carried: {carried[dep]})")
            elif dep not in device_has:
                missing.append(f"{name}: {line}")
    return missing


def tree_bytes(repo: Path = REPO) -> int:
    """Bytes of what travels with the command: tracked files and untracked files git does not ignore."""
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=repo,
                         capture_output=True, check=True).stdout
    total = 0
    for rel in out.decode().split("\0"):
        path = repo / rel
        if rel and path.is_file() and not path.is_symlink():
            total += path.stat().st_size
    return total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dest", default=str(REPO / ".device"))
    parser.add_argument("--python-version", default="3.12")
    parser.add_argument("--max-mib", type=float, default=48.0, help="kit and travelling tree together")
    args = parser.parse_args(argv)
    dest = Path(args.dest)
    wheels_dir = dest / "wheels"
    wheels_dir.mkdir(parents=True, exist_ok=True)
    for old in wheels_dir.glob("*.whl"):  # one version of each: two stop the install
        old.unlink()
    specs = pinned(KIT + CARRIED_ANYWAY)
    for spec in specs:
        fetch(spec, wheels_dir, args.python_version)
        print(f"device-kit: {spec}")
    wheels = sorted(wheels_dir.glob("*.whl"))
    missing = missing_requirements(wheels, args.python_version)
    if missing:
        print("device-kit: requirements neither carried nor on the device:\n  " + "\n  ".join(missing),
              file=sys.stderr)
        return 1
    kit = sum(w.stat().st_size for w in wheels)
    tree = tree_bytes()
    mib = 1024 * 1024
    lines = [f"python {args.python_version}, manylinux x86_64; built with {sys.executable}",
             *(f"{w.name} {w.stat().st_size}" for w in wheels),
             f"kit {kit / mib:.1f} MiB, tree {tree / mib:.1f} MiB, together {(kit + tree) / mib:.1f} MiB "
             f"(limit {args.max_mib:g} MiB)",
             "install: pip install --no-index --find-links .device/wheels " + " ".join(
                 s.split("==")[0] for s in specs if canonical(s.split("==")[0]) not in NO_DEPS),
             "         pip install --no-index --no-deps --find-links .device/wheels " + " ".join(sorted(NO_DEPS))]
    return write_manifest(dest, lines, lines[-3:], kit + tree, args.max_mib, "device-kit")


def write_manifest(dest: Path, lines: list[str], shown: list[str], total: int, max_mib: float, who: str) -> int:
    """Write ``lines`` as ``dest/manifest.txt`` and print ``shown``; the exit status: 1 (said on stderr) where the
    ``total`` bytes that travel exceed ``max_mib``, else 0."""
    (dest / "manifest.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(shown))
    mib = 1024 * 1024
    if total > max_mib * mib:
        print(f"{who}: {total / mib:.1f} MiB is over the {max_mib:g} MiB that may travel", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
