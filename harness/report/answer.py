"""The answer the report opens with: one line per workload configuration saying who wins, by how much, how
sure (the 95% interval), on what machine, and the reactor's share of the ceiling.

Where a configuration has a paired job (`harness.report.paired`: every backend resident, one block each per
cycle), its line reads the paired job: per-cycle ratios cancel what the host did between blocks, so it is the
reading of the reactor against serial; a host shift splits the line into regimes. A standalone configuration's
line reads its headline (`harness.report.verdict`: ratios of medians of repetitions). A configuration with
both gets the paired line, and the standalone run's best alternative beside it.

RL workloads (gym, atari, dqn, marl) and microbenchmarks (actors, object_size, overhead) are answered apart
(`answers(..., rl=True)` / ``rl=False``): no line, table or mean mixes them.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import numpy as np
import pandas as pd

from harness.labels import BackendLabel, PresetNames
from harness.report.fmt import num, percent, ratio
from harness.report.model import (Report, backend_name, is_rl, name_of, natural_key, scenario_order,
                                  short_machine)
from harness.report.paired import PairedJob, leader_and_runner_up, ratio_frame
from harness.report.intervals import FASTER, UNCLEAR, no_winner_phrase, verdict
from harness.report.stats import CEILING, CEILINGS, SERIAL, SYNC_CEILING, unheld_rounds
from harness.report.verdict import REACTOR, REFERENCE_BACKENDS, Headline, is_alternative, standalone_word  # noqa: F401

@dataclass
class Reading:
    """One ratio with its interval: ``numerator`` over ``denominator`` (labels), and where it came from."""

    numerator: str
    denominator: str
    median: float
    low: float
    high: float

    def text(self) -> str:
        return ratio(self.median, self.low, self.high)

    def inverse(self) -> "Reading":
        inv = lambda v: 1 / v if v and np.isfinite(v) else math.nan  # noqa: E731
        return Reading(self.denominator, self.numerator, inv(self.median), inv(self.high), inv(self.low))


@dataclass
class Part:
    """A regime's answer (or the whole job's): the winner, the reactor over serial, the ceiling shares."""

    span: str                       # "" for the whole job, else "cycles 0-56"
    leader: Optional[str]
    runner_up: Optional[str]
    lead: Optional[Reading]         # leader over runner-up
    reactor: Optional[Reading]      # the reactor over serial (on the same interpreter)
    ceiling: Optional[Reading] = None       # the reactor over the measured ceiling (capacity)
    sync_ceiling: Optional[Reading] = None  # the reactor over the synchronized ceiling (capacity_lockstep)
    ceiling_source: str = "measured"
    #: a paired job's reactor over its best alternative in this regime (the same per-cycle ratios as ``lead``)
    vs_best: Optional[Reading] = None
    #: the rule's word on ``lead`` (`harness.report.intervals.verdict`), the margin it used, and how many
    #: cycles (or repetitions: ``samples``) the lead stands on
    word: str = UNCLEAR
    margin: float = 0.0
    n: Optional[int] = None
    samples: str = "cycles"

    @property
    def winner(self) -> Optional[str]:
        return self.leader if self.lead is not None and self.word == FASTER else None


@dataclass
class Answer:
    """One configuration's answer line."""

    config: str
    scenario: str
    workload: str
    source: str                     # "paired" or "standalone"
    parts: list[Part]
    machine: str
    how: str                        # "paired, 209 cycles" / "standalone, 12 repetitions each"
    extra: list[str] = field(default_factory=list)
    #: the reactor over the best alternative (the fastest backend that is neither serial, nor a reactor executor,
    #: nor a ceiling: from the paired job where it holds one, else from a standalone run), and that alternative
    vs_best: Optional[Reading] = None
    #: the names the run stored for its backends (`harness.report.model.Report.presets`)
    names: Optional[PresetNames] = None

    @property
    def rl(self) -> bool:
        return is_rl(self.scenario)

    def cells(self) -> list[str]:
        """The line as table cells: workload, who wins, reactor / serial, the ceiling shares, how, machine."""
        many = len(self.parts) > 1
        tag = lambda p, text: f"{text} ({p.span})" if many and p.span and text != "-" else text  # noqa: E731
        join = lambda texts: "; ".join(texts)  # noqa: E731
        return [self.workload,
                join(tag(p, _who(p, self.names)) for p in self.parts),
                join(tag(p, p.reactor.text() if p.reactor else "-") for p in self.parts),
                self._best_text(tag) or "-",
                join(tag(p, _shares(p, short=True) or "-") for p in self.parts),
                "; ".join([self.how, *self.extra]), self.machine]

    def text(self) -> str:
        """The line: ``workload: <who wins>; reactor <x> serial [lo, hi]; <share> of the ceiling (<how>; machine)``."""
        clauses = [_part_text(p, len(self.parts) > 1, self.names) for p in self.parts]
        body = "; then ".join(clauses) if len(self.parts) > 1 else clauses[0]
        many = len(self.parts) > 1
        best = self._best_text(lambda p, text: f"{text} ({p.span})" if many and p.span else text)
        tail = "; ".join([*([f"reactor {best}, the best alternative"] if best else []), *self.extra,
                          f"{self.how}; {self.machine}"])
        return f"{self.workload}: {body} ({tail})"

    def _best_text(self, tag: Callable[[Part, str], str]) -> str:
        """The reactor over the best alternative, named: per regime where the paired job held one (read as the
        regime's other ratios are, so it never disagrees with who wins), else the whole reading; "" for none."""
        per_part = [p.vs_best for p in self.parts]
        if any(r is not None for r in per_part):
            name = backend_name(next(r for r in per_part if r is not None).denominator, self.names)
            return "; ".join(tag(p, p.vs_best.text() if p.vs_best is not None else "-") for p in self.parts) + \
                f" {name}"
        if self.vs_best is None:
            return ""
        return f"{self.vs_best.text()} {backend_name(self.vs_best.denominator, self.names)}"


def _who(p: Part, names: Optional[PresetNames] = None) -> str:
    """Who wins, in the rule's words (`harness.report.intervals.verdict_phrase`): the winner with its lead, or
    why there is none: equivalent within the margin, no clear difference, too few cycles."""
    if p.leader is None:
        return "no ok rows"
    if p.runner_up is None or p.lead is None:
        return f"only {backend_name(p.leader, names)} measured"
    leader, runner = backend_name(p.leader, names), backend_name(p.runner_up, names)
    if p.winner is not None:
        return f"{leader}, {p.lead.text()} over {runner}"
    return f"{no_winner_phrase(p.word, leader, runner, p.margin, p.n, p.samples)} ({p.lead.text()})"


def _part_text(p: Part, spans: bool, names: Optional[PresetNames] = None) -> str:
    out = [(f"{p.span}: " if spans and p.span else "") + _who(p, names)]
    if p.reactor is not None and not (p.lead is not None and p.leader == p.reactor.numerator
                                      and p.runner_up == p.reactor.denominator):
        out.append(f"{backend_name(p.reactor.numerator, names)} {p.reactor.text()} "
                   f"{backend_name(p.reactor.denominator, names)}")
    shares = _shares(p)
    if shares:
        out.append("reactor at " + shares)
    return ", ".join(out)


#: how far the never-meeting ceiling may fall below the synchronized one before it is flagged (the slack of
#: `harness.report.stats.implausible_ceilings`): k copies that never meet cannot do less than k that meet
CEILING_SLACK = 0.05
#: said beside a share above 100%: the backend beat what was measured as its bound
OVER_CEILING = "over 100%: not a bound here"
#: said where the never-meeting ceiling measured below the synchronized one
CEILINGS_INVERTED = "never-meeting ceiling below the synchronized one"


def share_flag(share: float) -> str:
    """`OVER_CEILING` for a share of a ceiling above 100%, else ""."""
    return OVER_CEILING if np.isfinite(share) and share > 1.0 else ""


def ceilings_inverted(share_measured: float, share_sync: float) -> bool:
    """Whether the measured (never-meeting) ceiling lies below the synchronized one by more than `CEILING_SLACK`:
    the reactor's share of it is then the larger share."""
    return bool(np.isfinite(share_measured) and np.isfinite(share_sync) and share_sync > 0
                and share_measured > share_sync * (1 + CEILING_SLACK))


def over_ceilings(p: Part) -> list[tuple[str, bool]]:
    """A part's shares above 100%: what to say of each, and whether it is of the synchronized ceiling."""
    return [(f"{percent(r.median)} of the {what} ceiling: {OVER_CEILING}", what == "synchronized")
            for r, what in ((p.sync_ceiling, "synchronized"), (p.ceiling, p.ceiling_source))
            if r is not None and share_flag(r.median)]


def ceiling_flags(p: Part) -> list[str]:
    """What a reader must know about a part's ceilings: a share above 100% (`over_ceilings`), a never-meeting
    ceiling below the synchronized one. Said beside the shares and in the warnings
    (`harness.report.tables.warnings`)."""
    out = [text for text, _ in over_ceilings(p)]
    if (p.ceiling is not None and p.sync_ceiling is not None and p.ceiling_source == "measured"
            and ceilings_inverted(p.ceiling.median, p.sync_ceiling.median)):
        out.append(CEILINGS_INVERTED)
    return out


def _shares(p: Part, short: bool = False) -> str:
    shares = []
    if p.sync_ceiling is not None:
        flag = share_flag(p.sync_ceiling.median)
        shares.append(f"{percent(p.sync_ceiling.median)} " + ("synchronized" if short else "of the synchronized ceiling")
                      + (f" ({flag})" if flag else ""))
    if p.ceiling is not None:
        flag = share_flag(p.ceiling.median)
        shares.append(f"{percent(p.ceiling.median)} " + (p.ceiling_source if short else
                                                         f"of the {p.ceiling_source} ceiling")
                      + (f" ({flag})" if flag else ""))
    if p.ceiling is not None and p.sync_ceiling is not None and p.ceiling_source == "measured" \
            and ceilings_inverted(p.ceiling.median, p.sync_ceiling.median):
        shares.append(f"({CEILINGS_INVERTED})")
    return (", " if short else " and ").join(shares)


ANSWER_HEADER = ["workload", "who wins (95% interval)", "reactor / serial (95% interval)",
                 "reactor / best alternative", "reactor's share of the ceiling", "measured", "machine"]


# ------------------------------------------------------------------------------------------ paired jobs

def _reactor_label(labels: list[str]) -> Optional[str]:
    """The reactor backend a line reads: the processes executor (the preset ``reactor``) on the default
    interpreter, else the first reactor executor there."""
    parsed = {lab: BackendLabel.parse(lab) for lab in labels}
    reactors = [lab for lab, p in parsed.items() if p.name == "reactor" and not p.is_copy]  # never a copy
    default = [lab for lab in reactors if not parsed[lab].interpreter]
    for pool in (default, reactors):
        if REACTOR in pool:
            return REACTOR
        if pool:
            return sorted(pool)[0]
    return None


def _reading(frame: pd.DataFrame, a: str, b: str) -> Optional[Reading]:
    """a over b from the paired frame (either direction), None when the job did not hold both."""
    for num_, den, flip in ((a, b, False), (b, a, True)):
        sel = frame[(frame["numerator"] == num_) & (frame["denominator"] == den)]
        if len(sel):
            r = sel.iloc[0]
            out = Reading(num_, den, float(r["median"]), float(r["ci_low"]), float(r["ci_high"]))
            return out.inverse() if flip else out
    return None


def paired_best_alternative(medians: dict[str, float]) -> Optional[str]:
    """The fastest alternative of a paired job by median block throughput (``medians``: label -> median): a Ray
    layout, a vectorizer; never serial, a reactor executor, a ceiling, an A/A copy (``#2``), a resident with
    injected work (``+2%``) or a labelled reference (`harness.report.verdict.is_alternative`)."""
    alts = [lab for lab in medians if is_alternative(lab) and np.isfinite(medians[lab])]
    return max(alts, key=lambda lab: medians[lab]) if alts else None


def paired_parts(job: PairedJob, best: Optional[str] = None) -> list[Part]:
    """One `Part` per regime of a paired job (one for the whole job without a host shift); ``best``: the job's best
    alternative (`paired_best_alternative`), read against the reactor in each regime."""
    frame = ratio_frame([job])
    if not len(frame):
        return []
    parts = []
    contenders = [lab for lab in job.labels if lab not in CEILINGS]
    reactor = _reactor_label(contenders)
    serial = BackendLabel.parse(reactor).serial_baseline().render() if reactor else SERIAL
    for (lo_i, hi_i), (regime, g) in zip(job.regimes, frame.groupby("regime", sort=False)):
        t = job.table.iloc[lo_i:hi_i]
        # the leader by the median of per-cycle ratios: the statistic its lead is printed in; beside real backends
        # never an A/A or injected-effect copy (a job of one backend and its copies still reads "serial vs serial#2")
        leader, runner = leader_and_runner_up(t, contenders)
        lead = _reading(g, leader, runner) if leader and runner else None
        parts.append(Part(
            span="" if regime == "all" else str(regime), leader=leader, runner_up=runner, lead=lead,
            word=verdict(lead.low, lead.high, job.margin) if lead else UNCLEAR, margin=job.margin, n=len(t),
            reactor=_reading(g, reactor, serial) if reactor and serial in contenders else None,
            ceiling=_reading(g[g["kind"] == "efficiency"], reactor, CEILING) if reactor else None,
            sync_ceiling=_reading(g[g["kind"] == "efficiency"], reactor, SYNC_CEILING) if reactor else None,
            vs_best=_reading(g[g["kind"] == "ratio"], reactor, best) if reactor and best else None))
    return parts


def _job_meta(rep: Report, job: PairedJob) -> dict[str, Any]:
    rows = rep.paired_rows
    if rows is None or not len(rows) or "job" not in rows:
        return {}
    sel = rows[rows["job"] == job.job]
    return sel["meta"].iloc[0] if len(sel) and isinstance(sel["meta"].iloc[0], dict) else {}


def paired_answer(rep: Report, job: PairedJob, twins: int = 1) -> Optional[Answer]:
    # the best alternative resident in the job (a Ray layout), by median block throughput over the whole job;
    # the reactor over it is read per regime, with the regime's other ratios (`paired_parts`)
    reactor = _reactor_label([lab for lab in job.labels if lab not in CEILINGS])
    best = paired_best_alternative({lab: float(job.table[lab].median()) for lab in job.labels if lab in job.table})
    parts = paired_parts(job, best if reactor else None)
    if not parts:
        return None
    name = name_of(rep, job.config)
    if twins > 1:  # two paired jobs of one configuration stay apart by their folder
        name += f" [{job.job.split(':', 1)[-1]}]"
    shift = f", host shift: {len(parts)} regimes" if len(parts) > 1 else ""
    answer = Answer(config=job.config, scenario=job.scenario, workload=name, source="paired", parts=parts,
                    machine=short_machine(_job_meta(rep, job)), how=f"paired, {job.cycles} cycles{shift}",
                    names=rep.presets)
    unheld = _unheld_sync_ceiling(rep, job)
    if unheld is not None:
        answer.extra.append(UNHELD_ONE if unheld <= 1 else UNHELD_SOME.format(rounds=unheld))
    return answer


#: said beside a paired job's shares where its synchronized ceiling's copies were not held to its one-round blocks
UNHELD_ONE = "synchronized ceiling of an earlier version: one copy alone each block, not a bound"
#: ... to its short blocks
UNHELD_SOME = "synchronized ceiling of an earlier version: one round in {rounds:.0f} one copy alone"


def _unheld_sync_ceiling(rep: Report, job: PairedJob) -> Optional[float]:
    """The job's rounds per block where its synchronized ceiling's copies were not held to them and they were
    short (`harness.report.stats.unheld_rounds`), else None."""
    rows = rep.paired_rows
    if rows is None or not len(rows) or "job" not in rows or "label" not in rows:
        return None
    return unheld_rounds(rows[(rows["job"] == job.job) & (rows["label"] == SYNC_CEILING)
                              & (rows["status"] == "ok")])


# ------------------------------------------------------------------------------------------ standalone jobs

def _speedup_reading(a: str, b: Optional[str], sp: Any) -> Optional[Reading]:
    if sp is None or b is None or not np.isfinite(sp.ratio):
        return None
    return Reading(a, b, float(sp.ratio), float(sp.low), float(sp.high))


def standalone_answer(rep: Report, h: Headline) -> Answer:
    share = math.nan if not np.isfinite(h.efficiency) else h.efficiency
    part = Part(span="", leader=h.leader, runner_up=h.runner_up,
                lead=_speedup_reading(h.leader or "", h.runner_up, h.lead), word=standalone_word(h.lead),
                n=min(h.lead.n_a, h.lead.n_b) if h.lead is not None else None, samples="repetitions",
                reactor=_speedup_reading(REACTOR, SERIAL, h.vs_serial),
                ceiling=Reading(REACTOR, CEILING, share, math.nan, math.nan) if np.isfinite(share) else None,
                sync_ceiling=(Reading(REACTOR, SYNC_CEILING, h.sync_efficiency, math.nan, math.nan)
                              if np.isfinite(h.sync_efficiency) else None),
                ceiling_source=h.ceiling_source or "measured")
    extra: list[str] = []
    rows = rep.results.rows
    sel = rows[(rows["config"] == h.config) & (rows["status"] == "ok")]
    reps = sel.groupby("label").size()
    how = (f"standalone, {int(reps.min())}-{int(reps.max())} reps" if len(reps) and reps.min() != reps.max()
           else f"standalone, {int(reps.max()) if len(reps) else 0} reps")
    meta = sel["meta"].iloc[0] if len(sel) else {}
    return Answer(config=h.config, scenario=h.scenario, workload=name_of(rep, h.config), source="standalone",
                  parts=[part], machine=short_machine(meta), how=how, extra=extra,
                  vs_best=_speedup_reading(REACTOR, h.best_alternative, h.vs_best), names=rep.presets)


def _standalone_best(h: Headline) -> Optional[Reading]:
    """What a standalone run adds beside a paired line: the reactor over the best alternative."""
    return _speedup_reading(REACTOR, h.best_alternative, h.vs_best)


def answers(rep: Report, rl: Optional[bool] = True) -> list[Answer]:
    """One answer per configuration (per paired job), RL workloads (``rl=True``), microbenchmarks (False) or
    all (None); in the order gym, atari, dqn, marl, then by name."""
    heads = {h.config: h for h in (rep.analysis.headlines or [])}
    out: list[Answer] = []
    seen: set[str] = set()
    jobs = rep.paired or []
    per_config = pd.Series([j.config for j in jobs]).value_counts().to_dict() if jobs else {}
    for job in jobs:
        a = paired_answer(rep, job, per_config.get(job.config, 1))
        if a is None:
            continue
        if all(p.vs_best is None for p in a.parts) and job.config in heads:  # no alternative resident in the job
            a.vs_best = _standalone_best(heads[job.config])
            a.extra.append("best alternative: standalone")
        seen.add(job.config)
        out.append(a)
    out += [standalone_answer(rep, h) for c, h in heads.items() if c not in seen]
    if rl is not None:
        out = [a for a in out if a.rl == rl]
    return sorted(out, key=lambda a: (scenario_order(a.scenario), natural_key(a.workload)))
