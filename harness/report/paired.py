"""Statistics of paired jobs (``python -m harness compare``): per-cycle ratios, host regimes, the host series.

Rows with a ``cycle`` come from a paired job: every backend of the job ran one block of the same rounds in
each cycle, seconds apart. A ratio is therefore taken within a cycle (a change of host speed that spans the
cycle cancels), and a pair's reading is the median of its per-cycle ratios with an order-statistic interval
over cycles that accounts for the dependence between neighbouring cycles (`harness.report.stats.median_interval`);
the verdict rule is `harness.report.stats.verdict`: faster or slower only when the interval clears 1 by the
job's margin (the machine's resolution floor), "too few cycles" where the confidence has too few values. Efficiency is a contender's block over the ceiling's block of the same cycle
(``capacity``: k uncoordinated copies; ``capacity_lockstep``: k copies meeting once per round).

The host is read from the same cycles: the ceiling's throughput (what k copies got), the calibration loop's
time on each core and the CPU steal (`harness.hostwatch`). A shift of the ceiling's series
(`harness.report.changepoint`) splits the host into regimes. The job's readings are then given per regime only
where the shift moved a ratio between two contenders (`ratios_moved`: two regimes' intervals of one pair lie
apart), since then one pooled number would mix two machines; where every contender pair reads alike on both
sides, the job is read whole: a ratio taken within a cycle already cancels the host's speed, and splitting it
would only give each regime fewer cycles and a wider interval (the self-test's reading of both rules:
results/reference/vm-2core-2026-12-06-read-regimes/). Rows without a ``cycle`` are standalone jobs, analyzed elsewhere.
Definitions: docs/report.md, "Paired jobs".
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np
import pandas as pd

from harness.report.changepoint import Split, change_points, regimes
from harness.report.job_margin import Margin, effective_sets
from harness.labels import BackendLabel, PresetNames
from harness.report.stats import CEILING, CEILINGS, SERIAL, SYNC_CEILING, TOO_FEW, median_interval
from harness.report.stats import verdict as rule
from harness.report.intervals import verdict_phrase, word_phrase

#: the ceiling whose series is searched for a host shift, in order of preference
SHIFT_SERIES = (CEILING, SYNC_CEILING)


def split_paired(rows: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(paired rows, standalone rows): rows of paired jobs carry a ``cycle``."""
    if "cycle" not in rows or not len(rows):
        return rows.iloc[0:0], rows
    paired = rows["cycle"].notna()
    return rows[paired].reset_index(drop=True), rows[~paired].reset_index(drop=True)


def verdict(a: str, b: str, lo: float, hi: float, margin: float = 0.0, n: Optional[int] = None) -> str:
    """The report's rule on a ratio a/b (`harness.report.intervals.verdict`) in words naming the winner
    (`harness.report.intervals.verdict_phrase`)."""
    return verdict_phrase(rule(lo, hi, margin), a, b, margin, n)


def cycle_ratios(table: pd.DataFrame, a: str, b: str) -> np.ndarray:
    """a's block over b's block, per cycle (finite values only)."""
    return (table[a] / table[b]).replace([np.inf, -np.inf], np.nan).dropna().to_numpy(float)


def leader_and_runner_up(table: pd.DataFrame, labels: list[str]) -> tuple[Optional[str], Optional[str]]:
    """Who leads a paired job (or regime), by the statistic the lead is then given in: the median of per-cycle
    ratios. The leader is the contender whose smallest median ratio over any other is largest (it is at least 1
    over every other whenever one contender beats each other one head to head); the runner-up is the one it
    leads by least. So the leader's ratio over the runner-up, as printed, is never below 1 where such a
    contender exists, and the leader is never chosen by another statistic (median block throughput) than the
    one its lead is read from.

    A/A copies (``serial:-#2``) and injected-effect copies (``serial:-#3 +2%``) measure the harness, not a backend
    a user would run (`harness.labels.BackendLabel.is_copy`): where the job holds at least two real backends, the
    leader and runner-up are chosen among those only; a job of one backend and its copies (a self-test job) is
    read among all of them, so it still says "serial vs serial#2"."""
    labels = [lab for lab in labels if lab in table]
    real = [lab for lab in labels if not BackendLabel.parse(lab).is_copy]
    if len(real) >= 2:
        labels = real
    if not labels:
        return None, None
    if len(labels) == 1:
        return labels[0], None
    best: Optional[tuple[float, str, str]] = None
    for a in labels:
        meds = {b: float(np.median(r)) for b in labels if b != a and (r := cycle_ratios(table, a, b)).size}
        if not meds:
            continue
        closest = min(meds, key=lambda b: meds[b])
        if best is None or meds[closest] > best[0]:
            best = (meds[closest], a, closest)
    return (best[1], best[2]) if best else (labels[0], None)


def contenders(labels: list[str]) -> list[str]:
    """Labels that compete (not ceilings), serial first, then reactor executors, then the rest; the copies (A/A
    and injected, `harness.labels.BackendLabel.is_copy`) after the backends they copy."""
    def rank(label: str) -> tuple[int, int, str]:
        lab = BackendLabel.parse(label)
        return (0 if label == SERIAL else 1 if lab.name == "reactor" else 2, int(lab.is_copy), label)

    return sorted((lab for lab in labels if lab not in CEILINGS), key=rank)


@dataclass
class PairedJob:
    """One paired job's reading."""

    job: str
    config: str
    name: str
    labels: list[str]
    cycles: int
    block_rounds: int
    stopped_by: str
    precision_target: float
    #: throughput, one row per cycle, one column per label
    table: pd.DataFrame
    #: per cycle: mean and per-core calibration ms, steal fraction, CPU the waiting backends used
    host: pd.DataFrame
    shift_series: str
    #: the resolution floor verdicts clear (``compare.margin``, recorded in the rows; 0 in older rows)
    margin: float = 0.0
    #: where the margin came from (``selftest <date>``, ``compare.margin``, ``default``; `harness.margin`)
    margin_source: str = ""
    #: the sets of processes the job's cycles averaged over (`harness.report.job_margin.effective_sets`), at which a
    #: stored margin's set part is taken (`harness.report.job_margin.Margin.for_sets`)
    sets: float = math.nan
    #: the margin as the rows recorded it (with a stored margin's parts), from which ``margin`` was taken
    recorded_margin: Margin = Margin(0.0, "")
    #: CPU model, cores, git commit and the load average when the job started (from the rows' metadata)
    machine: str = ""
    #: the host shifts found in ``shift_series`` (`harness.report.changepoint`)
    splits: list[Split] = field(default_factory=list)
    #: whether a host shift moved a ratio between two contenders (`ratios_moved`): only then are the job's readings
    #: given per regime
    moved: bool = False
    ratios: pd.DataFrame = field(default_factory=pd.DataFrame)
    #: per label: the ``gil_enabled`` values its blocks recorded (a free-threaded child that turned it on shows)
    gil_enabled: dict[str, list[str]] = field(default_factory=dict)
    workers: int = 0
    scenario: str = ""
    #: the preset names the job was run with (its rows' ``metadata.preset``; `harness.labels.PresetNames`)
    presets: PresetNames = field(default_factory=PresetNames)

    @property
    def host_regimes(self) -> list[tuple[int, int]]:
        """The host's regimes: the spans between the shifts of the ceiling's series."""
        return regimes(len(self.table), self.splits)

    @property
    def regimes(self) -> list[tuple[int, int]]:
        """The spans the job's readings are given over: the host's regimes where a shift moved a ratio between
        contenders (`ratios_moved`), else the whole job."""
        return self.host_regimes if self.moved else [(0, len(self.table))]


def ratios_moved(table: pd.DataFrame, labels: list[str], spans: list[tuple[int, int]]) -> bool:
    """Whether the ratio of some pair of contenders differs between host regimes: two regimes' intervals of its
    median per-cycle ratio (`harness.report.stats.median_interval`) lie apart. A regime with too few cycles for
    an interval says nothing either way. A job without two contenders has no such ratio: its shares of the
    ceiling are then all it reads, and they are read per regime (True)."""
    if len(spans) < 2:
        return False
    cont = contenders([lab for lab in labels if lab in table])
    if len(cont) < 2:
        return True
    for i, a in enumerate(cont):
        for b in cont[i + 1:]:
            found = [median_interval(cycle_ratios(table.iloc[lo:hi], a, b)) for lo, hi in spans]
            ivs = [(r.low, r.high) for r in found if r.enough]
            if any(x[1] < y[0] or y[1] < x[0] for k, x in enumerate(ivs) for y in ivs[k + 1:]):
                return True
    return False


def _ratio_rows(job: PairedJob, lo_i: int, hi_i: int, regime: str) -> list[dict[str, Any]]:
    t = job.table.iloc[lo_i:hi_i]
    out = []
    cont = contenders(job.labels)
    pairs = [(b, a, "ratio") for i, a in enumerate(cont) for b in cont[i + 1:]]
    pairs += [(a, c, "efficiency") for a in cont for c in CEILINGS if c in job.labels]
    for num, den, kind in pairs:
        r = (t[num] / t[den]).replace([np.inf, -np.inf], np.nan).dropna()
        reading = median_interval(r.to_numpy(float))
        med, lo, hi = reading.as_tuple()
        half = max(hi / med - 1, 1 - lo / med) if med > 0 and reading.enough else math.nan
        out.append({"job": job.job, "config": job.config, "name": job.name, "regime": regime,
                    "cycles": int(r.size), "n_eff": reading.n_eff, "numerator": num, "denominator": den,
                    "kind": kind, "median": med, "ci_low": lo, "ci_high": hi, "half_width": half,
                    "margin": job.margin, "margin_source": job.margin_source,
                    "verdict": verdict(num, den, lo, hi, job.margin, int(r.size)) if kind == "ratio" else ""})
    return out


def _host_frame(rows: pd.DataFrame) -> pd.DataFrame:
    per_cycle = rows.sort_values("block").groupby("cycle")
    recs = []
    for cycle, g in per_cycle:
        e = g["extra_dict"].iloc[0] or {}
        cores = [float(v) for v in e.get("host_core_ms", []) or []]
        recs.append({"cycle": int(cycle), "core_ms": cores,
                     "core_ms_mean": float(np.mean(cores)) if cores else math.nan,
                     "core_ms_max": float(np.max(cores)) if cores else math.nan,
                     "steal": float(e.get("host_steal", math.nan)),
                     "others_cpu_ms": float(sum((x or {}).get("others_cpu_ms", 0.0) for x in g["extra_dict"]))})
    return pd.DataFrame(recs).set_index("cycle") if recs else pd.DataFrame()


def runs_of_job(g: pd.DataFrame) -> pd.Series:
    """Which run each row of one paired job's file belongs to (0, 1, ... in file order): a job numbers its blocks
    by their time (``block``, counting up from 0) and writes them cycle by cycle, a cycle's rows in the listing
    order of its backends (not in block order: the order within a cycle is shuffled), so every block of a cycle
    comes after every block of the cycle written before it; a cycle whose blocks do not (block numbers that start
    again) starts another run appended to the same ``results.csv`` (a job rerun into a folder before its earlier
    files were set aside). Without a ``cycle`` column, each row is its own cycle."""
    block = pd.to_numeric(g["block"], errors="coerce") if "block" in g else pd.Series(np.nan, index=g.index)
    cycle = pd.to_numeric(g["cycle"], errors="coerce") if "cycle" in g else pd.Series(np.arange(len(g)), g.index)
    known = block.notna() & cycle.notna()  # a row without a block number belongs to the run before it
    b, c = block[known], cycle[known]
    segment = c.ne(c.shift()).cumsum()  # consecutive rows of one cycle
    lo, hi = b.groupby(segment).min(), b.groupby(segment).max()
    run = lo.le(hi.shift()).cumsum()
    return segment.map(run).reindex(g.index).ffill().fillna(0).astype(int)


def analyze_paired(rows: pd.DataFrame, names: Optional[dict[str, str]] = None,
                   problems: Optional[list[str]] = None) -> list[PairedJob]:
    """Every paired job in ``rows`` (rows from `harness.report.load`; only ``ok`` rows with a cycle count).

    Cycles of two runs are never pivoted together: a job folder whose file holds several runs (`runs_of_job`)
    is read from its last run only, and one whose cycles still repeat a backend is refused; either is said in
    ``problems`` (the report's warnings)."""
    paired, _ = split_paired(rows)
    jobs = []
    for job_id, g in paired.groupby("job", sort=True):
        run = runs_of_job(g)
        earlier = int(run.max()) if len(run) else 0
        if earlier:
            g = g[run == run.max()]
            if problems is not None:
                problems.append(f"paired job {job_id}: its results.csv holds {earlier + 1} runs appended one after "
                                "the other (a rerun into the same folder): only the last run is read, never "
                                "cycles of two runs together")
        g = g[g["status"] == "ok"]
        if not len(g):
            continue
        if g.duplicated(["cycle", "label"]).any():
            if problems is not None:
                problems.append(f"paired job {job_id}: a backend has two blocks in one cycle (two runs mixed in one "
                                "file?): the job is not read")
            continue
        table = g.pivot_table(index="cycle", columns="label", values="throughput", aggfunc="first")
        table = table.dropna()  # a cycle counts only with every backend's block
        labels = list(dict.fromkeys(g.sort_values("block")["label"]))
        last = g[g["cycle"] == g["cycle"].max()]["extra_dict"]
        stop = next((str(e.get("stopped_by")) for e in last if e and e.get("stopped_by")), "")
        first = g["extra_dict"].iloc[0] or {}
        series = next((s for s in SHIFT_SERIES if s in table), "")
        config = str(g["config"].iloc[0])
        meta = g["meta"].iloc[0] if "meta" in g else {}
        meta = meta if isinstance(meta, dict) else {}
        load = meta.get("load_avg") or []
        machine = (f"{meta.get('cpu_count', '?')}x {meta.get('cpu_model', '?')}, commit "
                   f"{str(meta.get('git_sha', '?'))[:8]}, load average at start "
                   + (" / ".join(f"{v:g}" for v in load) if load else "?"))
        one = g[g["label"] == labels[0]]  # a cycle's blocks share its set of processes
        sets = effective_sets(int((e or {}).get("epoch", 0) or 0)
                              for c, e in zip(one["cycle"], one["extra_dict"]) if c in table.index)
        recorded = Margin.from_row(first)
        folder = str(job_id).split(":", 1)[-1]  # two paired jobs of one configuration stay apart by their folder
        job = PairedJob(job=str(job_id), config=config, name=f"{(names or {}).get(config, config)} [{folder}]",
                        labels=labels,
                        cycles=len(table), block_rounds=int(first.get("block_rounds", 0) or 0), stopped_by=stop,
                        precision_target=float(first.get("precision_target", math.nan)), table=table,
                        host=_host_frame(g), shift_series=series, machine=machine,
                        margin=recorded.for_sets(sets), margin_source=recorded.source, sets=sets,
                        recorded_margin=recorded,
                        workers=int(g["workers"].iloc[0]), scenario=str(g["scenario"].iloc[0]),
                        presets=PresetNames.from_rows(g))
        if "gil_enabled" in g:
            job.gil_enabled = {str(lab): sorted({str(v) for v in gg["gil_enabled"] if str(v) not in ("", "nan")})
                               for lab, gg in g.groupby("label")}
        if series:
            job.splits = change_points(table[series].to_numpy(float))
            job.moved = ratios_moved(table, labels, job.host_regimes)
        recs = []
        if len(job.regimes) > 1:
            for lo_i, hi_i in job.regimes:
                recs += _ratio_rows(job, lo_i, hi_i, f"cycles {int(table.index[lo_i])}-{int(table.index[hi_i - 1])}")
        else:
            recs += _ratio_rows(job, 0, len(table), "all")
        job.ratios = pd.DataFrame(recs)
        jobs.append(job)
    return jobs


def ratio_frame(jobs: list[PairedJob]) -> pd.DataFrame:
    """Every paired reading of every job, one row per (job, regime, pair)."""
    frames = [j.ratios for j in jobs if len(j.ratios)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def host_summary(job: PairedJob) -> list[dict[str, Any]]:
    """Per host regime (or per quarter of the run when the host did not shift): how the host moved."""
    n = len(job.table)
    spans = job.host_regimes if len(job.host_regimes) > 1 else \
        [(a, b) for a, b in zip(np.linspace(0, n, 5).astype(int)[:-1], np.linspace(0, n, 5).astype(int)[1:]) if b > a]
    out = []
    for lo_i, hi_i in spans:
        cycles = job.table.index[lo_i:hi_i]
        host = job.host.reindex(cycles)
        # pandas' median and mean skip NaN and give NaN where a span holds no reading (rows without host columns)
        rec = {"cycles": f"{int(cycles[0])}-{int(cycles[-1])}",
               "calibration_ms": float(host["core_ms_mean"].median()) if len(host) else math.nan,
               "slowest_core_ms": float(host["core_ms_max"].median()) if len(host) else math.nan,
               "steal_pct": 100 * float(host["steal"].mean()) if len(host) else math.nan}
        for c in CEILINGS:
            if c in job.table:
                rec[c] = float(job.table[c].iloc[lo_i:hi_i].median())
        if SERIAL in job.table:
            rec[SERIAL] = float(job.table[SERIAL].iloc[lo_i:hi_i].median())
        out.append(rec)
    return out


def margin_sets_text(job: PairedJob) -> str:
    """``; its set part at the 3.6 sets of processes the job ran (stored for 8)`` where the job's margin was taken at
    its sets (`harness.report.job_margin.Margin.for_sets`), else nothing."""
    stored = job.recorded_margin
    if not (math.isfinite(stored.set_part) and math.isfinite(job.sets)):
        return ""
    return f"; its set part at the {job.sets:.3g} sets of processes the job ran (stored for {stored.sets:.3g})"


def shift_lines(jobs: list[PairedJob]) -> list[str]:
    """One line per paired job: cycles, what stopped it, and the host shifts found (or none)."""
    out = []
    for j in jobs:
        stop = {"precision": f"the main ratio reached +-{j.precision_target * 100:g}%",
                "time": "the time budget ended"}.get(j.stopped_by, j.stopped_by or "unknown")
        head = (f"{j.name} ({j.machine}): {j.cycles} cycles of {j.block_rounds} rounds, stopped because {stop}; "
                f"margin +-{j.margin * 100:.3g}%"
                + (f" ({j.margin_source}{margin_sets_text(j)})" if j.margin_source else ""))
        if not j.shift_series:
            out.append(head + "; no ceiling in the job, host shifts not searched")
        elif j.splits:
            where = ", ".join(f"at cycle {int(j.table.index[s.index])} ({s.shift * 100:+.0f}%, p={s.p_value:.3g})"
                              for s in j.splits)
            out.append(head + f"; HOST SHIFT in {j.shift_series}'s throughput {where}: " + (
                "it moved a ratio between contenders, so readings are given per regime" if j.moved else
                "no ratio between contenders moved across it (each pair's regimes read alike), so the job is read "
                "whole, its shares of the ceilings included"))
        else:
            out.append(head + f"; no shift in {j.shift_series}'s throughput")
    return out


def _serial_on_same_interpreter(label: str, labels: list[str]) -> Optional[str]:
    """Serial on the label's own interpreter (``reactor:threads ft`` -> ``serial:ft``, ``reactor:threads
    py3.12.1`` -> ``serial:py3.12.1``, a default-interpreter label -> ``serial:-``); None if the job has none."""
    serial = BackendLabel.parse(label).serial_baseline().render()
    return serial if serial in labels else None


def verdict_lines(jobs: list[PairedJob]) -> list[str]:
    """One line per paired job for the report's verdicts: each reactor executor against serial on the same
    interpreter (median of per-cycle ratios, 95% interval, the report's rule), per regime where the host
    shifted. Why here: a reader opening the report of `make bench` or `make bench-paired` must see the reactor
    against serial from the paired jobs first, not only from standalone jobs that sampled other seconds."""
    out = []
    for j in jobs:
        per_regime = []
        for lo_i, hi_i in j.regimes:
            t = j.table.iloc[lo_i:hi_i]
            parts = []
            # the processes executor (the reactor backend's default) first, copies (A/A, injected) last
            parsed = {lab: BackendLabel.parse(lab) for lab in j.labels}
            for lab in sorted(j.labels, key=lambda lab: (parsed[lab].is_copy, parsed[lab].variant != "processes")):
                serial = _serial_on_same_interpreter(lab, j.labels) if parsed[lab].name == "reactor" else None
                if serial is None:
                    continue
                r = cycle_ratios(t, lab, serial)
                if r.size < 1:
                    continue
                reading = median_interval(r)
                med, lo, hi = reading.as_tuple()
                said = word_phrase(rule(lo, hi, j.margin), j.margin, int(r.size))
                if rule(lo, hi, j.margin) == TOO_FEW:
                    parts.append(f"{lab} {med:#.3g}x of {serial} ({said})")
                else:
                    parts.append(f"{lab} {med:#.3g}x [{lo:#.3g}, {hi:#.3g}] of {serial} ({said})")
            if parts:
                span = (f"cycles {int(j.table.index[lo_i])}-{int(j.table.index[hi_i - 1])}: "
                        if len(j.regimes) > 1 else "")
                per_regime.append(span + ", ".join(parts))
        if per_regime:
            how = (f"paired, {j.cycles} cycles, host shift: per regime" if len(j.regimes) > 1
                   else f"paired, {j.cycles} cycles")
            out.append(f"{j.name} ({how}): " + "; ".join(per_regime))
    return out
