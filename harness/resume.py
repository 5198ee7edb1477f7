"""Resume: a job whose folder already holds all its ``ok`` rows, for the same configuration and code, is
not measured again.

A sweep that was interrupted (Ctrl-C, a dead node, a timeout) is continued by running the same command
again: Hydra gives every job the same folder, jobs that finished are reused, and the failed, partial and
missing ones run. A reused job gets a ``reused.json`` beside its rows, which the report counts. Results that
do not qualify (another config hash or git sha, missing repetitions, an error or timeout row) are renamed
``results.superseded-<time>.csv`` (and so on for the other files): kept on disk, never read by the report.
``resume=false`` (``make bench FRESH=1``) sets every earlier result aside the same way.

Code, not only the commit: rows measured on a tree with uncommitted changes (``git_dirty`` in their
metadata), or a tree that has them now, are not reused, since the sha does not say which code ran.
``resume=dirty-ok`` reuses them anyway (for a sweep continued while editing docs, say); ``reused.json``
records that it did and the report says so.

Inside an archived run (`harness.archive`), a job without its own ``results.csv`` is judged by its archived
record the same way; when it qualifies, only ``reused.json`` is written into its folder.
"""
from __future__ import annotations

import csv
import datetime as _dt
import json
from pathlib import Path
from typing import Any, Mapping, Optional

from harness.archive import REUSED_FILE, find_archived_job, record_rows
from harness.results import LATENCIES_FILE, RESULTS_FILE

#: files of one measurement (set aside together, so a re-run starts from an empty folder)
JOB_FILES = (RESULTS_FILE, LATENCIES_FILE, "memory.csv", "error.txt", REUSED_FILE)
#: files of one paired job (``python -m harness compare``, `harness.cycles`): its rows, its summary, its error
#: (a paired job is never reused: a rerun into its folder sets these aside, so two runs are never appended)
PAIRED_JOB_FILES = (RESULTS_FILE, LATENCIES_FILE, "memory.csv", "error.txt", "compare.json")
#: the values of ``resume``: reuse finished jobs of a clean tree, never reuse, reuse even from a dirty tree
RESUME_MODES = ("true", "false", "dirty-ok")


def resume_mode(value: Any) -> str:
    """``resume``'s value as one of `RESUME_MODES` (booleans as Hydra parses ``true`` / ``false``)."""
    text = str(value).strip().lower()
    if text not in RESUME_MODES:
        raise ValueError(f"resume={value}: must be one of {', '.join(RESUME_MODES)}")
    return text


def resume_errors(cfg: Mapping[str, Any]) -> list[str]:
    """``resume=<value>: why`` when the value is not a resume mode (checked before anything runs)."""
    try:
        resume_mode(cfg.get("resume", True))
    except ValueError as exc:
        return [str(exc)]
    return []


def _rows(job_dir: Path) -> Optional[list[dict[str, str]]]:
    """The job's rows: its own ``results.csv``, else its record in an archived run, else None."""
    path = job_dir / RESULTS_FILE
    if path.exists():
        try:
            with path.open(newline="") as fh:
                return list(csv.DictReader(fh))
        except (OSError, csv.Error, UnicodeDecodeError):
            return None
    found = find_archived_job(job_dir)
    return record_rows(found[1]) if found else None


def finished_rows(job_dir: Path, config_hash: str, git_sha: str, repetitions: int, tree_dirty: bool = False,
                  dirty_ok: bool = False) -> int:
    """How many ``ok`` rows the folder (or its archived record) holds for this job, or 0 unless they are all
    of them.

    All of them: one ``ok`` row for every repetition 0..repetitions-1, each with this config hash and git sha,
    and no failure row. Unless ``dirty_ok``, none measured on a dirty tree and the tree clean now
    (``tree_dirty`` False).
    """
    if git_sha in ("", "-") or (tree_dirty and not dirty_ok):
        return 0
    rows = _rows(job_dir)
    if not rows:
        return 0
    reps = set()
    for row in rows:
        try:
            meta = json.loads(row.get("metadata") or "{}")
        except json.JSONDecodeError:
            return 0
        if row.get("status") != "ok" or meta.get("config_hash") != config_hash or meta.get("git_sha") != git_sha:
            return 0
        if meta.get("git_dirty") and not dirty_ok:
            return 0
        reps.add(row.get("repetition"))
    return len(rows) if reps == {str(r) for r in range(repetitions)} and len(rows) == repetitions else 0


def mark_reused(job_dir: Path, rows: int, dirty_ok: bool = False) -> None:
    """Record that this job's rows were reused by a later run (the report lists them), and whether
    ``resume=dirty-ok`` allowed it."""
    job_dir.mkdir(parents=True, exist_ok=True)
    path = job_dir / REUSED_FILE
    record: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {"rows": rows, "reused_at": []}
    record["rows"] = rows
    record["reused_at"].append(_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"))
    if dirty_ok:
        record["dirty_ok"] = True
    path.write_text(json.dumps(record, indent=1) + "\n")


def set_aside(job_dir: Path, names: tuple[str, ...] = JOB_FILES) -> list[Path]:
    """Rename the job's earlier result files (``names``) to ``<stem>.superseded-<time><suffix>``; returns the new
    paths."""
    stamp = _dt.datetime.now().strftime("%Y%m%dT%H%M%S%f")
    moved = []
    for name in names:
        path = job_dir / name
        if path.exists():
            target = path.with_name(f"{path.stem}.superseded-{stamp}{path.suffix}")
            path.rename(target)
            moved.append(target)
    return moved


def decide(job_dir: Path, spec: Mapping[str, Any], resume: Any) -> int:
    """Rows reused (the job is skipped) or 0 (the job runs; earlier files were set aside). ``resume``: one of
    `RESUME_MODES` (or a bool)."""
    from harness.metadata import config_hash, machine_metadata

    mode = resume_mode(resume)
    if mode != "false":
        machine = machine_metadata()
        rows = finished_rows(job_dir, config_hash(spec), machine["git_sha"], int(spec["budget"]["repetitions"]),
                             tree_dirty=bool(machine.get("git_dirty")), dirty_ok=mode == "dirty-ok")
        if rows:
            mark_reused(job_dir, rows, dirty_ok=mode == "dirty-ok")
            return rows
    set_aside(job_dir)
    return 0
