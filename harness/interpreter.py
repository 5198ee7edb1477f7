"""Which Python the measuring child runs under: this one, the free-threaded one, or a given path.

Why: the reactor model's threads executor only runs reactions in parallel on a free-threaded CPython
(``python3.13t``). One sweep can hold both interpreters (``interpreter=default,ft``), so that the report
compares them side by side (docs/harness.md, "Interpreters"). ``ft`` is ``.venv-ft/bin/python``
(``make install-ft``) unless ``REACTORBENCH_FT_PYTHON`` names another; any other value is the path of an
interpreter that has the project's dependencies and extensions. A job whose scenario or backend needs a
package the interpreter lacks (Ray, ale-py, torch have no cp313t wheels here) is not run: its row says
``skipped`` and why.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = "default"
FT = "ft"

#: the packages a backend (by name prefix) or a scenario imports beyond the base set, checked in the
#: interpreter before a job starts there
BACKEND_NEEDS: dict[str, tuple[str, ...]] = {"ray": ("ray",), "ale_vector": ("ale_py",)}
SCENARIO_NEEDS: dict[str, tuple[str, ...]] = {"atari": ("ale_py",), "dqn": ("torch",), "marl": ("torch",)}


def executable(name: str | None) -> str:
    """The interpreter path for the config value ``name`` (``default``, ``ft`` or a path)."""
    if not name or name == DEFAULT:
        return sys.executable
    if name == FT:
        return os.environ.get("REACTORBENCH_FT_PYTHON") or str(ROOT / ".venv-ft" / "bin" / "python")
    return str(Path(name).expanduser())


def interpreter_errors(job: Mapping[str, Any]) -> list[str]:
    """Why ``job['interpreter']`` cannot run jobs at all (empty: it can), before anything runs."""
    name = job.get("interpreter", DEFAULT)
    if not name or name == DEFAULT:
        return []
    exe = executable(name)
    if not (os.path.isfile(exe) and os.access(exe, os.X_OK)):
        hint = ": run `make install-ft` (or set REACTORBENCH_FT_PYTHON)" if name == FT else ""
        return [f"interpreter={name}: no executable {exe}{hint}"]
    try:
        describe(exe)
    except RuntimeError as exc:
        return [f"interpreter={name}: {exc}"]
    return []


@lru_cache(maxsize=None)
def describe(exe: str) -> dict[str, Any]:
    """Version, free-threaded build or not, which optional packages ``exe`` can import, and the versions of
    the packages the rows' metadata lists (one probe)."""
    from harness.metadata import PACKAGES

    wanted = sorted({m for ms in (*BACKEND_NEEDS.values(), *SCENARIO_NEEDS.values()) for m in ms})
    probe = ("import importlib.metadata as md, importlib.util, json, sys, sysconfig\n"
             "def v(d):\n"
             "    try:\n        return md.version(d)\n"
             "    except md.PackageNotFoundError:\n        return '-'\n"
             f"mods = {wanted!r}\n"
             "print(json.dumps({'version': sys.version.split()[0], "
             "'free_threaded': bool(sysconfig.get_config_var('Py_GIL_DISABLED')), "
             "'has': {m: importlib.util.find_spec(m) is not None for m in mods}, "
             f"'versions': {{d: v(d) for d in {list(PACKAGES)!r}}}}}))")
    try:
        out = subprocess.run([exe, "-c", probe], capture_output=True, text=True, timeout=60, cwd=str(ROOT))
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise RuntimeError(f"{exe} does not run: {exc}") from exc
    if out.returncode != 0:
        raise RuntimeError(f"{exe} does not run: {out.stderr.strip()[-300:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def label(version: str, free_threaded: bool) -> str:
    """``3.13.5t`` for a free-threaded build, ``3.11.7`` otherwise (the rows' ``interpreter`` column)."""
    return f"{version}t" if free_threaded else version


def skip_reason(job: Mapping[str, Any]) -> str | None:
    """Why this job cannot run on its interpreter (a package it needs is missing there), or None."""
    name = job.get("interpreter", DEFAULT)
    if not name or name == DEFAULT:
        return None
    info = describe(executable(name))
    backend = str(job["backend"]["name"])
    needs = [m for prefix, ms in BACKEND_NEEDS.items() if backend.startswith(prefix) for m in ms]
    needs += SCENARIO_NEEDS.get(str(job["scenario"]["name"]), ())
    missing = [m for m in dict.fromkeys(needs) if not info["has"].get(m, False)]
    if not missing:
        return None
    return (f"skipped: {', '.join(missing)} cannot be imported on interpreter={name} "
            f"(Python {label(info['version'], info['free_threaded'])}; no wheel for it there)")


def running() -> dict[str, Any]:
    """This process's interpreter as the rows record it: version label and whether the GIL is on now
    (a free-threaded interpreter turns it back on when an extension not declared safe is imported)."""
    import sysconfig

    ft = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))
    gil = getattr(sys, "_is_gil_enabled", lambda: True)()
    return {"interpreter": label(sys.version.split()[0], ft), "gil_enabled": bool(gil)}
