"""The free-threaded part of the device kit (`make device-kit-ft`): a relocatable CPython 3.13t and the cp313t
wheels its measuring children need, in ``.device/ft/``.

Why: issue 46 asks for the threads executor on free-threaded 3.13t against the processes executor at 16 and 8
workers (the paper's own setup) on the lent many-core machine, which has Python 3.12 and no network: no
free-threaded interpreter can be had there. A paired job runs its parent on the machine's own Python (with the main
kit, `make device-kit`) and only its ``@ft`` residents on this interpreter (docs/harness.md, "Interpreters"), so
this kit carries only what a measuring child imports: numpy, psutil, gymnasium, hydra-core (its job's config) and
their requirements, ale-py and PyYAML (no cp313t wheels exist: built here from their sdists, ale-py as `make
install-ft` builds it), and Cython and setuptools to compile the project's extension there
(`scripts/device_sweep.sh --ft` does all of it on the machine).

What it writes (``--dest``, default ``.device``):
    ft/python-ft.tar.xz   ``.python-ft`` (`make python-ft`) without its tests, GUI modules, static library and
                          caches, debug information stripped. A build without ``--enable-shared`` finds its
                          standard library from where its executable lies, so it runs wherever it is unpacked;
                          checked here by unpacking it into a temporary folder and running it from there.
    ft/wheels/            the wheels, at this checkout's ``.venv`` versions (what the tests here ran)
    ft/manifest.txt       what it holds, its size, and the install lines the sweep runs
It checks that the wheels are complete for that interpreter (it has no packages of its own: every requirement is
carried) and that this kit, the main kit where it is built, and the tree that travels fit in ``--max-mib``.

    python scripts/device_kit_ft.py [--dest .device] [--python .python-ft/bin/python3] [--max-mib 60]
"""
from __future__ import annotations

import argparse
import fnmatch
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import device_kit  # noqa: E402  (the main kit: its wheel metadata, completeness check and tree size)

REPO = device_kit.REPO
#: compiled packages a measuring child imports: a cp313t wheel from the package index where there is one (numpy,
#: psutil), else built here from the sdist with the free-threaded interpreter (PyYAML, ale-py)
BINARY = ["numpy", "psutil", "pyyaml", "ale-py"]
#: pure-Python packages: what a measuring child imports (gymnasium, and hydra-core for its job's config), their
#: requirements, and Cython and setuptools to compile the project's extension there (Cython's pure wheel
#: compiles as its compiled wheels do, slower); a pure wheel where there is one, else built from the sdist
PURE = ["gymnasium", "cloudpickle", "farama-notifications", "typing-extensions", "hydra-core", "omegaconf",
        "antlr4-python3-runtime", "packaging", "Cython", "setuptools"]
#: how a package with no cp313t wheel is built: in its own build isolation, except ale-py (`make install-ft`'s
#: recipe: its pyproject also asks for jax, for the XLA interface, which is turned off with SDL and the vector
#: interface; its build requirements as binary wheels in the build venv)
BUILD_ENV = {"ale-py": {"CMAKE_ARGS": "-DSDL_SUPPORT=OFF -DBUILD_VECTOR_LIB=OFF -DBUILD_VECTOR_XLA_LIB=OFF"}}
NO_ISOLATION = {"ale-py"}
BUILD_REQUIRES = ["scikit-build-core>=0.10", "nanobind>=2.5", "cmake", "ninja"]
#: the interpreter's folders and files the measuring children never use: its tests (140 MB) and test modules, the
#: static library (75 MB, in lib/), the GUI, docs and caches, and the pip installed into the base (a venv installs
#: its own from ``ensurepip``'s bundled wheel, which stays)
DROP = ["lib/python3.*/test", "lib/python3.*/idlelib", "lib/python3.*/tkinter", "lib/python3.*/turtledemo",
        "lib/python3.*/pydoc_data", "lib/libpython3*.a", "lib/python3.*/config-3.*/*.a",
        "lib/python3.*/lib-dynload/_test*", "lib/python3.*/lib-dynload/_ctypes_test*", "lib/python3.*/lib-dynload/xx*",
        "lib/python3.*/site-packages/*", "*/__pycache__", "share/man", "lib/pkgconfig"]


def check_interpreter(python: Path) -> str:
    """The interpreter's version when it is a free-threaded 3.13 built without ``--enable-shared`` (which is
    what makes it relocatable); otherwise exit with the reason."""
    if not (python.is_file() and os.access(python, os.X_OK)):
        raise SystemExit(f"device-kit-ft: no interpreter at {python}: run `make python-ft` first")
    probe = ("import sys, sysconfig; v = sysconfig.get_config_var; "
             "print(sys.version.split()[0], int(bool(v('Py_GIL_DISABLED'))), int(bool(v('Py_ENABLE_SHARED'))))")
    version, ft, shared = subprocess.run([str(python), "-c", probe], capture_output=True, text=True,
                                         check=True).stdout.split()
    if ft != "1" or not version.startswith("3.13."):
        raise SystemExit(f"device-kit-ft: {python} is Python {version}, free-threaded: {ft == '1'}; a free-threaded "
                         "3.13 is needed (make python-ft)")
    if shared == "1":
        raise SystemExit(f"device-kit-ft: {python} was built with --enable-shared: it would look for its libpython "
                         "where it was built; build it without (make python-ft does)")
    return version


def dropped(rel: str) -> bool:
    """Whether the interpreter's file or folder at ``rel`` (relative to its prefix) stays behind (`DROP`)."""
    return any(fnmatch.fnmatch(rel, pattern) or fnmatch.fnmatch(rel, pattern + "/*") for pattern in DROP)


def pack_python(prefix: Path, out: Path) -> None:
    """``prefix`` (a free-threaded CPython's install) as ``out`` (tar.xz, members under ``python-ft/``), without
    `DROP`, its hard-linked executables as one file and a symlink, and with debug information stripped from its
    executables and extension modules."""
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "python-ft"
        shutil.copytree(prefix, copy, symlinks=True,
                        ignore=lambda d, names: [n for n in names
                                                 if dropped(os.path.relpath(os.path.join(d, n), prefix))])
        first: dict[int, str] = {}  # hard links in bin/ (python3.13 and python3.13t are one file) stay one file
        for path in sorted((prefix / "bin").iterdir(), reverse=True):  # python3.13t stays the file
            if path.is_file() and not path.is_symlink():
                ino = path.stat().st_ino
                if ino in first:
                    (copy / "bin" / path.name).unlink()
                    (copy / "bin" / path.name).symlink_to(first[ino])
                else:
                    first[ino] = path.name
        strip = shutil.which("strip")
        if strip:
            for path in copy.rglob("*"):
                if path.is_file() and not path.is_symlink() and (path.suffix == ".so" or path.parent.name == "bin"):
                    with path.open("rb") as f:
                        elf = f.read(4) == b"\x7fELF"
                    if elf:
                        subprocess.run([strip, "--strip-debug", str(path)], check=True)
        out.parent.mkdir(parents=True, exist_ok=True)
        with tarfile.open(out, "w:xz", preset=6) as tar:
            tar.add(copy, arcname="python-ft")


def check_relocated(tarball: Path) -> str:
    """Unpack ``tarball`` into a temporary folder and run its interpreter from there: it must find its standard
    library there (``sys.prefix``), keep the GIL off and make a virtual environment. Returns its version line."""
    with tempfile.TemporaryDirectory() as tmp:
        with tarfile.open(tarball) as tar:
            tar.extractall(tmp, filter="tar")
        python = Path(tmp) / "python-ft" / "bin" / "python3"
        probe = ("import sys, os, sysconfig, venv, ensurepip, hashlib, ssl, ctypes, sqlite3; "
                 "assert os.path.realpath(sys.prefix) == os.path.realpath(sys.argv[1]), (sys.prefix, sys.argv[1]); "
                 "assert not sys._is_gil_enabled(); "
                 "assert os.path.exists(os.path.join(sysconfig.get_paths()['include'], 'Python.h')); "
                 "print(sys.version.split()[0] + 't', sys.prefix)")
        done = subprocess.run([str(python), "-c", probe, str(Path(tmp) / "python-ft")], capture_output=True,
                              text=True)
        if done.returncode != 0:
            raise SystemExit(f"device-kit-ft: the packed interpreter does not run where it is unpacked:\n"
                             f"{done.stderr[-2000:]}")
        venv = subprocess.run([str(python), "-m", "venv", "--without-pip", str(Path(tmp) / "venv")],
                              capture_output=True, text=True)
        if venv.returncode != 0:
            raise SystemExit(f"device-kit-ft: the packed interpreter cannot make a venv:\n{venv.stderr[-2000:]}")
        return done.stdout.strip()


def download(spec: str, dest: Path, *, binary: bool) -> bool:
    """A wheel of ``spec`` into ``dest``: a cp313t binary for manylinux x86_64, or a pure ``py3-none-any``; False
    where the package index has none."""
    if binary:
        target = ["--python-version", "3.13", "--implementation", "cp", "--abi", "cp313t", *device_kit.platform_args()]
    else:
        target = ["--python-version", "3.13", "--implementation", "py", "--abi", "none", "--platform", "any"]
    return device_kit.pip_download(spec, dest, target)


def build_wheel(spec: str, python: Path, cache: Path) -> Path:
    """The wheel of ``spec`` built from its sdist with ``python`` (the free-threaded 3.13) in a throwaway venv the
    first time, and kept in ``cache``; a pure package's wheel is built the same way (it comes out ``py3-none-any``)."""
    name = spec.split("==")[0]
    found = device_kit.wheels_of(spec, cache)
    if found:
        return found[-1]
    cache.mkdir(parents=True, exist_ok=True)
    py = cache / "venv" / "bin" / "python"
    if not py.exists():
        subprocess.run([str(python), "-m", "venv", str(cache / "venv")], check=True)
        subprocess.run([str(py), "-m", "pip", "install", "-q", "--only-binary", ":all:", *BUILD_REQUIRES], check=True)
    env = dict(os.environ, CMAKE_BUILD_PARALLEL_LEVEL=str(os.cpu_count() or 2),
               **BUILD_ENV.get(device_kit.canonical(name), {}))
    print(f"device-kit-ft: building {spec} for cp313t from its sdist", flush=True)
    isolation = [] if device_kit.canonical(name) not in NO_ISOLATION else ["--no-build-isolation"]
    done = subprocess.run([str(py), "-m", "pip", "wheel", "-q", *isolation, "--no-deps", "--no-binary", name,
                           "-w", str(cache), spec], env=env, capture_output=True, text=True)
    found = device_kit.wheels_of(spec, cache)
    if done.returncode != 0 or not found:
        raise SystemExit(f"device-kit-ft: building {spec} from its sdist with {python} failed:\n"
                         f"{done.stderr[-2000:]}")
    return found[-1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dest", default=str(REPO / ".device"))
    parser.add_argument("--python", default=str(REPO / ".python-ft" / "bin" / "python3"))
    parser.add_argument("--max-mib", type=float, default=60.0,
                        help="this kit, the main kit (where built) and the travelling tree together")
    args = parser.parse_args(argv)
    python = Path(args.python)
    version = check_interpreter(python)
    dest = Path(args.dest) / "ft"
    wheels_dir = dest / "wheels"
    wheels_dir.mkdir(parents=True, exist_ok=True)
    for old in wheels_dir.glob("*.whl"):  # one version of each: two stop the install
        old.unlink()
    specs = device_kit.pinned(BINARY + PURE)
    for spec in specs:
        binary = device_kit.canonical(spec.split("==")[0]) in {device_kit.canonical(n) for n in BINARY}
        how = "wheel"
        if not download(spec, wheels_dir, binary=binary):
            shutil.copy2(build_wheel(spec, python, Path(args.dest) / "ft-build"), wheels_dir)
            how = "built from its sdist"
        print(f"device-kit-ft: {spec} ({how})")
    wheels = sorted(wheels_dir.glob("*.whl"))
    missing = device_kit.missing_requirements(wheels, "3.13", device_has=set(), no_deps=set())
    if missing:
        print("device-kit-ft: requirements not carried (the interpreter has no packages of its own):\n  "
              + "\n  ".join(missing), file=sys.stderr)
        return 1
    tarball = dest / "python-ft.tar.xz"
    prefix = python.resolve().parents[1]
    print(f"device-kit-ft: packing {prefix} (Python {version}t) into {tarball}", flush=True)
    pack_python(prefix, tarball)
    ran = check_relocated(tarball)
    mib = 1024 * 1024
    kit = tarball.stat().st_size + sum(w.stat().st_size for w in wheels)
    main_kit = sum(w.stat().st_size for w in (Path(args.dest) / "wheels").glob("*.whl"))
    tree = device_kit.tree_bytes()
    total = kit + main_kit + tree
    names = [device_kit.canonical(s.split("==")[0]) for s in specs]
    lines = [f"free-threaded CPython {version}t from {prefix}, relocatable (unpacked elsewhere it ran: {ran})",
             f"{tarball.name} {tarball.stat().st_size}",
             *(f"{w.name} {w.stat().st_size}" for w in wheels),
             f"ft kit {kit / mib:.1f} MiB, main kit {main_kit / mib:.1f} MiB, tree {tree / mib:.1f} MiB, together "
             f"{total / mib:.1f} MiB (limit {args.max_mib:g} MiB)",
             "install: tar xJf .device/ft/python-ft.tar.xz -C .device/ft; .device/ft/python-ft/bin/python3 -m venv "
             ".device/ft/venv",
             "         .device/ft/venv/bin/python -m pip install --no-index --find-links .device/ft/wheels "
             + " ".join(names)]
    return device_kit.write_manifest(dest, lines, [lines[0], *lines[-3:]], total, args.max_mib, "device-kit-ft")


if __name__ == "__main__":
    sys.exit(main())
