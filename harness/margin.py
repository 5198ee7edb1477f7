"""The margin of a paired job's verdicts: what identical residents differ by on this machine.

A ratio is called faster or slower only where its interval clears 1 +- margin (`harness.report.intervals.verdict`).
The margin is a property of the machine, not of the code: ``python -m harness selftest`` measures it (the 95th
percentile, over its A/A jobs, of how far a job's interval of the ratio between two identical residents lies beyond
1: `harness.selftest.clearance`) and
stores it in ``results/machine/<machine id>.json``; a paired job uses it unless ``compare.margin`` is given, and
`DEFAULT_MARGIN` where this machine has none. Every row and ``compare.json`` record the margin used and its source
(``selftest <date>``, ``compare.margin`` or ``default``). Definitions: docs/harness.md, "Known answers".
"""
from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path
from typing import Any, Optional

from harness.metadata import machine_metadata

#: the margin of a paired job on a machine without a stored self-test and without ``compare.margin`` (the only
#: place it is written: `harness.compare`, `harness.selftest` and ``--help`` read it from here)
DEFAULT_MARGIN = 0.01
#: the rule the self-test measures the margin by (`harness.selftest.measured_margin`: the 95th percentile of how far
#: an A/A job's interval lies beyond 1), recorded with a stored margin; a margin stored by another rule (an older
#: version's 95th percentile of |A/A median - 1|, which counts each job's own sampling noise again) is not read
MARGIN_RULE = "clearance"
#: where ``python -m harness selftest`` stores each machine's measured margin (``<machine id>.json``) and paired
#: jobs read it; ``REACTORBENCH_MACHINE_DIR`` puts it elsewhere (tests)
MACHINE_DIR = Path(__file__).resolve().parents[1] / "results" / "machine"


def machine_dir() -> Path:
    return Path(os.environ.get("REACTORBENCH_MACHINE_DIR") or MACHINE_DIR)


def machine_id(meta: Optional[dict[str, Any]] = None) -> str:
    """This machine's identity as a file name: host name, CPU model and core count (`harness.metadata`), e.g.
    ``devbox-amd-epyc-7b13-2cpu``. A margin measured on one machine is never read on another."""
    meta = meta if meta is not None else machine_metadata()
    text = f"{meta.get('hostname', '?')} {meta.get('cpu_model', '?')} {meta.get('cpu_count', '?')}cpu"
    return re.sub(r"[^a-z0-9.]+", "-", text.lower()).strip("-")


def machine_file(meta: Optional[dict[str, Any]] = None) -> Path:
    return machine_dir() / f"{machine_id(meta)}.json"


def machine_margin(meta: Optional[dict[str, Any]] = None) -> Optional[dict[str, Any]]:
    """This machine's stored self-test reading (``margin``, ``source``: ``selftest <date>``, ...), or None when
    the self-test never stored one here, stored it by another rule than `MARGIN_RULE`, or the file is unreadable
    (said by the caller's source ``default``)."""
    path = machine_file(meta)
    try:
        stored = json.loads(path.read_text())
        margin = float(stored["margin"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not (math.isfinite(margin) and 0 <= margin <= 0.5) or stored.get("rule") != MARGIN_RULE:
        return None
    return {**stored, "margin": margin, "file": str(path)}


def resolve_margin(given: Optional[float]) -> tuple[float, str]:
    """The margin a paired job uses and where it came from: ``compare.margin`` when given; else this machine's
    self-test (``selftest <date>``); else `DEFAULT_MARGIN` (``default``)."""
    if given is not None:
        return float(given), "compare.margin"
    stored = machine_margin()
    if stored is not None:
        return stored["margin"], str(stored.get("source") or "selftest")
    return DEFAULT_MARGIN, "default"
