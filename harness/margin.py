"""The margin of a paired job's verdicts: what identical residents differ by on this machine, for this workload.

A ratio is called faster or slower only where its interval clears 1 +- margin (`harness.report.intervals.verdict`).
The margin is a property of the machine and of the job's shape, not of the code: ``python -m harness selftest``
measures it (the larger of the 95th percentile, over its A/A jobs, of how far a job's interval of the ratio between
two identical residents lies beyond 1, `harness.selftest.clearance`, and what the offsets between sets of processes
leave in a job, `harness.set_offsets.set_margin`) for the workload and worker count its jobs ran (`workload_key`:
``gym workers=2``) and stores it in ``results/machine/<machine id>.json``, one entry per workload. A paired job uses
its own workload's entry unless ``compare.margin`` is given, and `DEFAULT_MARGIN` where this machine has none for it:
a margin measured on one workload is never used for another (a dqn block is one round, a gym block a few hundred, and
what identical residents differ by follows the block). Every row and ``compare.json`` record the margin used and its
source (``selftest <date> (gym workers=2)``, ``compare.margin`` or ``default: ...``), and a stored margin's parts:
its set part is for the sets of processes the self-test's jobs ran, and the report takes it to the sets each job ran
(`harness.report.job_margin.Margin.for_sets`). A stored margin also holds
only for the procedure it was measured with (`PROCEDURE`): a job that stops, or sizes, places or respawns its
blocks otherwise uses the default. Definitions: docs/harness.md, "Known answers".
"""
from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path
from typing import Any, Mapping, Optional

from harness.metadata import machine_metadata
from harness.report.job_margin import Margin, as_number

#: the margin of a paired job on a machine without a stored self-test and without ``compare.margin`` (the only
#: place it is written: `harness.compare`, `harness.selftest` and ``--help`` read it from here)
DEFAULT_MARGIN = 0.01
#: the rule the self-test measures the margin by (`harness.selftest.measured_margin`: the larger of the 95th
#: percentile of how far an A/A job's interval lies beyond 1, in the regimes the report reads the job in, and what
#: the offsets between sets of processes add to a job, `harness.set_offsets.set_margin`), recorded with a stored
#: margin; a margin stored by another rule is not read: an older version's 95th percentile of |A/A median - 1|
#: (which counts each job's own sampling noise again), ``clearance``, whose jobs were read per regime wherever the
#: host shifted (now only where the shift moved a ratio between contenders, `harness.report.paired.ratios_moved`),
#: or ``clearance, read regimes``, the percentile alone (on a host with quiet cycles but unequal sets, half of ten A/A
#: jobs lay beyond it: `harness.set_offsets.set_margin`)
MARGIN_RULE = "clearance or set offset, read regimes"
#: where ``python -m harness selftest`` stores each machine's measured margin (``<machine id>.json``) and paired
#: jobs read it; ``REACTORBENCH_MACHINE_DIR`` puts it elsewhere (tests)
MACHINE_DIR = Path(__file__).resolve().parents[1] / "results" / "machine"
#: the ``compare.*`` settings that make a paired job's procedure: its stop rule, how its blocks are sized, placed and
#: respawned, the interval's confidence. The self-test stores a margin only for jobs run as shipped (these at
#: `harness.cycles.CompareSettings`'s defaults), and a job uses a stored margin only where it runs the same
#: procedure: what identical residents' intervals lie beyond 1 by depends on the blocks (their spread grows with
#: the time between blocks: results/reference/vm-2core-2026-12-05-block-length/) and on how long the job runs (a
#: time-stopped 120-s job's interval is narrow enough to show offsets that one stopped at +-5% covers)
PROCEDURE = ("precision", "min_cycles", "block_s", "block_rounds", "confidence", "respawn_s", "respawn_share",
             "min_sets", "pin_single", "start_order")
#: what a `PROCEDURE` setting was before it existed, for records that predate it (the precision stop came from
#: the second set of processes on; every set was started in the listed order or its reverse)
BEFORE_IT_EXISTED = {"pin_single": False, "min_sets": 2, "start_order": "listed"}


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


def workload_key(scenario: str, workers: int) -> str:
    """The name of a workload's entry in a machine's file: scenario and worker count (``gym workers=2``)."""
    return f"{scenario} workers={int(workers)}"


def _stored(path: Path) -> dict[str, Any]:
    """A machine file's contents, or an empty one where it is missing or unreadable."""
    try:
        stored = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return stored if isinstance(stored, dict) else {}


def machine_margin(scenario: str, workers: int, meta: Optional[dict[str, Any]] = None) -> Optional[dict[str, Any]]:
    """This machine's stored self-test reading for one workload (``margin``, ``source``: ``selftest <date>``, ...),
    or None when the self-test never stored one for it here, stored it by another rule than `MARGIN_RULE`, or the
    file is unreadable (said by the caller's source ``default``). A file written before margins were stored per
    workload (a single top-level ``margin``) has no entries: none is read from it.

    Args:
        scenario: the workload's scenario name (``gym``).
        workers: the job's worker count.
        meta: the machine's metadata (`harness.metadata.machine_metadata`; None: this machine's).
    """
    return workload_margin(workload_key(scenario, workers), meta)


def _entry(key: str, meta: Optional[dict[str, Any]] = None) -> tuple[Optional[dict[str, Any]], Path]:
    """The machine file's entry for the workload ``key`` as stored (None: none), and the file."""
    path = machine_file(meta)
    margins = _stored(path).get("margins")
    entry = margins.get(key) if isinstance(margins, dict) else None
    return (entry if isinstance(entry, dict) else None), path


def workload_margin(key: str, meta: Optional[dict[str, Any]] = None) -> Optional[dict[str, Any]]:
    """`machine_margin` by the entry's name (`workload_key`)."""
    return _readable(*_entry(key, meta))


def _readable(entry: Optional[dict[str, Any]], path: Path) -> Optional[dict[str, Any]]:
    """A stored entry as `workload_margin` gives it, or None where it is missing, out of range or of another rule."""
    if entry is None:
        return None
    try:
        margin = float(entry["margin"])
    except (KeyError, TypeError, ValueError):
        return None
    if not (math.isfinite(margin) and 0 <= margin <= 0.5) or entry.get("rule") != MARGIN_RULE:
        return None
    return {**entry, "margin": margin, "file": str(path)}


def store_machine_margin(record: dict[str, Any], key: str, meta: Optional[dict[str, Any]] = None) -> Path:
    """Store ``record`` (``margin``, ``rule``, ``source``, ...) as this machine's margin for the workload ``key``
    (`workload_key`); the entries of other workloads stay. Returns the file written."""
    path = machine_file(meta)
    stored = _stored(path)
    margins = stored.get("margins") if isinstance(stored.get("margins"), dict) else {}
    margins[key] = record
    out = {"machine": record.get("machine", stored.get("machine")), "margins": margins}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=1, default=str) + "\n")
    return path


def differing_procedure(entry: Mapping[str, Any], settings: Mapping[str, Any]) -> list[str]:
    """The `PROCEDURE` settings a job's ``settings`` (``compare.*``) set otherwise than the self-test that stored
    ``entry`` ran with (its ``procedure``), as ``block_s 0.2 (this job 0.1)``; one saying so where the entry
    recorded no procedure (stored before it was kept)."""
    ran = entry.get("procedure")
    if not isinstance(ran, Mapping):
        return ["its procedure (not recorded)"]
    was = {k: ran.get(k, BEFORE_IT_EXISTED.get(k)) for k in PROCEDURE}
    return [f"{k} {was[k]} (this job {settings.get(k)})" for k in PROCEDURE if was[k] != settings.get(k)]


def resolve_margin(given: Optional[float], scenario: str, workers: int,
                   settings: Mapping[str, Any]) -> Margin:
    """The margin a paired job uses and where it came from: ``compare.margin`` when given; else this machine's
    self-test of the job's workload (``selftest <date> (gym workers=2)``) where it ran the job's procedure
    (`PROCEDURE`), with its parts (`harness.report.job_margin.Margin.for_sets` takes it to the sets the job runs);
    else `DEFAULT_MARGIN` (``default``, saying which workload has no self-test here, or which setting of the job
    differs from the self-test's).

    Args:
        given: ``compare.margin`` (None: not given).
        scenario: the job's scenario name.
        workers: the job's worker count.
        settings: the job's ``compare.*`` settings (`harness.cycles.CompareSettings`, as a mapping).
    """
    if given is not None:
        return Margin(float(given), "compare.margin")
    key = workload_key(scenario, workers)
    entry, path = _entry(key)
    stored = _readable(entry, path)
    if stored is None:
        if entry is not None and entry.get("rule") != MARGIN_RULE:
            return Margin(DEFAULT_MARGIN, f"default: the self-test of {key} on this machine stored its margin by an "
                                          f"older rule ({entry.get('rule') or 'none recorded'}); make selftest "
                                          "measures it again")
        return Margin(DEFAULT_MARGIN, f"default: no self-test of {key} on this machine")
    differ = differing_procedure(stored, settings)
    if differ:
        return Margin(DEFAULT_MARGIN, f"default: the self-test of {key} on this machine ran another procedure: "
                                      f"{', '.join(differ)}")
    return Margin(stored["margin"], f"{stored.get('source') or 'selftest'} ({key})",
                  as_number(stored, "clearance_part"), as_number(stored, "set_part"), as_number(stored, "sets_per_job"))
