"""The report's "Free-threaded Python" section: jobs measured under a free-threaded interpreter
(``interpreter=ft``, `harness.interpreter`) beside the default one.

Why a section of its own: the main tables compare every backend with serial on the default interpreter;
here each executor is compared with serial *on the same interpreter* (does parallelism pay there?), and
serial ft with serial default gives the interpreter's own single-thread cost. Rows tell the interpreters
apart by their variant (``reactor:threads ft``) and their ``interpreter`` column; ``gil_enabled`` shows a
job whose imports turned the GIL back on. Skipped jobs (a package without a cp313t wheel) are listed with
their reason. Paired jobs that hold both interpreters (``backends=[serial@ft,...]``) get a table of their own,
read from per-cycle ratios like every paired job (`harness.report.paired`).
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from harness.labels import BackendLabel
from harness.report.intervals import median_interval, verdict as rule, word_phrase
from harness.report.paired import PairedJob, cycle_ratios
from harness.report.stats import SERIAL

from harness.report.fmt import Table, num
from harness.report.model import Section


def _is_ft(row: pd.Series) -> bool:
    return str(row.get("interpreter", "") or "").endswith("t")


def _base_label(label: str) -> str:
    """``reactor:threads ft`` -> ``reactor:threads``; ``serial:ft`` -> ``serial:-`` (the same backend on the
    default interpreter)."""
    return BackendLabel.parse(label).on_default_interpreter().render()


def ft_table(rows: pd.DataFrame) -> Table:
    """Per scenario, configuration and workers: each backend's median throughput on both interpreters,
    its ratio to serial on the same interpreter, and serial ft / serial default."""
    ok = rows[rows["status"] == "ok"].copy()
    if not len(ok) or "interpreter" not in ok:
        return Table([], [])
    ok["ft"] = [_is_ft(r) for _, r in ok.iterrows()]
    if not ok["ft"].any():
        return Table([], [])
    ok["base"] = [_base_label(lbl) if ft else lbl for lbl, ft in zip(ok["label"], ok["ft"])]
    header = ["scenario", "workers", "configuration", "backend", "default /s", "ft /s", "default / serial",
              "ft / serial ft", "ft / default", "GIL on at end (ft)"]
    out: list[list[str]] = []
    for (scen, config), g in ok.groupby(["scenario", "config"], sort=True):
        if not g["ft"].any():
            continue
        med = g.groupby(["base", "ft"])["throughput"].median()
        s_def = med.get(("serial:-", False))
        s_ft = med.get(("serial:-", True))
        workers = num(g["workers"].iloc[0])
        for base in sorted(set(g["base"])):
            d, f = med.get((base, False)), med.get((base, True))
            gil = g[(g["base"] == base) & g["ft"]]["gil_enabled"].astype(str)
            out.append([
                scen, workers, str(config)[:60], base,
                "" if d is None else f"{d:,.0f}", "" if f is None else f"{f:,.0f}",
                "" if d is None or not s_def else f"{d / s_def:.2f}",
                "" if f is None or not s_ft else f"{f / s_ft:.2f}",
                "" if d is None or f is None else f"{f / d:.2f}",
                ", ".join(sorted(set(gil))) if len(gil) else "",
            ])
    return Table(header, out)


def scaling_lines(rows: pd.DataFrame) -> list[str]:
    """reactor:threads ft at each worker count against its own workers=1 (real parallelism or not)."""
    ok = rows[(rows["status"] == "ok") & (rows["label"] == "reactor:threads ft")]
    out = []
    for scen, g in ok.groupby("scenario", sort=True):
        med = g.groupby("workers")["throughput"].median()
        if 1 in med.index:
            out += [f"{scen}: reactor:threads ft at workers={int(w)}: {med[w] / med[1]:.2f}x its workers=1"
                    for w in med.index if w != 1]
    return out


def skipped_lines(rows: pd.DataFrame) -> list[str]:
    sk = rows[rows["status"] == "skipped"]
    return sorted({f"{r['scenario']} on {r['label']}: {r['error']}" for _, r in sk.iterrows()})


def _ci(x: pd.Series, margin: float = 0.0) -> str:
    """A ratio per cycle (``x``, in cycle order): the median with the paired interval
    (`harness.report.intervals.median_interval`) and the report's one rule's verdict in words."""
    values = x.replace([np.inf, -np.inf], np.nan).dropna().to_numpy(float)
    reading = median_interval(values)
    med, lo, hi = reading.as_tuple()
    if not np.isfinite(med):
        return ""
    said = word_phrase(rule(lo, hi, margin), margin, int(values.size))
    return f"{med:.2f} ({said})" if not reading.enough else f"{med:.2f} [{lo:.2f}, {hi:.2f}] ({said})"


def _ft_labels(labels: list[str]) -> list[str]:
    return [lab for lab in labels if BackendLabel.parse(lab).free_threaded]


#: the processes executor on the default interpreter: the configuration a free-threaded one has to beat
PROCESSES_DEFAULT = "reactor:processes"


def ft_paired_table(jobs: list[PairedJob]) -> Table:
    """Paired jobs holding both interpreters: per backend, the median of per-cycle ratios (95% interval over
    cycles) to serial on the same interpreter, to itself on the default one and, where the job holds it, to
    the processes executor on the default interpreter (Atari's job: threads ft against processes default,
    with no serial of the threads executor on the default interpreter) (`harness.report.paired`)."""
    header = ["scenario", "workers", "job", "backend", "default / serial", "ft / serial ft", "ft / default",
              "cycles", "GIL on at end (ft)", "ft / reactor:processes default"]
    out: list[list[str]] = []
    for job in jobs:
        ft = _ft_labels(job.labels)
        if not ft:
            continue
        t = job.table
        serial_ft = next((lab for lab in ft if _base_label(lab) == SERIAL), None)
        for lab in ft:
            base = _base_label(lab)
            m = job.margin
            out.append([job.scenario, str(job.workers), job.name[:60], base,
                        _ci(t[base] / t[SERIAL], m) if base in t and SERIAL in t and base != SERIAL else "",
                        _ci(t[lab] / t[serial_ft], m) if serial_ft and lab != serial_ft else "",
                        _ci(t[lab] / t[base], m) if base in t else "",
                        str(len(t)), ", ".join(job.gil_enabled.get(lab, [])),
                        _ci(t[lab] / t[PROCESSES_DEFAULT], m) if PROCESSES_DEFAULT in t else ""])
    return Table(header, out)


def paired_scaling_lines(jobs: list[PairedJob]) -> list[str]:
    """reactor:threads ft over serial ft at each worker count, against the same at workers=1 (each job read
    against its own serial, so the host's speed in each job cancels; its parallel capacity does not)."""
    per: dict[tuple[str, int], tuple[float, float, float]] = {}
    for job in jobs:
        t = job.table
        threads = BackendLabel("reactor", "threads", "ft").render()
        serial_ft = BackendLabel("reactor", "threads", "ft").serial_baseline().render()
        if threads in t and serial_ft in t:
            per[(job.scenario, job.workers)] = median_interval(cycle_ratios(t, threads, serial_ft)).as_tuple()
    out = []
    for (scen, w), (med, lo, hi) in sorted(per.items()):
        one = per.get((scen, 1))
        if w != 1 and one is not None and one[0] > 0:
            out.append(f"{scen}: reactor:threads ft at workers={w}: {med / one[0]:.2f}x its workers=1 (paired jobs: "
                       f"{med:.2f} [{lo:.2f}, {hi:.2f}] of serial ft at workers={w}, {one[0]:.2f} [{one[1]:.2f}, "
                       f"{one[2]:.2f}] at workers=1)")
    return out


def freethreaded_sections(rep: Any) -> list[Section]:
    """The sections (none when no row ran under a free-threaded interpreter)."""
    rows = rep.results.rows
    jobs: list[PairedJob] = [j for j in (getattr(rep, "paired", None) or []) if _ft_labels(j.labels)]
    out: list[Section] = []
    if jobs:
        out += [Section("Free-threaded Python, paired", (
            "Paired jobs holding both interpreters (`python -m harness compare backends=[serial@ft,...]`): every "
            "ratio is the median of per-cycle ratios with its 95% interval over cycles (order statistics, widened for "
            "dependence between neighbouring cycles) and the report's verdict by its one rule. 'ft / serial ft': "
            "does parallelism pay on the free-threaded interpreter; 'ft / default': the same backend on both "
            "(for serial, the interpreter's own single-thread cost); 'GIL on at end': `sys._is_gil_enabled()` "
            "after each block of the ft child."), ft_paired_table(jobs)),
            Section("Free-threaded Python, paired: scaling", "", paired_scaling_lines(jobs) or ["(no workers=1 job)"])]
    if not len(rows) or "interpreter" not in rows or not any(_is_ft(r) for _, r in rows.iterrows()):
        return out
    versions = sorted({str(v) for v in rows["interpreter"] if str(v)})
    intro = ("Jobs measured under a free-threaded interpreter (`interpreter=ft`) beside the default one "
             f"(interpreters in these rows: {', '.join(versions)}). Each backend is compared with serial on the "
             "same interpreter; 'ft / default' of serial is the interpreter's own single-thread cost. Medians of "
             "repetitions; 'GIL on at end' is `sys._is_gil_enabled()` when each ft job ended.")
    lines = scaling_lines(rows) + [f"skipped: {s}" for s in skipped_lines(rows)]
    return out + [Section("Free-threaded Python", intro, ft_table(rows)),
                  Section("Free-threaded Python: scaling and skipped jobs", "", lines or ["(none)"])]
