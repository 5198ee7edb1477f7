"""The compact form of a finished run, as kept in ``results/reference/``: one ``results.jsonl.gz`` per run.

``python -m harness.archive RUN DEST`` reads every job folder under RUN (a sweep as `harness` wrote it) and
writes into DEST:

- ``results.jsonl.gz``: one JSON line per job: its folder relative to RUN, its Hydra overrides, its
  metadata once (a row's own metadata only where it differs), every row with the other columns exactly as
  in ``results.csv``, a summary of its per-round latencies (`latency_summary`) and its own small JSON files
  (a paired job's ``compare.json``); a first line names the format;
- ``report/``: the report of exactly these rows (`harness.report.build_report`, figures as linked PNG);
- ``README.md``: a template to complete (machine, commit, command, duration, what it shows), unless one is
  there.

What is left out: the raw latencies (the summary keeps what the report draws: the distribution of every
round and the cumulative wall time), ``memory.csv`` (each row keeps its peaks), Hydra's ``config.yaml`` and
``hydra.yaml`` (each row's ``params``, the metadata's ``config_hash`` and the job's overrides identify its
configuration) and empty logs.

The report (`harness.report.load`) and resume (`harness.resume`) read this form as they read job folders.
Inside an archived run, a job folder that holds its own ``results.csv`` takes the place of the job's
archived record (a job measured again), and a folder holding only ``reused.json`` marks the record reused.
"""
from __future__ import annotations

import argparse
import csv
import gzip
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator, Optional

import numpy as np

from harness.results import LATENCIES_FILE, RESULTS_FILE

ARCHIVE_FILE = "results.jsonl.gz"
FORMAT = "reactorbench-archive"
VERSION = 1
#: beside a job's rows when resume reused them (`harness.resume`)
REUSED_FILE = "reused.json"
#: points of the latency distribution kept per job (quantiles 0, 0.5%, ..., 100% of every timed round)
QUANTILES = 201
#: points of the cumulative wall-time curve kept per job (the median over repetitions)
WALL_POINTS = 60


def _sig(x: float, digits: int = 5) -> float:
    return float(f"{x:.{digits}g}")


def latency_summary(values: np.ndarray) -> dict[str, Any]:
    """What the report draws from a job's ``latencies.csv`` (rows: repetition, round, latency_ms).

    ``q``: `QUANTILES` evenly spaced quantiles (ms) of every round of every repetition (the distribution
    figure); ``wall_round`` / ``wall_s``: the cumulative wall time (s) after those rounds, the median over
    repetitions of each repetition's running sum (the wall-time figure), at most `WALL_POINTS` points,
    always with the last round.
    """
    values = np.asarray(values, dtype=float).reshape(-1, 3)
    lat = values[:, 2]
    lat = lat[np.isfinite(lat)]
    if not lat.size:
        return {"rounds": 0, "q": [], "wall_round": [], "wall_s": []}
    q = np.quantile(lat, np.linspace(0, 1, QUANTILES))
    curves = []
    for rep in np.unique(values[:, 0]):
        r = values[values[:, 0] == rep]
        curves.append(np.cumsum(r[np.argsort(r[:, 1], kind="stable"), 2]) / 1e3)
    n = min(len(c) for c in curves)
    med = np.median(np.vstack([c[:n] for c in curves]), axis=0)
    idx = np.unique(np.linspace(0, n - 1, min(n, WALL_POINTS)).round().astype(int))
    return {"rounds": int(lat.size), "q": [_sig(v) for v in q], "wall_round": [int(i) + 1 for i in idx],
            "wall_s": [_sig(v) for v in med[idx]]}


def _read_latencies(path: Path) -> Optional[np.ndarray]:
    if not path.exists():
        return None
    with path.open(newline="") as fh:
        reader = csv.reader(fh)
        next(reader, None)
        return np.array([r for r in reader if len(r) == 3], dtype=float).reshape(-1, 3)


def _overrides(job_dir: Path) -> list[str]:
    path = job_dir / ".hydra" / "overrides.yaml"
    if not path.exists():
        return []
    return [line[2:].strip() for line in path.read_text().splitlines() if line.startswith("- ")]


def job_record(job_dir: Path, root: Path) -> dict[str, Any]:
    """One job folder as one archive record (see the module docstring)."""
    with (job_dir / RESULTS_FILE).open(newline="") as fh:
        reader = csv.DictReader(fh)
        columns = [c for c in (reader.fieldnames or []) if c != "metadata"]
        raw = list(reader)
    metas = [r.get("metadata") or "{}" for r in raw]
    common = max(set(metas), key=metas.count) if metas else "{}"
    rows = []
    for r, m in zip(raw, metas):
        row = [r.get(c) or "" for c in columns]
        rows.append(row if m == common else [*row, json.loads(m)])  # a row's own metadata, where it differs
    lat = _read_latencies(job_dir / LATENCIES_FILE)
    return {"job": job_dir.relative_to(root).as_posix(), "overrides": _overrides(job_dir),
            "reused": (job_dir / REUSED_FILE).exists(), "metadata": json.loads(common), "columns": columns,
            "rows": rows, "latency": latency_summary(lat) if lat is not None and lat.size else None,
            "files": _json_files(job_dir)}


def _json_files(job_dir: Path) -> dict[str, Any]:
    """The job's own small JSON files (a paired job's ``compare.json``: why it stopped), by name."""
    out: dict[str, Any] = {}
    for path in sorted(job_dir.glob("*.json")):
        if path.name != REUSED_FILE and path.stat().st_size <= 100_000:
            try:
                out[path.name] = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
    return out


def record_rows(record: dict[str, Any]) -> list[dict[str, str]]:
    """A record's rows as ``results.csv`` would give them (strings, metadata as JSON text)."""
    columns, common = record["columns"], json.dumps(record["metadata"])
    out = []
    for row in record["rows"]:
        meta = json.dumps(row[len(columns)]) if len(row) > len(columns) else common
        out.append({**dict(zip(columns, row[:len(columns)])), "metadata": meta})
    return out


def job_folders(run: Path) -> list[Path]:
    """Every job folder under ``run`` (a folder with a ``results.csv``), skipping report output."""
    return sorted(p.parent for p in run.rglob(RESULTS_FILE)
                  if "report" not in p.relative_to(run).parts[:-1])


def write_archive(run: Path, dest: Path) -> Path:
    """Every job under ``run`` into ``dest/results.jsonl.gz``; returns its path."""
    dest.mkdir(parents=True, exist_ok=True)
    path = dest / ARCHIVE_FILE
    # mtime 0 and no name in the gzip header: the same rows give the same bytes
    with path.open("wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=9,
                                               mtime=0) as gz, io.TextIOWrapper(gz, encoding="utf-8") as fh:
        fh.write(json.dumps({"format": FORMAT, "version": VERSION}) + "\n")
        for job in job_folders(run):
            fh.write(json.dumps(job_record(job, run), separators=(",", ":")) + "\n")
    return path


def read_archive(path: Path) -> Iterator[dict[str, Any]]:
    """The job records of an archive, in order; refuses a file of another format."""
    with gzip.open(path, "rt") as fh:
        head = json.loads(fh.readline() or "{}")
        if head.get("format") != FORMAT or head.get("version") != VERSION:
            raise ValueError(f"{path}: not a {FORMAT} file of version {VERSION} (first line: {head})")
        for line in fh:
            if line.strip():
                yield json.loads(line)


def find_archived_job(job_dir: Path) -> Optional[tuple[Path, dict[str, Any]]]:
    """The archive record of ``job_dir`` when it lies inside an archived run: the nearest folder above it
    with a ``results.jsonl.gz`` that lists the job's relative path."""
    job_dir = job_dir.resolve()
    for root in job_dir.parents:
        path = root / ARCHIVE_FILE
        if path.exists():
            rel = job_dir.relative_to(root).as_posix()
            try:
                return next(((path, r) for r in read_archive(path) if r["job"] == rel), None)
            except (OSError, ValueError, EOFError, json.JSONDecodeError):
                return None
    return None


README_TEMPLATE = """# {name}

Machine: (host class, CPU model, cores, RAM, OS, Python, package versions: see report/report.md).
Commit: {commits}. Command: (the make target or `python -m harness ...` line).
Duration: {duration}.

What it shows: (the question this run answers, and what it does not settle).

Files: `results.jsonl.gz` (every row, `python -m harness.archive`), `report/` (`python -m harness.report .`).
"""


def _readme(dest: Path, records: list[dict[str, Any]]) -> str:
    shas = sorted({str(r["metadata"].get("git_sha", "?"))[:10] for r in records})
    started = sorted(str(r["metadata"].get("started_at", "")) for r in records if r["metadata"].get("started_at"))
    duration = f"jobs started from {started[0]} to {started[-1]}" if started else "unknown"
    return README_TEMPLATE.format(name=dest.name, commits=", ".join(shas) or "?", duration=duration)


def compact_run(run: Path, dest: Path, figures: bool = True) -> Path:
    """The whole compact form of ``run`` in ``dest`` (archive, report, README template); returns the archive.

    The report is made by its own command in a child process: the report reads this module's file format, so
    this module never imports the report (docs/design.md, "Layers and import rules")."""
    run, dest = Path(run), Path(dest)
    if dest.resolve() == run.resolve() or run.resolve() in dest.resolve().parents:
        raise ValueError(f"{dest}: write the compact form outside the run it is made from")
    if dest.exists() and ((dest / ARCHIVE_FILE).exists() or job_folders(dest)):
        raise ValueError(f"{dest} already holds results")
    if not job_folders(run):
        raise ValueError(f"{run}: no job folder (no results.csv) to archive")
    path = write_archive(run, dest)
    report = dest / "report"
    if report.exists():
        shutil.rmtree(report)
    # an archive: figures linked, not embedded
    command = [sys.executable, "-m", "harness.report", str(dest), "--out", str(report), "--link-figures"]
    subprocess.run(command + ([] if figures else ["--no-figures"]), check=True, stdout=subprocess.DEVNULL)
    if not (dest / "README.md").exists():
        (dest / "README.md").write_text(_readme(dest, list(read_archive(path))))
    return path


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.archive", description=__doc__.split("\n\n")[0])
    parser.add_argument("run", type=Path, help="a finished run: folders of jobs with results.csv")
    parser.add_argument("dest", type=Path, help="the new compact run folder (e.g. results/reference/<name>)")
    parser.add_argument("--no-figures", action="store_true", help="tables only (faster)")
    args = parser.parse_args(argv)
    try:
        path = compact_run(args.run, args.dest, figures=not args.no_figures)
    except ValueError as exc:
        print(f"harness.archive: {exc}", file=sys.stderr)
        return 2
    jobs = sum(1 for _ in read_archive(path))
    print(f"{jobs} jobs -> {path} ({path.stat().st_size / 1e6:.2f} MB); report in {args.dest / 'report'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
