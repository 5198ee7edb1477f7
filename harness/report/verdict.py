"""The headline of the report: per configuration, who is fastest, and where the reactor stands, in words.

One row per configuration (scenario, parameters, workers, budget, seed) with four throughputs -- serial, the
best alternative (the fastest backend that is neither serial, nor a reactor executor, nor the measured
ceiling), the paper's layout of Ray (``ray:actors``: one actor per role) and the reactor
(``reactor:processes``) -- the reactor's ratio to each of the other three with its 95% bootstrap interval,
its efficiency against the ceiling, and a one-line verdict.

Verdict rule (docs/report.md): the contenders are the backends with ok rows that did the same work (equal
checksums; the ceilings ``capacity:-`` and ``capacity:lockstep`` are not contenders). F is the one with the highest
median throughput, S the runner-up; the lead is F / S, the ratio of those same medians. The words come from the
report's one rule (`harness.report.intervals.verdict`, said by `~harness.report.intervals.verdict_phrase`): F is
named *fastest* only when the interval of F / S lies above 1; otherwise "no clear difference" (or "too few
repetitions" where a side has fewer than `MIN_REPETITIONS`: a bootstrap of fewer is no interval). The
reactor's standing against F is said by the same rule. Standalone rows carry no margin: it is 0 here.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import numpy as np
import pandas as pd

from harness.labels import BackendLabel
from harness.report.intervals import EQUIVALENT, FASTER, SLOWER, TOO_FEW, no_winner_phrase, verdict as rule
from harness.report.stats import (CEILINGS, MIN_REPETITIONS, SERIAL, Speedup, _clean, _speedup, amdahl_bound,
                                  paired_trial_speedup)

REACTOR = "reactor:processes"
PAPER_RAY = "ray:actors"
#: backends whose rows are labelled references, not the same work (RLlib's sampler, EnvPool): never an alternative
REFERENCE_BACKENDS = ("rllib", "envpool")
#: backends that are never an alternative: the baseline, the reactor's executors, the ceilings
NOT_ALTERNATIVES = ("serial", "reactor", "capacity", *REFERENCE_BACKENDS)


def is_alternative(label: str | BackendLabel) -> bool:
    """A non-reactor parallel backend: what a user would run instead (Ray in any layout, vector envs). Never
    serial (on any interpreter), a reactor executor, a ceiling, a labelled reference, nor a copy: an A/A copy
    (``serial#2``, ``ray_packed#2``) or a resident with injected work (``ray_packed +2%``) measures the harness,
    not a backend (`harness.labels.BackendLabel.is_copy`)."""
    lab = label if isinstance(label, BackendLabel) else BackendLabel.parse(label)
    return lab.name not in NOT_ALTERNATIVES and lab.render() not in CEILINGS and not lab.is_copy


def fmt_ratio(sp: Optional[Speedup]) -> str:
    """``0.81x [0.75, 0.86]`` (``-`` when not measured)."""
    if sp is None or not np.isfinite(sp.ratio):
        return "-"
    return f"{_num(sp.ratio)}x [{_num(sp.low)}, {_num(sp.high)}]"


def _num(v: float) -> str:
    if not np.isfinite(v):
        return "-"
    return f"{v:.3g}" if abs(v) < 100 else f"{v:,.0f}"


def standalone_word(sp: Optional[Speedup], margin: float = 0.0) -> str:
    """The rule's word (`harness.report.intervals.verdict`) on a standalone ratio of medians: its bootstrap
    interval, or none (too few) where either side has fewer than `MIN_REPETITIONS` repetitions."""
    if sp is None or min(sp.n_a, sp.n_b) < MIN_REPETITIONS:
        return rule(math.nan, math.nan)
    return rule(sp.low, sp.high, margin)


@dataclass
class Headline:
    """One configuration's headline row."""

    config: str
    scenario: str
    unit: str
    medians: dict[str, float]
    best_alternative: Optional[str]
    fastest: Optional[str]          # None: no clear winner
    leader: Optional[str]           # highest median, winner or not
    runner_up: Optional[str]
    lead: Optional[Speedup]         # leader over runner-up
    vs_serial: Optional[Speedup]    # reactor over serial
    vs_best: Optional[Speedup]      # reactor over the best alternative
    vs_paper_ray: Optional[Speedup]  # reactor over ray:actors
    efficiency: float               # reactor median / ceiling
    ceiling_source: str
    capacity: float                 # ceiling / serial
    verdict: str
    sync_capacity: float = math.nan     # synchronized ceiling / serial (capacity:lockstep rows)
    sync_efficiency: float = math.nan   # reactor median / synchronized ceiling
    amdahl_bound: float = math.nan      # serial's (server + steps) / (server + steps / workers), measured
    vs_serial_paired: Optional[Speedup] = None  # reactor over serial paired within trials (>= 3 trials)


def verdict_text(leader: Optional[str], runner_up: Optional[str], lead: Optional[Speedup],
                 reactor_vs_leader: Optional[Speedup], has_reactor: bool) -> tuple[Optional[str], str]:
    """(winner or None, the one-line verdict) from the leader, the runner-up and the ratios (rule above)."""
    if leader is None:
        return None, "no ok rows"
    if runner_up is None:
        return None, f"only {leader} measured: no comparison"
    word = standalone_word(lead)
    winner = leader if word == FASTER else None
    if winner is not None:
        head = f"fastest: {leader} ({fmt_ratio(lead)} of {runner_up})"
    else:
        n = min(lead.n_a, lead.n_b) if lead is not None else None
        head = (f"{no_winner_phrase(word, leader, runner_up, n=n, samples='repetitions')} "
                f"({leader} / {runner_up} = {fmt_ratio(lead)})")
    if not has_reactor:
        return winner, head + f"; {REACTOR} not measured"
    if leader == REACTOR:
        return winner, head
    standing = standalone_word(reactor_vs_leader)
    how = {FASTER: "faster than it", SLOWER: "slower than it", EQUIVALENT: "equivalent to it within the margin",
           TOO_FEW: "too few repetitions to tell"}.get(standing, "no clear difference from it")
    return winner, f"{head}; reactor is {fmt_ratio(reactor_vs_leader)} of {leader} ({how})"


def headlines(rows: pd.DataFrame, summary: pd.DataFrame, invalid: set[str], unequal: set[tuple[str, str]]) -> list[Headline]:
    """The headline of every valid configuration that has a serial or reactor row (ok rows only)."""
    ok = rows[rows["status"] == "ok"]
    summ = summary.set_index(["config", "label"])
    out = []
    for config, g in ok.groupby("config", sort=True):
        if config in invalid:
            continue
        samples = {lab: _clean(s["throughput"]) for lab, s in g.groupby("label")
                   if (config, lab) not in unequal and lab not in CEILINGS}
        samples = {k: v for k, v in samples.items() if v.size}
        if SERIAL not in samples and REACTOR not in samples:
            continue
        med = {lab: float(np.median(x)) for lab, x in samples.items()}
        ranked = sorted(med, key=lambda lab: -med[lab])
        leader = ranked[0]
        runner = ranked[1] if len(ranked) > 1 else None
        lead = _speedup(samples[leader], samples[runner]) if runner else None
        alts = [lab for lab in ranked if is_alternative(lab)]
        best = alts[0] if alts else None

        def vs(other: Optional[str]) -> Optional[Speedup]:
            if other is None or REACTOR not in samples or other not in samples or other == REACTOR:
                return None
            return _speedup(samples[REACTOR], samples[other])

        winner, text = verdict_text(leader, runner, lead, vs(leader), REACTOR in samples)
        eff, src, cap, sync_cap, sync_eff = math.nan, "", math.nan, math.nan, math.nan
        key = (config, REACTOR) if (config, REACTOR) in summ.index else ((config, SERIAL) if (config, SERIAL) in summ.index else None)
        if key is not None:
            srow = summ.loc[key]
            eff = float(srow["efficiency"]) if key[1] == REACTOR else math.nan
            src, cap = str(srow["ceiling_source"]), float(srow["capacity"])
            sync_cap = float(srow.get("sync_capacity", math.nan))
            sync_eff = float(srow.get("sync_efficiency", math.nan)) if key[1] == REACTOR else math.nan
        if np.isfinite(sync_cap):
            text += f"; synchronized rounds can reach {_num(sync_cap)}x serial here (capacity:lockstep)"
            if np.isfinite(sync_eff):
                text += f", the reactor {sync_eff:.0%} of that"
        paired = paired_trial_speedup(g, REACTOR, SERIAL)
        if paired is not None:
            text += f"; paired within {paired.n_a} trials: reactor / serial {fmt_ratio(paired)}"
        bound = amdahl_bound(g)
        if np.isfinite(bound):
            text += f"; Amdahl bound {_num(bound)}x serial (serial's server part and steps, measured)"
            if REACTOR in med and SERIAL in med and med[SERIAL] > 0:
                text += f", the reactor {med[REACTOR] / med[SERIAL] / bound:.0%} of it"
        unit = str(g["unit"].iloc[0])
        out.append(Headline(config=config, scenario=str(g["scenario"].iloc[0]), unit=unit, medians=med,
                            best_alternative=best, fastest=winner, leader=leader, runner_up=runner, lead=lead,
                            vs_serial=vs(SERIAL), vs_best=vs(best), vs_paper_ray=vs(PAPER_RAY), efficiency=eff,
                            ceiling_source=src, capacity=cap, verdict=text, sync_capacity=sync_cap,
                            sync_efficiency=sync_eff, amdahl_bound=bound,
                            vs_serial_paired=paired))
    return out


@dataclass
class Reference:
    """A labelled reference row of one configuration (`harness.report.stats.references`): its median and, for
    context only, its ratio to serial and to the reactor; never part of a verdict."""

    config: str
    label: str
    reference: str
    unit: str
    median: float
    vs_serial: Optional[Speedup]
    vs_reactor: Optional[Speedup]


def reference_rows(rows: pd.DataFrame, refs: dict[tuple[str, str], str]) -> list[Reference]:
    """One `Reference` per labelled (configuration, backend) with ok rows."""
    ok = rows[rows["status"] == "ok"]
    out = []
    for (config, label), what in sorted(refs.items()):
        g = ok[ok["config"] == config]
        samples = {lab: _clean(s["throughput"]) for lab, s in g.groupby("label")}
        mine = samples.get(label)
        if mine is None or not mine.size:
            continue

        def over(other: str) -> Optional[Speedup]:
            x = samples.get(other)
            return _speedup(mine, x) if x is not None and x.size else None

        out.append(Reference(config=config, label=label, reference=what, unit=str(g["unit"].iloc[0]),
                             median=float(np.median(mine)), vs_serial=over(SERIAL), vs_reactor=over(REACTOR)))
    return out


def headline_frame(heads: list[Headline]) -> pd.DataFrame:
    """The headlines as a table (for summary files and tests)."""
    recs = []
    for h in heads:
        rec = {"config": h.config, "scenario": h.scenario, "unit": h.unit, "serial": h.medians.get(SERIAL, math.nan),
               "best_alternative": h.best_alternative or "",
               "best_alternative_median": h.medians.get(h.best_alternative, math.nan) if h.best_alternative else math.nan,
               "paper_ray": h.medians.get(PAPER_RAY, math.nan), "reactor": h.medians.get(REACTOR, math.nan),
               "fastest": h.fastest or "", "leader": h.leader or "", "efficiency": h.efficiency,
               "ceiling_source": h.ceiling_source, "capacity": h.capacity, "sync_capacity": h.sync_capacity,
               "sync_efficiency": h.sync_efficiency, "amdahl_bound": h.amdahl_bound, "verdict": h.verdict}
        for name, sp in (("vs_serial", h.vs_serial), ("vs_best", h.vs_best), ("vs_paper_ray", h.vs_paper_ray),
                         ("vs_serial_paired", h.vs_serial_paired)):
            rec[name] = sp.ratio if sp else math.nan
            rec[name + "_low"] = sp.low if sp else math.nan
            rec[name + "_high"] = sp.high if sp else math.nan
        recs.append(rec)
    return pd.DataFrame(recs)
