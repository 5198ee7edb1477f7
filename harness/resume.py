"""Resume: a job whose folder already holds all its ``ok`` rows, for the same configuration and code, is
not measured again.

A sweep that was interrupted (Ctrl-C, a dead node, a timeout) is continued by running the same command
again: Hydra gives every job the same folder, jobs that finished are reused, and the failed, partial and
missing ones run. A reused job gets a ``reused.json`` beside its rows, which the report counts. Results that
do not qualify (another config hash or git sha, missing repetitions, an error or timeout row) are renamed
``results.superseded-<time>.csv`` (and so on for the other files): kept on disk, never read by the report.
``resume=false`` (``make bench FRESH=1``) sets every earlier result aside the same way.
"""
from __future__ import annotations

import csv
import datetime as _dt
import json
from pathlib import Path
from typing import Any, Mapping

from harness.results import LATENCIES_FILE, RESULTS_FILE

REUSED_FILE = "reused.json"
#: files of one measurement (set aside together, so a re-run starts from an empty folder)
JOB_FILES = (RESULTS_FILE, LATENCIES_FILE, "memory.csv", "error.txt", REUSED_FILE)


def finished_rows(job_dir: Path, config_hash: str, git_sha: str, repetitions: int) -> int:
    """How many ``ok`` rows the folder holds for this job, or 0 unless they are all of them.

    All of them: one ``ok`` row for every repetition 0..repetitions-1, each with this config hash and git sha,
    and no failure row.
    """
    path = job_dir / RESULTS_FILE
    if not path.exists() or git_sha in ("", "-"):
        return 0
    try:
        with path.open(newline="") as fh:
            rows = list(csv.DictReader(fh))
    except (OSError, csv.Error, UnicodeDecodeError):
        return 0
    reps = set()
    for row in rows:
        try:
            meta = json.loads(row.get("metadata") or "{}")
        except json.JSONDecodeError:
            return 0
        if row.get("status") != "ok" or meta.get("config_hash") != config_hash or meta.get("git_sha") != git_sha:
            return 0
        reps.add(row.get("repetition"))
    return len(rows) if reps == {str(r) for r in range(repetitions)} and len(rows) == repetitions else 0


def mark_reused(job_dir: Path, rows: int) -> None:
    """Record that this job's rows were reused by a later run (the report lists them)."""
    path = job_dir / REUSED_FILE
    record: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {"rows": rows, "reused_at": []}
    record["rows"] = rows
    record["reused_at"].append(_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"))
    path.write_text(json.dumps(record, indent=1) + "\n")


def set_aside(job_dir: Path) -> list[Path]:
    """Rename the job's earlier result files to ``<stem>.superseded-<time><suffix>``; returns the new paths."""
    stamp = _dt.datetime.now().strftime("%Y%m%dT%H%M%S%f")
    moved = []
    for name in JOB_FILES:
        path = job_dir / name
        if path.exists():
            target = path.with_name(f"{path.stem}.superseded-{stamp}{path.suffix}")
            path.rename(target)
            moved.append(target)
    return moved


def decide(job_dir: Path, spec: Mapping[str, Any], resume: bool) -> int:
    """Rows reused (the job is skipped) or 0 (the job runs; earlier files were set aside)."""
    from harness.metadata import config_hash, machine_metadata

    if resume:
        rows = finished_rows(job_dir, config_hash(spec), machine_metadata()["git_sha"],
                             int(spec["budget"]["repetitions"]))
        if rows:
            mark_reused(job_dir, rows)
            return rows
    set_aside(job_dir)
    return 0
