"""``python -m harness selftest``: what this machine can resolve, checked against known answers, as jobs ship.

A harness that prints "95%" must show that its verdicts keep the promise on the machine at hand, read the way
the report reads the jobs users run. The self-test runs paired jobs (`harness.compare`) whose answer is known,
with what ``make bench-paired`` runs: the same stop rule (``compare.precision``, the Makefile's PAIRED_PRECISION;
``selftest.seconds`` is ``compare.max_seconds``), the same respawn setting and margin (``compare.*`` as shipped:
none is set here), and the ceilings as residents (``selftest.residents``, ``[capacity_lockstep,capacity]``: the
report splits the host into regimes where the uncoordinated ceiling's series shifts, and gives its verdicts per
regime where the shift moved a ratio between contenders (`harness.report.paired.ratios_moved`); without a ceiling
no job would ever be split, and the self-test would validate a reading no report makes):

* **A/A**: one backend against an identical copy of itself (``backends=[b, b, ...]``): any verdict is false. A
  job's A/A verdict is what the report says of the pair, per regime, at the margin the job ran with
  (`harness.margin.resolve_margin`): called when any regime says faster or slower. Over many jobs the share of
  false verdicts, with its binomial (Clopper-Pearson) interval, is the real error rate of the verdicts.
* **The margin**: a verdict is given where a regime's interval clears 1 +- margin, so what a margin must cover is
  how far an A/A job's interval lies beyond 1 (`clearance`: in its regime farthest off 1; 0 where every regime's
  interval holds 1). The margin is the larger of its 95th percentile over the jobs (``numpy.quantile``, linear
  between order statistics; with 10 jobs, between the two largest), the smallest margin at which about 95% of these
  A/A jobs got no verdict, and the set part (`harness.set_offsets.set_margin`: z x the offset of one set of
  processes / sqrt(sets per job)), which holds where quiet cycles make the intervals narrower than the sets'
  offsets (`measured_margin`). (|A/A median - 1| would also count the part of a job's offset that its own interval
  already covers.) A job's set part is taken at the sets it averaged over (`harness.report.job_margin.Margin.for_sets`,
  `effective_sets`): the stored margin is for the self-test's jobs' sets, and a job that ran fewer (stopped by its
  cap, as jobs holding Ray often are) clears a wider one, one that ran more a narrower one.
  Stored per machine and workload (`harness.margin`, results/machine/: the jobs' scenario and worker count, so
  ``scenario=dqn`` measures dqn's; a job of a workload without an entry uses the default) when the jobs ran as
  shipped (`not_as_shipped`; the cap included: a job stopped by a ``selftest.seconds`` shorter than the shipped
  ``compare.max_seconds`` did not, one stopped by the precision rule did) and there were at least
  `MIN_JOBS_TO_STORE`; what is stored is that margin over the workload's last `POOLED_JOBS` A/A jobs, this
  self-test's and its earlier ones' (`store_margin`); paired jobs of the workload use it from then on.
  The false-verdict rate at the measured margin is read leave-one-out (each job at the margin of the other jobs,
  its set part at its own sets), so it is not the in-sample rate, which is below 5% by construction.
* **Where the A/A offset comes from**: per set of processes, the A/A pair's median and its error from the set's
  own cycles, pooled over jobs (`harness.set_offsets`): how far sets differ beyond their cycles' noise, and the
  offset of one set that no interval over cycles sees, which the margin covers.
* **Injected effects**: further copies whose every round takes a known share longer (a wait of that share of the
  round's own time: ``compare.extra_work``, `harness.child.ExtraWork`), named by their effect (``serial +2%``):
  each must be called slower (in some regime, and faster in none). The detection rate per effect says how small a
  difference this machine resolves in jobs of this length.

Every job holds the A/A pair, the effects and the ceilings as residents of one paired job (``backends=[b, b, b,
b, capacity_lockstep, capacity]``, ``compare.extra_work=[0, 0, e1, e2, 0, 0]``), so they sample the same seconds
of the host. The same A/A pair is also measured the old way, as standalone jobs one after the other
(``selftest.standalone``), and each job's pooled A/A ratios read again with the interval alone (margin 0), with
cycles taken as independent and with the former percentile bootstrap, for contrast.

Results: ``<out>/job_<i>/`` (each paired job's rows), ``<out>/standalone_<i>/`` and ``<out>/selftest.json``,
whose summary the report opens with as "What this machine can resolve" (`harness.report.resolution`).

    python -m harness selftest [selftest.jobs=10] [selftest.seconds=240] [selftest.effects=[0.02,0.05]]
        [selftest.residents=[capacity_lockstep,capacity]] [selftest.standalone=true] [selftest.store=true]
        [selftest.out=results/selftest/<time>] [scenario=gym workers=2 compare.precision=0.05 ...]
    python -m harness selftest --reanalyze <out>     (read the jobs again with this version's statistics)
    python -m harness selftest --reanalyze <out> --at-seconds 60     (the same jobs read as 60-s jobs: their
        cycles up to that cap, which is what a 60-s job of the same seed would have run; selftest_at_60s.json)
    python -m harness selftest --latest-line         (the newest self-test's line, as `make bench` prints it)
"""
from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field, fields
from datetime import datetime
from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np
import pandas as pd

from harness import set_offsets
from harness.cycles import COMPARE_FILE, CompareSettings, fewest_cycles
from harness.margin import (BEFORE_IT_EXISTED, MARGIN_RULE, PROCEDURE, differing_procedure, store_machine_margin,
                            workload_key, workload_margin)
from harness.metadata import job_metadata
from harness.report import stats
from harness.report.job_margin import larger_part
from harness.report.resolution import DETECTION_GOAL, ran_with_text

ROOT = Path(__file__).resolve().parents[1]
SELFTEST_FILE = "selftest.json"
#: the fewest jobs whose 95th percentile is stored as the machine's margin (fewer: the largest of a handful)
MIN_JOBS_TO_STORE = 10
#: the most recent A/A jobs of a workload whose clearances set its stored margin: a self-test run as shipped adds its
#: jobs to those the workload's entry already holds (measured under the same shipped procedure), so the 95th
#: percentile rests on more jobs than one self-test runs (with 10 jobs it lies between the two largest clearances, and
#: moves from one self-test to the next: results/reference/vm-2core-2026-12-05-margin-per-workload/)
POOLED_JOBS = 40
#: how a measured margin is made (`measured_margin`), recorded with it
MARGIN_HOW = ("the larger of the 95th percentile of the A/A clearance (how far a job's A/A interval lies beyond 1 in "
              "its regime farthest off 1, 0 where every regime's interval holds 1; numpy.quantile, linear) and the "
              "set part (z x the A/A offset of one set of processes, DerSimonian-Laird over the jobs' sets, / "
              "sqrt(sets per job); a job's set part is taken at the sets it ran)")
#: the ceilings ``make bench-paired`` holds (PAIRED_BACKENDS): residents of every self-test job as shipped
SHIPPED_RESIDENTS = ("capacity_lockstep", "capacity")
#: set by the self-test itself, not to be passed through
OWN_KEYS = ("backends", "compare.extra_work", "compare.max_seconds")
#: where each job writes, under ``selftest.out``
OWN_DIRS = ("hydra.run.dir", "hydra.sweep.dir")


@dataclass
class SelftestSettings:
    """``selftest.*`` options."""

    jobs: int = 10
    #: each job's ``compare.max_seconds`` (as shipped: `CompareSettings.max_seconds`, the Makefile's PAIRED_SECONDS)
    seconds: float = CompareSettings.max_seconds
    effects: list[float] = field(default_factory=lambda: [0.02, 0.05])
    backend: str = "serial"
    #: further residents of every job, beside the A/A pair and the effects: the ceilings, as shipped
    residents: list[str] = field(default_factory=lambda: list(SHIPPED_RESIDENTS))
    standalone: bool = False
    out: str = ""
    confidence: float = 0.95
    #: store the measured margin as this machine's (`harness.margin`) when the jobs ran as shipped
    store: bool = True

    @classmethod
    def of(cls, recorded: dict[str, Any]) -> "SelftestSettings":
        """Settings as a ``selftest.json`` recorded them (keys of older versions dropped)."""
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in recorded.items() if k in known})


def _list(value: str) -> list[str]:
    return [v.strip() for v in value.strip("[]").split(",") if v.strip()]


def parse_args(argv: list[str]) -> tuple[SelftestSettings, list[str]]:
    """``selftest.*`` options and the overrides passed on to every job; a misspelt ``selftest.`` key or a bad
    value raises ValueError naming it before anything runs."""
    settings = SelftestSettings()
    known = {f for f in asdict(settings)}
    passed = []
    for arg in argv:
        key, eq, value = arg.partition("=")
        if not key.startswith("selftest."):
            if not eq:
                raise ValueError(f"{arg!r}: expected key=value")
            if key in OWN_KEYS:
                raise ValueError(f"{key} is set by the self-test (use selftest.backend, selftest.residents, "
                                 "selftest.effects and selftest.seconds)")
            if key.lstrip("+~") in OWN_DIRS:  # each job's folder is the self-test's: a given one was ignored
                raise ValueError(f"{key} is set by the self-test for each job: its folder is selftest.out=DIR")
            passed.append(arg)
            continue
        name = key[len("selftest."):]
        if name not in known or not eq:
            raise ValueError(f"{arg!r}: unknown self-test option (known: {', '.join(sorted(known))})")
        try:
            if name == "effects":
                parsed: Any = [float(v) for v in _list(value)]
                if any(not 0 < v <= 1 for v in parsed):
                    raise ValueError("each effect must be in (0, 1]")
            elif name == "residents":
                parsed = _list(value)
            elif name in ("jobs",):
                parsed = int(value)
                if parsed < 1:
                    raise ValueError("must be >= 1")
            elif name in ("seconds", "confidence"):
                parsed = float(value)
                if parsed <= 0:
                    raise ValueError("must be > 0")
            elif name in ("standalone", "store"):
                if value.lower() not in ("true", "false"):
                    raise ValueError("must be true or false")
                parsed = value.lower() == "true"
            else:
                parsed = value
        except ValueError as exc:
            raise ValueError(f"{arg!r}: {exc}") from None
        setattr(settings, name, parsed)
    return settings, passed


def _python() -> str:
    return sys.executable


def compare_command(settings: SelftestSettings, passed: list[str], job_dir: Path, job: int = 0) -> list[str]:
    """Self-test job number ``job``: the backend, its A/A copy, one copy per effect, then the residents; every
    ``compare.*`` setting but the length as shipped (or as ``passed`` says); the seed ``passed``'s (0 by default)
    plus ``job``. Why a seed per job: a paired job draws its start orders and each cycle's block order from its seed,
    so jobs of one seed repeat the same orders, and an offset that follows a resident's place would lean every job
    the same way instead of averaging out over them (results/reference/vm-2core-2026-12-06-start-order/)."""
    n = 2 + len(settings.effects)
    backends = ",".join([settings.backend] * n + list(settings.residents))
    shares = ",".join(["0", "0", *(f"{e:g}" for e in settings.effects), *(["0"] * len(settings.residents))])
    seeds = [a for a in passed if a.startswith("seed=")]
    base = int(seeds[-1].split("=", 1)[1]) if seeds else 0
    passed = [a for a in passed if not a.startswith("seed=")]
    return [_python(), "-m", "harness", "compare", *passed, f"seed={base + job}", f"backends=[{backends}]",
            f"compare.extra_work=[{shares}]", f"compare.max_seconds={settings.seconds:g}",
            "quiet=true", f"hydra.run.dir={job_dir}"]


def standalone_command(settings: SelftestSettings, passed: list[str], job_dir: Path) -> list[str]:
    job_keys = [a for a in passed if not a.startswith("compare.")]
    return [_python(), "-m", "harness", *job_keys, f"backend={settings.backend}", "quiet=true", "resume=false",
            f"hydra.run.dir={job_dir}"]


def _run(cmd: list[str], log: Path) -> None:
    with log.open("w") as fh:
        done = subprocess.run(cmd, cwd=ROOT, stdout=fh, stderr=subprocess.STDOUT)
    if done.returncode != 0:
        tail = log.read_text()[-3000:]
        raise RuntimeError(f"self-test job failed (exit {done.returncode}): {' '.join(cmd)}\n{tail}")


# ---------------------------------------------------------------- reading one job

def effect_name(backend: str, share: float) -> str:
    """An injected copy as a reader names it: ``serial +2%``."""
    return f"{backend} +{share * 100:g}%"


def called(word: str) -> bool:
    return word in (stats.FASTER, stats.SLOWER)


def job_word(regimes: list[dict[str, Any]], margin: float) -> str:
    """What the report says of a pair over a job's regimes (`harness.report.intervals.verdict` per regime, at
    ``margin``): ``faster`` or ``slower`` when some regime says so and none says the opposite, ``faster and
    slower`` when regimes disagree (called all the same), ``equivalent`` when every regime is, else ``no clear
    difference`` (or ``too few cycles`` when every regime had too few)."""
    words = [stats.verdict(r["low"], r["high"], margin) for r in regimes]
    hits = {w for w in words if called(w)}
    if len(hits) == 2:
        return "faster and slower"
    if hits:
        return hits.pop()
    if words and all(w == stats.EQUIVALENT for w in words):
        return stats.EQUIVALENT
    if words and all(w == stats.TOO_FEW for w in words):
        return stats.TOO_FEW
    return stats.UNCLEAR


def read_pair(r: np.ndarray, confidence: float, regimes: list[np.ndarray] | None = None) -> dict[str, Any]:
    """One pair's readings: per regime, the interval the report draws (order statistics, dependence-aware);
    over all cycles, the same (its median is the job's offset), without the dependence correction, and the
    percentile bootstrap the harness used before, each with its word at margin 0 (the interval alone)."""
    new = stats.median_interval(r, confidence)
    plain = stats.median_interval(r, confidence, dependent=False)
    old = stats.median_ci(r, confidence=confidence)
    parts = []
    for x in (regimes if regimes is not None else [r]):
        reading = stats.median_interval(x, confidence)
        parts.append({"cycles": int(x.size), "median": reading.median, "low": reading.low, "high": reading.high})
    return {"cycles": int(r.size), "median": new.median, "low": new.low, "high": new.high, "n_eff": new.n_eff,
            "half_width": stats.half_width(*new.as_tuple()), "regimes": parts,
            "verdict": stats.verdict(new.low, new.high),
            "independent_low": plain.low, "independent_high": plain.high,
            "verdict_independent": stats.verdict(plain.low, plain.high),
            "bootstrap_low": old[1], "bootstrap_high": old[2],
            "verdict_bootstrap": stats.verdict(old[1], old[2]) if r.size >= 2 else stats.TOO_FEW}


def copy_labels(rows: pd.DataFrame, first: str) -> dict[int, str]:
    """The report's label of each copy (1, 2, ...) of the self-test's backend, whose first copy is labelled
    ``first``: read from the rows (``copy`` column), whatever the label says of a copy or its effect."""
    ok = rows[rows["status"] == "ok"]
    head = ok[ok["label"] == first]
    if not len(head):
        raise ValueError(f"no rows of {first} in the job")
    same = ok[(ok["backend"] == head["backend"].iloc[0]) & (ok["variant"] == head["variant"].iloc[0])]
    return {int(c): str(g["label"].iloc[0]) for c, g in same.groupby("copy")}


def shorter_job(rows: pd.DataFrame, seconds: float, enough: int) -> tuple[pd.DataFrame, bool]:
    """The rows of a paired job as the job a cap of ``seconds`` would have made of it: its cycles up to the first
    whose end lies at ``seconds`` of cycles or later (``extra.cycles_s``) and that has ``enough`` cycles, which is
    where `harness.cycles.stop_reason` stops by time; whether that cut any. The stop rule reads only the cycles
    so far, so a shorter job is a prefix of a longer one of the same seed: one run of long jobs also reads as
    shorter jobs. Raises ValueError for rows written without ``cycles_s``."""
    ok = rows[rows["status"] == "ok"]
    ends = ok.groupby("cycle")["extra_dict"].first().map(lambda e: (e or {}).get("cycles_s"))
    if ends.isna().any():
        raise ValueError("these rows have no extra.cycles_s (written before it was recorded): they cannot be "
                         "read as a shorter job")
    ends = ends.sort_index()
    past = ends[(ends >= seconds) & (np.arange(1, len(ends) + 1) >= enough)]
    if past.empty:
        return rows, False
    last = past.index[0]
    return rows[rows["cycle"] <= last], bool(last < ends.index[-1])


def read_job(job_dir: Path, settings: SelftestSettings, at_seconds: Optional[float] = None) -> dict[str, Any]:
    """A self-test job as the report reads it (`harness.report.paired.analyze_paired`: its cycles, regimes and
    margin), each copy over the first: the A/A copy (``aa``) and one per effect (``effect_<share>``). With
    ``at_seconds``: as the job a cap of that many seconds of cycles would have stopped (`shorter_job`)."""
    from harness.report.load import load_results
    from harness.report.paired import analyze_paired, cycle_ratios

    rows = load_results([job_dir]).rows
    recorded = json.loads((job_dir / COMPARE_FILE).read_text())
    ran = dict(recorded.get("settings", recorded))  # the compare.* settings (older files: their top level)
    cut = False
    if at_seconds is not None:
        enough = fewest_cycles(int(ran.get("min_cycles", 0) or 0), float(ran.get("confidence", 0.95)))
        rows, cut = shorter_job(rows, at_seconds, enough)
        ran["max_seconds"] = min(float(ran.get("max_seconds", math.inf)), at_seconds)
    labels = copy_labels(rows, recorded["backends"][0])
    problems: list[str] = []
    (job,) = analyze_paired(rows, problems=problems)
    t = job.table

    epochs = {c: epoch for c, (epoch, _) in cycle_places(rows, labels[1]).items()}

    def pair(k: int) -> dict[str, Any]:
        num, den = labels[k], labels[1]
        reading = read_pair(cycle_ratios(t, num, den), settings.confidence,
                            [cycle_ratios(t.iloc[lo:hi], num, den) for lo, hi in job.regimes])
        reading["sets"] = set_offsets.set_medians(t[num] / t[den], epochs)
        return reading

    out: dict[str, Any] = {"job": job_dir.name, "margin": job.margin, "margin_source": job.margin_source,
                           "sets": job.sets, "stopped_by": "time" if cut else job.stopped_by, "cycles": job.cycles,
                           "regimes": len(job.regimes), "host_regimes": len(job.host_regimes),
                           "compare": {k: ran.get(k, BEFORE_IT_EXISTED.get(k)) for k in PROCEDURE + ("max_seconds",)},
                           "problems": problems}
    out["aa"] = pair(2)
    out["aa_by_start_order"] = by_start_order(rows, t, labels[1], labels[2])
    for i, e in enumerate(settings.effects):
        reading = pair(3 + i)
        extra = [x for x in rows.loc[(rows["label"] == labels[3 + i]) & (rows["status"] == "ok"), "extra_dict"]]
        reading["name"] = effect_name(settings.backend, e)
        reading["extra_work_ms_per_round"] = float(np.median(
            [x.get("extra_work_ms_per_round", math.nan) for x in extra])) if extra else math.nan
        # how the effect was injected: "wall time" (each round's own), or "process CPU time" (a loop calibrated at
        # start-up, before 2026-12-05: it cost about 1.1 points more than its name)
        reading["extra_work_clock"] = extra[0].get("extra_work_clock") if extra else None
        out[f"effect_{e:g}"] = reading
    meta = rows["meta"].iloc[0]
    out["scenario"], out["workers"] = str(rows["scenario"].iloc[0]), int(rows["workers"].iloc[0])
    out["started_at"] = meta.get("started_at")
    out["load_avg"] = meta.get("load_avg")
    return out


def cycle_places(rows: pd.DataFrame, label: str) -> dict[int, tuple[int, Any]]:
    """Per cycle of ``label``'s ok rows: its set of processes (``extra.epoch``, 0 where not recorded) and its place
    in that set's start order (``extra.started_at``, None where not recorded)."""
    ok = rows[(rows["label"] == label) & (rows["status"] == "ok")]
    return {int(c): (int((e or {}).get("epoch", 0) or 0), (e or {}).get("started_at"))
            for c, e in zip(ok["cycle"], ok["extra_dict"])}


def by_start_order(rows: pd.DataFrame, table: pd.DataFrame, first: str, copy: str) -> dict[str, Any]:
    """The A/A pair's median ratio (``copy`` over ``first``) over the cycles of each start order: ``listed``, the
    sets of processes in which ``first`` was started before its copy, ``reversed`` those in which the copy was
    (each row's ``extra.started_at``, its place in its set's start order, `harness.cycles.start_orders`; rows
    from before it was recorded: even sets listed, odd sets reversed, as they were started). Why: an offset that
    follows the start order is a property of the procedure, not noise, and respawning in alternating order is
    what is meant to cancel it."""
    from harness.report.paired import cycle_ratios

    at_a, at_b = cycle_places(rows, first), cycle_places(rows, copy)

    def first_before_copy(cycle: int) -> bool:
        epoch, a = at_a.get(cycle, (0, None))
        b = at_b.get(cycle, (epoch, None))[1]
        return a < b if a is not None and b is not None else epoch % 2 == 0

    out: dict[str, Any] = {}
    for name, listed in (("listed", True), ("reversed", False)):
        keep = [c for c in table.index if first_before_copy(int(c)) == listed]
        r = cycle_ratios(table.loc[keep], copy, first)
        out[name] = {"cycles": int(r.size), "median": float(np.median(r)) if r.size else math.nan}
    return out


def read_standalone(a_dir: Path, b_dir: Path, confidence: float) -> dict[str, Any]:
    """The old way: two standalone jobs one after the other, a ratio of medians with a percentile bootstrap."""
    from harness.report.load import load_results

    a = load_results([a_dir]).rows
    b = load_results([b_dir]).rows
    x = b.loc[b["status"] == "ok", "throughput"].to_numpy(float)
    y = a.loc[a["status"] == "ok", "throughput"].to_numpy(float)
    sp = stats.speedup(x, y, confidence=confidence)
    return {"ratio": sp.ratio, "low": sp.low, "high": sp.high, "n": [int(y.size), int(x.size)],
            "verdict": stats.verdict(sp.low, sp.high)}


# ---------------------------------------------------------------- the summary

def rate(k: int, n: int, confidence: float = 0.95) -> dict[str, Any]:
    """k of n with its exact (Clopper-Pearson) binomial interval."""
    if n == 0:
        return {"k": 0, "n": 0, "rate": math.nan, "low": math.nan, "high": math.nan}
    ci = __import__("scipy.stats", fromlist=["binomtest"]).binomtest(k, n).proportion_ci(confidence, "exact")
    return {"k": int(k), "n": int(n), "rate": k / n, "low": float(ci.low), "high": float(ci.high)}


def clearance(reading: dict[str, Any]) -> float:
    """How far a pair's interval lies beyond 1, in the regime where it lies farthest (``low - 1`` above,
    ``1 - high`` below; 0 where every regime's interval holds 1, or has none): for an A/A pair, the smallest margin
    at which the report would not call the copy faster or slower (`harness.report.intervals.verdict` calls a
    regime only where its interval clears 1 +- margin)."""
    worst = 0.0
    for r in _regimes(reading):
        low, high = float(r.get("low", math.nan)), float(r.get("high", math.nan))
        if math.isfinite(low) and math.isfinite(high):
            worst = max(worst, low - 1.0, 1.0 - high)
    return worst


def measured_margin(clearances: np.ndarray, set_chi2: Sequence[Sequence[float] | None] = (),
                    sets_per_job: float = math.nan, confidence: float = 0.95) -> float:
    """The margin from the jobs' A/A readings: the larger of their clearances' 95th percentile (`clearance`;
    `numpy.quantile`, linear between order statistics: the smallest margin at which about 95% of these A/A jobs got
    no verdict) and the set part (`harness.set_offsets.set_margin` of the jobs' set readings, ``set_chi2``: what
    the offsets between sets of processes add to a job of ``sets_per_job`` sets). Why both: the clearances count
    the few jobs that happened to lie beyond 1, so they move with how wide the jobs' intervals happened to be; the
    set part rests on every set of every job, and holds where quiet cycles make intervals narrower than the sets'
    offsets."""
    return larger_part(*margin_parts(clearances, set_chi2, sets_per_job, confidence))


def margin_parts(clearances: np.ndarray, set_chi2: Sequence[Sequence[float] | None] = (),
                 sets_per_job: float = math.nan, confidence: float = 0.95) -> tuple[float, float]:
    """`measured_margin`'s two parts, (the clearances' 95th percentile, the set part): NaN where there is nothing
    to read one from."""
    clear = float(np.quantile(clearances, 0.95)) if clearances.size else math.nan
    return clear, set_offsets.set_margin(set_chi2, sets_per_job, confidence)


def _regimes(reading: dict[str, Any]) -> list[dict[str, Any]]:
    return reading.get("regimes") or [reading]  # selftest.json of older versions: the pooled reading only


def cut_short(jobs: list[dict[str, Any]], shipped_cap: float = CompareSettings.max_seconds) -> dict[float, int]:
    """The jobs that a cap shorter than the shipped one (``compare.max_seconds``, the Makefile's PAIRED_SECONDS)
    stopped, counted per cap. A job that stopped by the precision rule before its cap ran exactly as a shipped
    job runs, whatever its cap; one that did not (stopped by time, or its stop not recorded) under a shorter cap
    stopped where a shipped job would have gone on: another procedure. (A job with no recorded cap is not
    counted: nothing tells.)"""
    short: dict[float, int] = {}
    for j in jobs:
        cap = (j.get("compare") or {}).get("max_seconds")
        if cap is None or j.get("stopped_by") == "precision":
            continue
        if float(cap) < float(shipped_cap):
            short[float(cap)] = short.get(float(cap), 0) + 1
    return short


def not_as_shipped(jobs: list[dict[str, Any]], settings: SelftestSettings) -> list[str]:
    """How the jobs' procedure differed from what ships (nothing: they ran as ``make bench-paired`` runs): a
    ``compare.*`` setting of the stop rule, respawning, blocks or pinning other than shipped (`PROCEDURE`), a job stopped
    by a cap shorter than the shipped ``compare.max_seconds`` (`cut_short`: a job that stopped by the precision
    rule ran as shipped, whatever its cap), or the ceilings not resident."""
    shipped = CompareSettings()
    why = []
    for key in PROCEDURE:
        ran = {j.get("compare", {}).get(key) for j in jobs}
        if ran != {getattr(shipped, key)}:
            why.append(f"compare.{key}={'/'.join(str(v) for v in sorted(ran, key=str))} "
                       f"(shipped: {getattr(shipped, key)})")
    for cap, k in sorted(cut_short(jobs, shipped.max_seconds).items()):
        why.append(f"{k} of {len(jobs)} jobs stopped by the {cap:g}-s cap (compare.max_seconds={cap:g}), shorter "
                   f"than the shipped {shipped.max_seconds:g} s, not by the precision rule")
    missing = [r for r in SHIPPED_RESIDENTS if r not in settings.residents]
    if missing:
        why.append(f"without the ceiling resident(s) {', '.join(missing)}")
    return why


def workload_of(jobs: list[dict[str, Any]]) -> Optional[str]:
    """The workload the jobs ran (`harness.margin.workload_key`: ``gym workers=2``), None where they recorded none
    (a self-test of an older version) or ran several (then no margin is stored)."""
    keys = {workload_key(j["scenario"], j["workers"]) if "scenario" in j and "workers" in j else None for j in jobs}
    return keys.pop() if len(keys) == 1 else None


def summarize(jobs: list[dict[str, Any]], standalone: list[dict[str, Any]], settings: SelftestSettings,
              machine: dict[str, Any]) -> dict[str, Any]:
    aa = [j["aa"] for j in jobs]
    n = len(aa)
    s: dict[str, Any] = {"settings": asdict(settings), "machine": machine, "jobs": n,
                         "workload": workload_of(jobs),
                         "started": jobs[0].get("started_at") if jobs else None,
                         "ended": jobs[-1].get("started_at") if jobs else None}
    offsets = np.array([abs(a["median"] - 1.0) for a in aa], dtype=float)
    clear = np.array([clearance(a) for a in aa], dtype=float)
    chi2 = [set_offsets.job_chi2(a.get("sets") or []) for a in aa]
    so = set_offsets.pooled(a.get("sets") or [] for a in aa)
    # the sets each job's median averaged over (`job_margin.effective_sets`; older files: the sets read)
    own = [float(j.get("sets", math.nan)) for j in jobs]
    own = [x if math.isfinite(x) else float(len(a.get("sets") or [])) for x, a in zip(own, aa)]
    sets = float(np.median(own)) if own else math.nan
    clear_part, set_part = margin_parts(clear, chi2, sets, settings.confidence)
    margin = larger_part(clear_part, set_part)
    # each job at the margin of the other jobs, its set part taken at its own sets, as a shipped job's is
    loo = [measured_margin(np.delete(clear, i), chi2[:i] + chi2[i + 1:], own[i], settings.confidence)
           if n > 1 else math.nan for i in range(n)]
    by_source: dict[str, list[float]] = {}
    for j in jobs:
        by_source.setdefault(str(j.get("margin_source") or "?"), []).append(float(j.get("margin", math.nan)))
    s["margin"] = {"value": margin, "jobs": n, "rule": MARGIN_RULE, "how": MARGIN_HOW,
                   "clearance_part": clear_part, "set_part": set_part, "sets_per_job": sets,
                   "set_chi2": [list(c) if c is not None else None for c in chi2],
                   "cleared": int((clear > 0).sum()),
                   "offset_p50": float(np.median(offsets)) if n else math.nan,
                   "offset_p95": float(np.quantile(offsets, 0.95)) if n else math.nan,
                   "offset_max": float(offsets.max()) if n else math.nan,
                   "clearances": [float(c) for c in clear],
                   "ran_with": [{"margin": min(m), "margin_max": max(m), "source": src}
                                for src, m in sorted(by_source.items())]}
    s["aa_false"] = {
        # what the report said of each job, per regime, at the margin it ran with: the headline
        "as_run": rate(sum(called(job_word(_regimes(j["aa"]), j.get("margin", 0.0))) for j in jobs), n),
        # each job at the margin measured from the other jobs (out of sample)
        "measured_margin": rate(sum(called(job_word(_regimes(a), m)) for a, m in zip(aa, loo)), n)
        if n > 1 else rate(0, 0),
        "verdict": rate(sum(called(a["verdict"]) for a in aa), n),
        "verdict_independent": rate(sum(called(a["verdict_independent"]) for a in aa), n),
        "verdict_bootstrap": rate(sum(called(a["verdict_bootstrap"]) for a in aa), n)}
    s["aa_too_few"] = int(sum(a["verdict"] == stats.TOO_FEW for a in aa))
    s["aa_bias"] = aa_bias(jobs)
    s["aa_half_width_median"] = float(np.median([a["half_width"] for a in aa])) if aa else math.nan
    s["cycles_median"] = float(np.median([j.get("cycles", a["cycles"]) for j, a in zip(jobs, aa)])) if aa else math.nan
    s["stopped_by"] = {k: sum(j.get("stopped_by") == k for j in jobs) for k in ("precision", "time")}
    s["split_jobs"] = int(sum(int(j.get("regimes", 1)) > 1 for j in jobs))
    # jobs whose host shifted (their readings split only where a ratio moved); older files: their split jobs
    s["host_shift_jobs"] = int(sum(int(j.get("host_regimes", j.get("regimes", 1))) > 1 for j in jobs))
    # the A/A offset's source: sets of processes (harness.set_offsets); self-tests from before it: no sets
    s["set_offsets"] = so
    s["effects"] = {}
    smallest = None
    for e in settings.effects:
        key = f"effect_{e:g}"
        reads = [j[key] for j in jobs]
        det = rate(sum(job_word(_regimes(j[key]), j.get("margin", 0.0)) == stats.SLOWER for j in jobs), n)
        det_m = rate(sum(job_word(_regimes(r), margin) == stats.SLOWER for r in reads), n) if n else rate(0, 0)
        s["effects"][f"{e:g}"] = {"name": effect_name(settings.backend, e), "detected": det,
                                  "detected_measured_margin": det_m,
                                  "measured_median": float(np.median([r["median"] for r in reads])),
                                  "expected": 1.0 / (1.0 + e),
                                  "half_width_median": float(np.median([r["half_width"] for r in reads]))}
        if det["rate"] >= DETECTION_GOAL and (smallest is None or e < smallest):
            smallest = e
    s["smallest_detected"] = smallest
    if standalone:
        s["standalone_false"] = rate(sum(called(x["verdict"]) for x in standalone), len(standalone))
        s["standalone_ratios"] = [x["ratio"] for x in standalone]
    s["not_as_shipped"] = not_as_shipped(jobs, settings)
    s["line"] = summary_line(s)
    return s


def aa_bias(jobs: list[dict[str, Any]]) -> dict[str, Any]:
    """Whether the A/A copy reads faster on the whole: over all jobs, the mean of (A/A median - 1), how many
    medians lie above 1 with a sign test's p-value (identical residents: half above), and the same mean per start
    order (`by_start_order`). A margin covers an offset per job; a bias that all jobs share would show here."""
    from scipy.stats import binomtest

    meds = np.array([j["aa"]["median"] for j in jobs], dtype=float)
    meds = meds[np.isfinite(meds)]
    above = int((meds > 1.0).sum())
    ties = int((meds == 1.0).sum())
    n = int(meds.size) - ties
    out: dict[str, Any] = {"mean_offset": float(np.mean(meds - 1.0)) if meds.size else math.nan,
                           "above_1": above, "jobs": int(meds.size),
                           "sign_test_p": float(binomtest(above, n).pvalue) if n else math.nan}
    for order in ("listed", "reversed"):
        m = [j["aa_by_start_order"][order]["median"] for j in jobs if "aa_by_start_order" in j
             and j["aa_by_start_order"][order]["cycles"]]
        out[order] = {"mean_offset": float(np.mean(np.asarray(m) - 1.0)) if m else math.nan, "jobs": len(m)}
    return out


def _pct_ci(r: dict[str, Any]) -> str:
    return f"{r['k']}/{r['n']} ({r['rate']:.0%}, 95% CI {r['low']:.0%}-{r['high']:.0%})" if r.get("n") else "-"


def summary_line(s: dict[str, Any]) -> str:
    """One line for `make bench`'s output and the report's opening: the margin, the A/A false rate with its
    interval, detection per effect."""
    m = s["margin"]
    ran = ran_with_text(m)
    set_part = m.get("set_part", math.nan)
    of_sets = (f", or z x the offset per set / sqrt({m['sets_per_job']:.3g} sets): +-{set_part * 100:.2f}%"
               if math.isfinite(set_part) else "")
    parts = [f"margin +-{m['value'] * 100:.2f}% (the larger of the 95th percentile over {m['jobs']} jobs of how far "
             f"the A/A interval lies beyond 1: +-{m.get('clearance_part', m['value']) * 100:.2f}%{of_sets})",
             f"A/A false verdicts {_pct_ci(s['aa_false']['as_run'])} at the margin the jobs ran with ({ran})"]
    b = s.get("aa_bias")
    if b and b["jobs"] > 1:
        parts.append(f"A/A copy above 1 in {b['above_1']}/{b['jobs']} jobs (mean {b['mean_offset'] * 100:+.2f}%, "
                     f"sign test p={b['sign_test_p']:.2g})")
    so = s.get("set_offsets") or {}
    if so.get("jobs"):
        parts.append(f"A/A offset per set of processes about {so['set_sd_typical'] * 100:.2f}% (typical job; set "
                     f"medians spread x{so['chi2_per_df']:.2f} their cycles' noise, p={so['p_value']:.2g}; "
                     f"{so['sets_per_job']:g} sets per job)")
    for d in s["effects"].values():
        parts.append(f"{d['name']} detected {d['detected']['k']}/{d['detected']['n']}")
    if s.get("not_as_shipped"):
        parts.append("NOT as shipped: " + ", ".join(s["not_as_shipped"]))
    cpu = s["machine"].get("cpu_model", "?")
    on = f", {s['workload']}" if s.get("workload") else ""
    return f"What this machine resolves ({cpu}, {s['machine'].get('cpu_count', '?')} CPUs{on}): " + "; ".join(parts)


def store_margin(summary: dict[str, Any], out: Path, settings: SelftestSettings) -> str:
    """Store this machine's margin for the jobs' workload (`harness.margin.store_machine_margin`) when the jobs ran
    as shipped (`not_as_shipped`: the shipped procedure, and none stopped by a cap shorter than the shipped one),
    there were enough of them and ``selftest.store`` allows it: `measured_margin` of the A/A readings (clearances
    and sets) of these jobs and of the workload's earlier self-tests under the same procedure, the last
    `POOLED_JOBS`. What was done, in words (why not, where not stored)."""
    if not settings.store:
        return "not stored (selftest.store=false)"
    if summary["not_as_shipped"]:
        return "not stored: the jobs did not run as shipped (" + ", ".join(summary["not_as_shipped"]) + ")"
    if summary["jobs"] < MIN_JOBS_TO_STORE:
        return f"not stored: {summary['jobs']} jobs (at least {MIN_JOBS_TO_STORE} set a machine's margin)"
    value = summary["margin"]["value"]
    if not math.isfinite(value):
        return "not stored: no margin measured"
    workload = summary.get("workload")
    if not workload:
        return "not stored: the jobs recorded no single workload"
    procedure = {k: getattr(CompareSettings(), k) for k in PROCEDURE}  # as shipped: nothing else is stored
    before = workload_margin(workload, summary["machine"])
    pooled, chi2, runs = [], [], []
    if before is not None and not differing_procedure(before, procedure) and isinstance(before.get("clearances"), list):
        pooled = [float(c) for c in before["clearances"]]
        chi2 = before.get("set_chi2") if isinstance(before.get("set_chi2"), list) else []
        chi2 = chi2 if len(chi2) == len(pooled) else [None] * len(pooled)  # jobs stored without their sets
        runs = [r for r in before.get("selftests") or [] if isinstance(r, dict)]
    pooled = (pooled + [float(c) for c in summary["margin"]["clearances"]])[-POOLED_JOBS:]
    chi2 = (chi2 + list(summary["margin"].get("set_chi2") or [None] * summary["jobs"]))[-POOLED_JOBS:]
    sets = float(summary["margin"].get("sets_per_job", math.nan))
    selftests: list[dict[str, Any]] = []  # the self-tests whose jobs are in the pool, oldest first
    for run in reversed(runs + [{"selftest": str(out), "jobs": summary["jobs"]}]):
        if sum(int(r["jobs"]) for r in selftests) >= len(pooled):
            break
        selftests.insert(0, run)
    confidence = float(summary.get("settings", {}).get("confidence", 0.95))
    clear_part, set_part = margin_parts(np.array(pooled), chi2, sets, confidence)
    margin = larger_part(clear_part, set_part)
    day = str(summary.get("ended") or datetime.now().isoformat())[:10]
    record = {"margin": margin, "rule": summary["margin"]["rule"], "source": f"selftest {day}",
              "how": MARGIN_HOW + f", over the last {len(pooled)} A/A jobs of this workload's self-tests",
              "clearance_part": clear_part, "set_part": set_part, "sets_per_job": sets,
              "jobs": len(pooled), "clearances": pooled, "set_chi2": chi2, "procedure": procedure,
              "selftests": selftests,
              "latest": {"selftest": str(out), "margin": value, "jobs": summary["jobs"], "line": summary["line"]},
              "machine": summary["machine"], "scenario_overrides": summary.get("passed", [])}
    path = store_machine_margin(record, workload, summary["machine"])
    return (f"stored as this machine's margin for {workload}: +-{margin * 100:.2f}% over the last {len(pooled)} A/A "
            f"jobs of its self-tests ({path})")


def latest_summary(root: Path = ROOT / "results" / "selftest") -> Optional[Path]:
    """The newest ``selftest.json`` under ``root`` (None when the self-test never ran here)."""
    found = sorted(root.glob(f"**/{SELFTEST_FILE}"), key=lambda p: p.stat().st_mtime)
    return found[-1] if found else None


def shorter_file(seconds: float) -> str:
    """Where `reanalyze` writes a self-test read as jobs of ``seconds`` (``selftest_at_60s.json``)."""
    return f"selftest_at_{seconds:g}s.json"


def reanalyze(out: Path, at_seconds: Optional[float] = None) -> dict[str, Any]:
    """Read a finished self-test's job folders again (with this version's statistics) and rewrite its
    ``selftest.json``: the measurement stays, the reading is redone (the machine's stored margin is not touched).
    With ``at_seconds``: read every job as a cap of that many seconds of cycles would have stopped it
    (`shorter_job`), into `shorter_file` beside it (``selftest.json`` is left as it is)."""
    old = json.loads((out / SELFTEST_FILE).read_text())
    settings = SelftestSettings.of(old["settings"])
    if at_seconds is not None:
        settings.seconds = min(settings.seconds, at_seconds)
    jobs = [read_job(d, settings, at_seconds) for d in sorted(out.glob("job_*"))
            if d.is_dir() and (d / "results.csv").exists()]
    standalone = [read_standalone(d / "a", d / "b", settings.confidence) for d in sorted(out.glob("standalone_*"))
                  if (d / "b" / "results.csv").exists() and at_seconds is None]
    summary = summarize(jobs, standalone, settings, old["machine"])
    summary["passed"], summary["stored"] = old.get("passed", []), old.get("stored", "")
    summary["per_job"], summary["standalone"] = jobs, standalone
    if at_seconds is not None:
        summary["read_as"] = f"jobs of {at_seconds:g} s of cycles: each job's cycles up to that cap (a prefix)"
    name = SELFTEST_FILE if at_seconds is None else shorter_file(at_seconds)
    (out / name).write_text(json.dumps(summary, indent=1, default=str) + "\n")
    return summary


def main(argv: list[str]) -> int:
    if argv and argv[0] == "--reanalyze" and len(argv) in (2, 4):
        at = None
        if len(argv) == 4:
            try:
                if argv[2] != "--at-seconds" or float(argv[3]) <= 0:
                    raise ValueError
                at = float(argv[3])
            except ValueError:
                print(f"selftest: usage: --reanalyze <out> [--at-seconds S > 0], not {' '.join(argv)!r}",
                      file=sys.stderr)
                return 2
        try:
            print(reanalyze(Path(argv[1]), at)["line"])
        except ValueError as exc:
            print(f"selftest: {exc}", file=sys.stderr)
            return 2
        return 0
    if argv and argv[0] == "--latest-line":
        path = latest_summary()
        print(json.loads(path.read_text())["line"] + f" [{path.parent}]" if path else
              "What this machine resolves: no self-test here yet (make selftest)")
        return 0
    try:
        settings, passed = parse_args(argv)
    except ValueError as exc:
        print(f"selftest: {exc}", file=sys.stderr)
        return 2
    out = Path(settings.out or ROOT / "results" / "selftest" / datetime.now().strftime("%Y-%m-%d_%H-%M-%S"))
    check = compare_command(settings, passed, out / "check")[:-2] + ["--cfg", "job"]
    done = subprocess.run(check, cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:  # a bad key or value fails here, before any job runs
        print(f"selftest: {done.stderr.strip()[-2000:]}", file=sys.stderr)
        return 2
    out.mkdir(parents=True, exist_ok=True)
    machine = {k: v for k, v in job_metadata({}).items() if k in ("cpu_model", "cpu_count", "hostname", "git_sha")}
    jobs, standalone = [], []
    t0 = time.monotonic()
    summary: dict[str, Any] = {}
    for i in range(settings.jobs):
        job_dir = out / f"job_{i:03d}"
        _run(compare_command(settings, passed, job_dir, i), out / f"job_{i:03d}.log")
        jobs.append(read_job(job_dir, settings))
        if settings.standalone:
            a, b = out / f"standalone_{i:03d}" / "a", out / f"standalone_{i:03d}" / "b"
            _run(standalone_command(settings, passed, a), out / f"standalone_{i:03d}_a.log")
            _run(standalone_command(settings, passed, b), out / f"standalone_{i:03d}_b.log")
            standalone.append(read_standalone(a, b, settings.confidence))
        j = jobs[-1]
        print(f"selftest {i + 1}/{settings.jobs} ({time.monotonic() - t0:.0f} s): {j['cycles']} cycles "
              f"(stopped by {j['stopped_by']}), A/A {j['aa']['median']:.4f} "
              f"{job_word(_regimes(j['aa']), j['margin'])} at +-{j['margin'] * 100:.3g}% ({j['margin_source']}); "
              + "; ".join(f"{j[f'effect_{e:g}']['name']}: {j[f'effect_{e:g}']['median']:.4f} "
                          f"{job_word(_regimes(j[f'effect_{e:g}']), j['margin'])}" for e in settings.effects),
              file=sys.stderr, flush=True)
        summary = summarize(jobs, standalone, settings, machine)
        summary["passed"] = passed
        summary["per_job"] = jobs
        summary["standalone"] = standalone
        (out / SELFTEST_FILE).write_text(json.dumps(summary, indent=1, default=str) + "\n")
    summary["stored"] = store_margin(summary, out, settings)
    (out / SELFTEST_FILE).write_text(json.dumps(summary, indent=1, default=str) + "\n")
    print(summary["line"])
    print(f"margin {summary['stored']}")
    print(f"-> {out / SELFTEST_FILE}")
    return 0
