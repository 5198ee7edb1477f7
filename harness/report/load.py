"""Reading result files: every ``results.csv`` under the given paths, with the ``latencies.csv`` beside it,
and every archived run's ``results.jsonl.gz`` (`harness.archive`).

The report reads only result files (docs/design.md, "Layers and import rules"): nothing here imports a
backend or a scenario. Columns are taken from the results contract (`harness.results.COLUMNS`); the
JSON columns are decoded once, and each row gets the keys the statistics group on: its backend label, its
configuration key, its machine and software.
"""
from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import numpy as np
import pandas as pd

from harness.archive import ARCHIVE_FILE, latency_summary, read_archive, record_rows
from harness.resume import REUSED_FILE
from harness.labels import label_of
from harness.results import COLUMNS, LATENCIES_FILE, RESULTS_FILE

#: columns that define one configuration: backends are compared only within one
CONFIG_COLUMNS: tuple[str, ...] = ("scenario", "params", "env_id", "num_envs", "workers", "budget", "seed")
NUMERIC = ("workers", "num_envs", "seed", "repetition", "units", "seconds", "throughput", "latency_p50_ms",
           "latency_p99_ms", "startup_seconds", "latency_mean_ms", "rounds", "round_work_ms", "threads_per_worker",
           "peak_rss_mb", "peak_shm_mb", "cycle", "block", "copy")
#: metadata fields that identify the machine, and those that identify the software
MACHINE_KEYS = ("hostname", "cpu_model", "cpu_count", "ram_gb", "os")
SOFTWARE_KEYS = ("python", "versions", "git_sha")


#: the latency summary's columns: per job, ``kind`` ``quantile`` (x: probability, value: ms) or ``wall``
#: (x: rounds done, value: cumulative seconds, median over repetitions); `harness.archive.latency_summary`
LATENCY_COLUMNS = ("job", "kind", "x", "value")


@dataclass
class ResultSet:
    """All rows (one per repetition or failure) and a summary of their per-round latencies
    (`LATENCY_COLUMNS`: what the figures draw, the same whether read from ``latencies.csv`` or an archive)."""

    rows: pd.DataFrame
    latencies: pd.DataFrame
    files: list[Path] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> pd.DataFrame:
        return self.rows[self.rows["status"] == "ok"]


#: folders a walk does not enter: the report's own output, and the reference runs below the folder given
#: (``results/``): a reference run is read by naming it, never pooled with the sweeps around it
SKIPPED_FOLDERS = ("report", "reference")


def find_result_files(paths: Iterable[Path | str]) -> list[Path]:
    """Every ``results.csv`` and ``results.jsonl.gz`` under ``paths`` (files or folders), skipping
    `SKIPPED_FOLDERS` below each path."""
    found: set[Path] = set()
    names = (RESULTS_FILE, ARCHIVE_FILE)
    for p in map(Path, paths):
        if p.is_file() and p.name in names:
            found.add(p.resolve())
        elif p.is_dir():
            found.update(f.resolve() for name in names for f in p.rglob(name)
                         if not set(SKIPPED_FOLDERS) & set(f.relative_to(p).parts[:-1]))
    return sorted(found)


def _json(text: Any) -> dict[str, Any]:
    if not isinstance(text, str) or not text.strip():
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def canonical_json(value: dict[str, Any]) -> str:
    """A dict as sorted, compact JSON: equal parameters give equal strings whatever their order in the file."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def backend_label(backend: Any, variant: Any, copy: Any = 1, extra_work: Any = 0.0) -> str:
    """``backend:variant`` (``serial:-``, ``reactor:processes``, ``ray:actors``), ``#2`` for an A/A job's second
    copy, `` +2%`` for a resident with injected extra work (`harness.labels.BackendLabel`)."""
    return label_of(backend, variant, copy, extra_work)


def _summary_frame(job: str, summary: dict[str, Any] | None) -> pd.DataFrame:
    if not summary or not summary.get("q"):
        return pd.DataFrame(columns=list(LATENCY_COLUMNS))
    q = summary["q"]
    return pd.DataFrame({"job": job, "kind": ["quantile"] * len(q) + ["wall"] * len(summary["wall_s"]),
                         "x": [*np.linspace(0, 1, len(q)), *summary["wall_round"]],
                         "value": [*q, *summary["wall_s"]]})


def _read_one(path: Path, job: str) -> tuple[list[dict[str, Any]], pd.DataFrame]:
    # the csv module: small files, read as strings (the columns are typed once, for all files, in `prepare`)
    reused = (path.parent / REUSED_FILE).exists()  # harness.resume: rows kept from an earlier run
    with path.open(newline="") as fh:
        records = [{**r, "job": job, "source": str(path), "reused": reused} for r in csv.DictReader(fh)]
    lat_path = path.parent / LATENCIES_FILE
    summary = None
    if lat_path.exists():
        with lat_path.open(newline="") as fh:
            reader = csv.reader(fh)
            next(reader, None)
            summary = latency_summary(np.array([r for r in reader if len(r) == 3], dtype=float).reshape(-1, 3))
    return records, _summary_frame(job, summary)


def _read_archive(path: Path, first: int) -> list[tuple[str, list[dict[str, Any]], pd.DataFrame]]:
    """One (job, rows, latency summary) per archived job; a job whose folder holds its own results.csv
    (measured again in the archived run) is left to that folder."""
    out = []
    for rec in read_archive(path):
        folder = path.parent / rec["job"]
        if (folder / RESULTS_FILE).exists():
            continue
        job = f"{first + len(out):05d}:{folder.name}"
        reused = bool(rec.get("reused")) or (folder / REUSED_FILE).exists()
        source = str(folder / RESULTS_FILE)  # where the job's rows were, in the run as measured
        rows = [{**r, "job": job, "source": source, "reused": reused} for r in record_rows(rec)]
        out.append((job, rows, _summary_frame(job, rec.get("latency"))))
    return out


def load_results(paths: Iterable[Path | str]) -> ResultSet:
    """Read every results file under ``paths`` into one tidy table (never raises on a bad file: it says so)."""
    files = find_result_files(paths)
    records: list[dict[str, Any]] = []
    lats, problems = [], []
    count = 0
    for path in files:
        try:
            if path.name == ARCHIVE_FILE:
                jobs = _read_archive(path, count)
            else:
                job = f"{count:05d}:{path.parent.name}"
                jobs = [(job, *_read_one(path, job))]
        except (OSError, csv.Error, ValueError, UnicodeDecodeError, EOFError, KeyError, IndexError) as exc:
            problems.append(f"could not read {path}: {exc}")
            continue
        for _, recs, lat in jobs:
            count += 1
            records += recs
            if len(lat):
                lats.append(lat)
    columns = list(dict.fromkeys([*COLUMNS, "job", "source", "reused", *(k for r in records[:1] for k in r)]))
    rows = pd.DataFrame.from_records(records, columns=columns).fillna("")
    latencies = (pd.concat(lats, ignore_index=True) if lats else
                 pd.DataFrame({"job": pd.Series(dtype=str), "kind": pd.Series(dtype=str),
                               "x": pd.Series(dtype=float), "value": pd.Series(dtype=float)}))
    return ResultSet(rows=prepare(rows), latencies=latencies, files=files, problems=problems)


def prepare(rows: pd.DataFrame) -> pd.DataFrame:
    """Types, decoded JSON and grouping keys for raw rows (strings as read from CSV)."""
    rows = rows.copy()
    rows["reused"] = rows["reused"].map(lambda v: v is True or str(v) == "True") if "reused" in rows else False
    for col in NUMERIC:
        rows[col] = pd.to_numeric(rows[col].replace("", np.nan), errors="coerce")
    for col in ("scenario", "backend", "variant", "env_id", "budget", "unit", "checksum", "status", "error"):
        rows[col] = rows[col].fillna("").astype(str)
    rows["env_id"] = rows["env_id"].replace("", "-")
    meta = [_json(m) for m in rows["metadata"]]
    params = [_json(p) for p in rows["params"]]
    rows["meta"] = meta
    rows["params_dict"] = params
    rows["extra_dict"] = [_json(e) for e in rows["extra"]]
    rows["params"] = [canonical_json(p) for p in params]
    # a resident with injected work (``compare.extra_work``, recorded in its extra) is its own label: never
    # pooled with, nor read as, the backend it copies
    rows["label"] = [backend_label(b, v, c, e.get("extra_work", 0.0))
                     for b, v, c, e in zip(rows["backend"], rows["variant"], rows["copy"], rows["extra_dict"])]
    rows["hostname"] = [str(m.get("hostname", "?")) for m in meta]
    rows["cpu_count"] = [m.get("cpu_count") for m in meta]
    rows["machine"] = [canonical_json({k: m.get(k) for k in MACHINE_KEYS}) for m in meta]
    rows["software"] = [canonical_json({k: m.get(k) for k in SOFTWARE_KEYS}) for m in meta]
    rows["config"] = [config_key(r) for r in rows[list(CONFIG_COLUMNS)].itertuples(index=False)]
    rows["hardware"] = [hardware_label(m) for m in meta]
    if rows["hardware"].nunique() > 1:  # results of several kinds of machine: compare only within one kind
        rows["config"] = rows["config"] + " @ " + rows["hardware"]
    return rows


def hardware_label(meta: dict[str, Any]) -> str:
    """A kind of machine: cores, CPU model, RAM and OS (nodes of one cluster partition share one label)."""
    return (f"{meta.get('cpu_count', '?')}x {meta.get('cpu_model', '?')}, {meta.get('ram_gb', '?')} GB, "
            f"{meta.get('os', '?')}")


def config_key(values: Any) -> str:
    """One configuration's identity as a readable string (scenario first, then the knobs)."""
    d = dict(zip(CONFIG_COLUMNS, values))
    num_envs = d["num_envs"]
    ne = "-" if num_envs is None or (isinstance(num_envs, float) and np.isnan(num_envs)) else int(num_envs)
    workers = d["workers"]
    w = "-" if workers is None or (isinstance(workers, float) and np.isnan(workers)) else int(workers)
    seed = d["seed"]
    s = "-" if seed is None or (isinstance(seed, float) and np.isnan(seed)) else int(seed)
    return f"{d['scenario']} {d['env_id']} n={ne} w={w} {d['budget']} seed={s} {d['params']}"


def row_trials(rows: pd.DataFrame) -> pd.Series:
    """Each row's trial (``metadata.trial``; 0 when absent), indexed like ``rows``."""
    return pd.Series([int((m or {}).get("trial", 0) or 0) for m in rows["meta"]], index=rows.index, dtype=int)


def latest_runs(rows: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """Keep, for each (configuration, backend label, trial), only the rows of its most recent job (by
    ``started_at``).

    Re-running a configuration appends a new job folder; pooling repetitions measured hours apart would mix
    machine states, so the report uses the latest run and says how many older ones it set aside. Trials
    (``trial=0,1,...`` in one sweep, recorded in the metadata) are deliberate repeats interleaved with the
    other backends: each trial's latest run is kept, and the trials are pooled.
    """
    if not len(rows):
        return rows, 0
    started = pd.Series([str(m.get("started_at", "")) for m in rows["meta"]], index=rows.index)
    trial = row_trials(rows)
    jobs = pd.DataFrame({"config": rows["config"], "label": rows["label"], "job": rows["job"], "started": started,
                         "trial": trial})
    per_job = jobs.groupby(["config", "label", "trial", "job"], sort=False)["started"].max().reset_index()
    per_job = per_job.sort_values(["started", "job"])
    keep = set(per_job.groupby(["config", "label", "trial"]).tail(1)["job"])
    dropped = per_job["job"].nunique() - len(keep)
    return rows[rows["job"].isin(keep)].reset_index(drop=True), int(dropped)
