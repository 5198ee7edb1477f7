"""The scaling prediction: what share of the synchronized ceiling the reactor's processes executor would reach with
a core per process, from one job's per-process costs (`predict_run`, ``python -m harness.report --predict``).

Why: the many-core machine is rarely at hand, and on 2 cores a job at ``workers=16`` runs 16 processes that take
turns on the cores, so its wall times say nothing about 16 cores. Each process's CPU time outside its waits
(``bd_w<i>_cpu_us``, the breakdown's thread CPU clock) is not inflated that way: it is what the process would spend
per round with a core of its own. From those costs the round's critical path at k processes is:

    process 0 runs the server (scatter, then the gather of everyone's results) and steps its own members, which
    overlap the other processes' steps; the others step their members between two hand-offs (the scatter to
    them, their results to process 0). So

        round = max(c_0, (c_0 - m_0 * s) + max_{p>0} c_p + h)

    with c_p the CPU per round of process p, m_0 the members process 0 steps, s one member's step (the median
    over the other processes of c_p / m_p) and h the round's two hand-offs on the critical path, read from the
    breakdown's own hand-off column (``bd_w<i>_handoff_us``, each process's hand-offs per round): process 0's
    (the results reaching it) plus the median of the others' (the scatter reaching them), from a job whose
    processes each had a core (no more processes than cores, on a host whose load
    average was below its cores when the job started: in the same run; else `DEFAULT_HANDOFF_US`).
    The output gives the round's parts beside it (`critical_parts`): process 0's server part ``c_0 - m_0 * s``
    and the slowest other process, so that it says what a round at k cores waits for.

Where the job's processes outnumbered the cores (16 processes on 2), each took turns on a core, and every turn
left it cold caches: CPU per round is not inflated by the waiting, but it is by the cold start after it, which
short Python steps (CartPole's) pay far more than long ones (an Atari frame). So such a row's costs are first divided by its **cache inflation**: one member's
step in that row (the median over the other processes of c_p / m_p) over one member's step in the same run's
jobs whose processes each had a core (same workload and bank), at least 1; both steps taken as fractions of serial's
CPU per round in their own cycles where the rows have it, so that a job run while the host was slower (a VM's
vCPUs move by 2x between jobs) is not read as cache inflation. The server's part is divided by the
same factor: it runs the same kind of short Python between the same turns. The warm step is like for like only
where its processes stepped as many members as the row's: a process stepping one member carries its per-round costs
(tag advance, meetings) in that step and runs it right after a wait, one stepping 8 spreads them and runs 7 warm. So
a job whose other processes each had a core and stepped as many members as the row's comes first (any bank: `make
proxy` runs one at ``workers=2`` with a bank of 2 for 16 on 16), read against serial's step per member in its cycle
(``serial_steps_us`` over the bank, which does not depend on the bank as serial's round does), and the row's
hand-off is taken from the same jobs, whose waits are as short as the row's would be (``like``). A run with no
such job is not corrected, and the output says so (``inflation_from``: ``like``, ``run``, ``own`` for a row with a
core per process, ``none``).

On a many-core machine processes that step the same members do not run at one speed (its cores differ, and each
round's luck), and a round waits for the slowest; on 2 shared cores their differences are their turns'. So with a
target machine (``--machine``) an oversubscribed row's ``max_{p>0} c_p`` is its median other process times that
machine's measured spread (`process_spreads`), else the row's own (``spread_from``).

Nothing is fitted to the shares it predicts. The predicted speedup over serial is serial's round over that
round, paired as the measured ratios are: each reactor row (one block) against serial's CPU per round in the same
cycle of the same job (its process tree's ``tree_cpu_ms_per_unit``: CPU time, like the reactor's costs), the
median over the rows of that ratio (a row whose cycle has no such serial row: against serial's median in its job,
else in the run); the predicted share of the ceiling is the speedup
over the ceiling's own speedup: the synchronized ceiling measured in the same paired job where there is one,
else the target machine's (``--machine``: a reference run of that machine, its paired ceiling at the same
workload and worker count), else ``workers`` (an ideal machine: said in the output).

Beside each share, the **Amdahl share** (`amdahl_shares`): serial's measured Amdahl bound over the workers, the
most of the ceiling any round that keeps serial's server part serial reaches at the copies' speed per core; a share
above it is flagged (`amdahl_check`).

Rows without the CPU column (runs before it existed) are not used: their wall-time parts are inflated wherever
processes outnumbered cores, and in those runs process 0's work also held the time the harness's clock spent
inside its reaction (a paired job's pauses between blocks, reports between repetitions), up to 20 times its
round's real work.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import numpy as np
import pandas as pd

from harness.labels import BackendLabel
from harness.report.intervals import MedianInterval, median_interval
from harness.report.load import load_results
from harness.report.stats import serial_amdahl_bound, unheld_rounds
from harness.results import TIMED_CPU_WINDOW

#: the round's two hand-offs (scatter, results) when no job of the run measured them with a core per process:
#: `backends.reactor.ReactorConfig.handoff_us`'s default (docs/processes.md, "Where a round's time goes")
DEFAULT_HANDOFF_US = 10.0
#: a process's (a thread's) CPU per round: the column every prediction reads (rows from before it are not used)
_RANK = re.compile(r"^bd_w(\d+)_cpu_us$")
#: a process's CPU, or (rows from before the CPU column) its work per round: `process_spreads` reads either
_PART = re.compile(r"^bd_w(\d+)_(cpu|work)_us$")


@dataclass(frozen=True)
class RoundCosts:
    """One reactor row's per-process costs per round, in microseconds.

    Attributes:
        costs: the CPU time per round of each process outside its waits, by rank.
        members: bank members each process steps, by rank (the row's ``bd_w<i>_members``).
        handoff_us: the round's two hand-offs on the critical path (wall time): process 0's hand-offs per round
            (the others' results reaching it) plus the median of the other processes' (the scatter reaching them);
            process 0's alone in a row of one process.
        oversubscribed: more processes than the job's host had cores, or a host busy with other load (its
            hand-offs waited for cores).
    """

    costs: tuple[float, ...]
    members: tuple[int, ...]
    handoff_us: float
    oversubscribed: bool


def round_costs(extra: dict[str, Any], cores: int | None) -> RoundCosts | None:
    """The costs a reactor row's breakdown recorded, or None for a row without one.

    Args:
        extra: the row's ``extra`` (its ``bd_w<i>_*_us`` columns).
        cores: the host's usable cores (the row's metadata), None if unknown.
    """
    ranks = sorted(int(m.group(1)) for k in extra if (m := _RANK.match(k)))
    if not ranks or ranks != list(range(len(ranks))):
        return None  # (also a row from before the CPU column: the module docstring says why it is not used)
    n = len(ranks)
    costs = tuple(float(extra[f"bd_w{r}_cpu_us"]) for r in ranks)
    if not all(f"bd_w{r}_members" in extra for r in ranks):
        return None  # where the members ran is the backend's record (the report reads rows, not the runtime)
    members = tuple(int(extra[f"bd_w{r}_members"]) for r in ranks)
    hands = [float(extra.get(f"bd_w{r}_handoff_us", 0.0)) for r in ranks]
    handoff = hands[0] + (float(np.median(hands[1:])) if n > 1 else 0.0)
    return RoundCosts(costs, members, handoff, cores is not None and n > cores)


def _others_per_member(costs: Sequence[float], members: Sequence[int]) -> list[float]:
    """Each process but process 0 that steps a member: its cost per member."""
    return [float(c) / m for c, m in zip(costs[1:], members[1:]) if m > 0]


def member_step(costs: Sequence[float], members: Sequence[int]) -> float:
    """One member's step: the median over the processes other than process 0 of CPU per member (NaN where none
    steps a member)."""
    steps = _others_per_member(costs, members)
    return float(np.median(steps)) if steps else np.nan


def others_members(members: Sequence[int]) -> int | None:
    """The members each process but process 0 steps where they all step the same number (at least one), else None:
    what a warm reference must match to be like for like (`cache_inflation`)."""
    rest = set(members[1:])
    return rest.pop() if len(rest) == 1 and min(members[1:]) > 0 else None


def cache_inflation(costs: RoundCosts, warm_step: float | None) -> float:
    """How much a row's CPU per round is inflated by processes taking turns on fewer cores (the module docstring):
    its member step over ``warm_step``, one member's step where each process had a core; 1 for a row with a core
    per process, and where there is no ``warm_step`` (nothing to compare with) or no member step. Never below 1:
    a turn never makes a step cheaper, so a ratio below 1 is the noise between the two jobs."""
    if not costs.oversubscribed or not warm_step or not np.isfinite(warm_step):
        return 1.0
    step = member_step(costs.costs, costs.members)
    return max(1.0, step / warm_step) if np.isfinite(step) else 1.0


def critical_parts(costs: Sequence[float], members: Sequence[int],
                   spread: float | None = None) -> tuple[float, float]:
    """The two parts of the critical path at one core per process (the module docstring's formula), in the costs'
    unit: process 0's server part (its CPU beyond its own members' steps: serial with every other process's step)
    and the slowest other process's step; (process 0's whole cost, 0) for a program of one process.

    Args:
        costs: per process, by rank (process 0 runs the server).
        members: bank members per process, by rank.
        spread: where the costs' own differences are not the target machine's (processes that took turns on
            fewer cores differ by their turns), how much slower than the median other process that machine runs
            the slowest (`process_spreads`): the slowest other is then the median step times its members times
            ``spread``; None: the slowest other process's own cost.
    """
    c0, rest = float(costs[0]), [float(c) for c in costs[1:]]
    if not rest:
        return c0, 0.0
    step = member_step(costs, members)
    step = 0.0 if np.isnan(step) else step
    server = max(0.0, c0 - members[0] * step)
    slowest = max(rest) if spread is None or not step else step * max(members[1:]) * spread
    return server, slowest


def critical_round(costs: Sequence[float], members: Sequence[int], handoff_us: float,
                   spread: float | None = None) -> float:
    """The round at one core per process: the server part, the slowest other process's step and the two hand-offs
    (`critical_parts`), or process 0's own cost where that is longer (it steps members enough to outlast them).

    Args:
        costs, members, spread: as `critical_parts`'.
        handoff_us: the round's two hand-offs on the critical path together.
    """
    return round_from_parts(costs, critical_parts(costs, members, spread), handoff_us)


def round_from_parts(costs: Sequence[float], parts: tuple[float, float], handoff_us: float) -> float:
    """`critical_round` from its `critical_parts` already taken (a program of one process: its cost)."""
    if len(costs) < 2:
        return float(costs[0])
    return max(float(costs[0]), parts[0] + parts[1] + handoff_us)


def own_spread(costs: Sequence[float], members: Sequence[int]) -> float:
    """The slowest other process over the median other, per member (NaN with fewer than two others that step)."""
    per = _others_per_member(costs, members)
    return max(per) / float(np.median(per)) if len(per) > 1 and np.median(per) > 0 else np.nan


@dataclass(frozen=True)
class Subject:
    """What a prediction is about: the reactor under one executor on one interpreter, read against serial and the
    ceilings on that same interpreter (the free-threaded one's are other rows than the default one's).

    Why both executors: the processes executor is the runtime's answer on stock CPython; the threads executor on
    a free-threaded interpreter is the paper's own setup, and its thread 0 runs the server as process 0 does, so the
    same critical path holds with threads for processes (`reactor_backend.executors.ThreadBreakdown` records the
    same per-thread CPU). Threads under a GIL take turns whatever the cores, so they are never predicted.

    Attributes:
        executor: ``processes`` or ``threads``.
        interpreter: ``""`` (the harness's) or ``ft`` (`harness.labels.BackendLabel.interpreter`).
    """

    executor: str = "processes"
    interpreter: str = ""

    @property
    def name(self) -> str:
        """``processes``, ``threads ft``: the reactor's variant as the rows write it (without a process cap)."""
        return f"{self.executor} {self.interpreter}" if self.interpreter else self.executor

    def reactor(self, rows: pd.DataFrame) -> pd.Series:
        """The reactor's rows under this executor and interpreter (``processes-max1024`` is the processes executor)."""
        return self._rows(rows, "reactor", lambda variant: _executor(variant) == self.executor)

    def serial(self, rows: pd.DataFrame) -> pd.Series:
        """Serial's rows on this interpreter."""
        return self._rows(rows, "serial", lambda variant: True)

    def ceiling(self, rows: pd.DataFrame, lockstep: bool = True) -> pd.Series:
        """The synchronized ceiling's rows (``capacity:lockstep``) on this interpreter, or with ``lockstep=False`` the
        never-meeting one's (``capacity:-``)."""
        want = "lockstep" if lockstep else "-"
        return self._rows(rows, "capacity", lambda variant: variant == want)

    def _rows(self, rows: pd.DataFrame, backend: str, variant: Callable[[str], bool]) -> pd.Series:
        """The rows of ``backend`` on this interpreter whose variant (without the interpreter tag) ``variant`` takes."""
        return pd.Series([x.name == backend and x.interpreter == self.interpreter and variant(x.variant)
                          for x in _labels(rows)], index=rows.index, dtype=bool)


#: the processes executor on the harness's interpreter: every many-core run's subject
PROCESSES = Subject()


def _labels(rows: pd.DataFrame) -> list[BackendLabel]:
    return [BackendLabel.from_row(b, v) for b, v in zip(rows["backend"], rows["variant"])]


def _executor(variant: str) -> str:
    """The reactor's executor from its variant: ``processes-max1024`` -> ``processes``."""
    return variant.split("-")[0]


def subjects(rows: pd.DataFrame) -> list[Subject]:
    """The subjects the rows' reactor rows hold, the processes executor on the harness's interpreter first: the
    processes executor on any interpreter, the threads executor on a free-threaded one (module docstring)."""
    found = set()
    for x in _labels(rows[rows["backend"] == "reactor"]):
        executor = _executor(x.variant)
        if executor == "processes" or (executor == "threads" and x.interpreter == "ft"):
            found.add(Subject(executor, x.interpreter))
    return sorted(found, key=lambda s: (s != PROCESSES, s.executor, s.interpreter))


def _paired_series(rows: pd.DataFrame, num: pd.Series, den: pd.Series) -> np.ndarray | None:
    """Per paired cycle (same job and cycle, in job and cycle order), ``num`` rows' throughput over ``den`` rows'."""
    if "cycle" not in rows or rows.loc[num | den, "cycle"].isna().all():
        return None
    a = rows[num].groupby(["job", "cycle"])["throughput"].median()
    b = rows[den].groupby(["job", "cycle"])["throughput"].median()
    both = pd.concat([a, b], axis=1, keys=["a", "b"]).dropna().sort_index()
    if both.empty:
        return None
    return (both["a"] / both["b"]).to_numpy(dtype=float)


Mask = Callable[[pd.DataFrame], pd.Series]


def paired_series(rows: pd.DataFrame, num: Mask, den: Mask) -> dict[tuple[str, int, int], np.ndarray]:
    """Per (workload, bank, workers), the per-cycle ratios of the ``num`` rows' throughput over the ``den`` rows';
    only where paired jobs hold both."""
    out = {}
    for key, g in rows.groupby(["scenario", "num_envs", "workers"]):
        r = _paired_series(g, num(g), den(g))
        if r is not None:
            out[(str(key[0]), int(key[1]), int(key[2]))] = r
    return out


def paired_ratios(rows: pd.DataFrame, num: Mask, den: Mask) -> dict[tuple[str, int, int], float]:
    """Per (workload, bank, workers), the median over paired cycles of the ``num`` rows' throughput over the
    ``den`` rows' (`paired_series`)."""
    return {k: float(np.median(v)) for k, v in paired_series(rows, num, den).items()}


def reactor_speedups(rows: pd.DataFrame, subject: Subject = PROCESSES) -> dict[tuple[str, int, int], float]:
    """The reactor (``subject``'s executor) over serial (on its interpreter) in paired jobs."""
    return paired_ratios(rows, subject.reactor, subject.serial)


def ceiling_speedups(rows: pd.DataFrame, subject: Subject = PROCESSES) -> dict[tuple[str, int, int], float]:
    """The synchronized ceiling over serial in paired jobs (both on ``subject``'s interpreter)."""
    return paired_ratios(rows, subject.ceiling, subject.serial)


def measured_share_intervals(rows: pd.DataFrame, subject: Subject = PROCESSES
                             ) -> dict[tuple[str, int, int], MedianInterval]:
    """The reactor (``subject``) over the synchronized ceiling in paired jobs: the median over cycles with the
    report's interval (`median_interval`: NaN ends where the cycles are too few for one), so that a prediction is
    checked against what the measurement can tell."""
    return {k: median_interval(v) for k, v in paired_series(rows, subject.reactor, subject.ceiling).items()}


def unheld_ceiling(ceiling: pd.DataFrame, where: str) -> str:
    """What a synchronized ceiling measured by an earlier version says, where its blocks were short
    (`harness.report.stats.unheld_rounds`); "" where that does not apply.

    Args:
        ceiling: the synchronized ceiling's ok rows at one workload, bank and worker count.
        where: whose rows, for the text ("the run's", "the machine's").
    """
    rounds = unheld_rounds(ceiling)
    if rounds is None:
        return ""
    if rounds <= 1:
        return (f"{where} synchronized ceiling ran one round a block with copies not held to its blocks (an earlier "
                "version): every timed round was copy 0's alone, so it is k x one copy, not a bound")
    return (f"{where} synchronized ceiling ran {rounds:.0f} rounds a block with copies not held to its blocks (an "
            f"earlier version): one round in {rounds:.0f} was copy 0's alone, so it may read too high")


#: how far the synchronized ceiling may rise above ``workers`` copies before it is flagged (per-cycle noise)
CEILING_SLACK = 0.10


def _extra_median(rows: pd.DataFrame, key: str) -> float:
    values = [float(e[key]) for e in rows["extra_dict"] if isinstance(e, dict) and e.get(key)]
    return float(np.median(values)) if values else np.nan


def _timed_window(rows: pd.DataFrame) -> pd.DataFrame:
    """The rows whose CPU columns count the clock's timed stretches only (`harness.child.TreeCpu`)."""
    return rows[[isinstance(e, dict) and e.get("tree_cpu_window") == TIMED_CPU_WINDOW for e in rows["extra_dict"]]]


def ceiling_excess(serial: pd.DataFrame, ceiling: pd.DataFrame, workers: int, speedup: float) -> str:
    """Why a synchronized ceiling above ``workers`` copies (more than k serial copies can give) came out so, read
    from the rows' own CPU columns; "" for a ceiling within ``workers * (1 + CEILING_SLACK)``.

    k copies that each do serial's work at most k times serial's rate; a ceiling above it means the serial rows
    and a copy did not do the same thing per unit of work. Two causes show in the rows: serial spent more CPU time
    per unit (``tree_cpu_ms_per_unit``: other work, or slower cores), or serial's process tree was busy for only a
    part of its wall time (``tree_cpu_cores_busy`` below one core: it waited, for a core or for something else).

    Args:
        serial: serial's ok rows of the paired job(s) at this workload, bank and worker count.
        ceiling: the synchronized ceiling's (``capacity:lockstep``) ok rows there.
        workers: the copies the ceiling ran.
        speedup: the ceiling over serial (median of per-cycle ratios).
    """
    if not np.isfinite(speedup) or speedup <= workers * (1 + CEILING_SLACK):
        return ""
    head = f"ceiling {speedup:.1f}x above {workers} copies"
    s_cpu, c_cpu = _extra_median(serial, "tree_cpu_ms_per_unit"), _extra_median(ceiling, "tree_cpu_ms_per_unit")
    # busy only where it counts the timed stretches: counted from row to row (earlier rows), a paired job's waits
    # while the other backends ran diluted it
    s_busy = _extra_median(_timed_window(serial), "tree_cpu_cores_busy")
    c_busy = _extra_median(_timed_window(ceiling), "tree_cpu_cores_busy") / workers
    if np.isnan(s_cpu) or np.isnan(c_cpu):
        return f"{head}; the rows have no CPU columns to say why (rerun with this code)"
    parts = [f"CPU per unit serial {s_cpu:.3g} ms, a copy {c_cpu:.3g} ms"]
    if not np.isnan(s_busy):
        parts.append(f"serial busy {s_busy:.2f} of a core" + ("" if np.isnan(c_busy) else f", a copy {c_busy:.2f}"))
    if s_cpu > c_cpu * (1 + CEILING_SLACK):
        why = "serial spent more CPU per unit than a copy (unequal work, or slower cores for serial)"
    elif not np.isnan(s_busy) and s_busy < 1 - CEILING_SLACK:
        why = "serial waited for part of its rounds (equal CPU per unit, its tree busy less than one core)"
    else:
        why = "not explained by the CPU columns"
    return f"{head}: {why} ({'; '.join(parts)})"


#: how much more CPU per unit a ceiling's copies may spend than the reactor before that is named as why it beat them
OVER_CEILING_SLACK = 0.05


def over_ceiling_cause(rows: pd.DataFrame, lockstep: bool, subject: Subject = PROCESSES) -> str:
    """Why the reactor came out above a ceiling (a share over 100%), where the rows' CPU columns show it: the
    ceiling's copies spent more CPU per unit (``tree_cpu_ms_per_unit``) than the reactor's processes; "" where
    the rows do not show it (then the host's speed is the reading left).

    What it says and does not: the copies did the same work at a higher cost per unit than the reactor on this
    machine, so they are no bound on it here. Why is not in these columns: a copy steps the whole bank in one
    process and meets the others at a barrier each round, each of the reactor's processes steps a part of the
    bank (a reading: `results/reference/vm-2core-2026-12-06-gather-batch/README.md`, Atari at ``workers=2``).

    Args:
        rows: one configuration's ok rows (every backend).
        lockstep: the synchronized ceiling (``capacity:lockstep``), else the never-meeting one (``capacity:-``).
        subject: the reactor's executor and interpreter (the ceiling's on that interpreter).
    """
    ceiling = rows[subject.ceiling(rows, lockstep)]
    reactor = rows[subject.reactor(rows)]
    c, r = _extra_median(ceiling, "tree_cpu_ms_per_unit"), _extra_median(reactor, "tree_cpu_ms_per_unit")
    if not (np.isfinite(c) and np.isfinite(r)) or c <= r * (1 + OVER_CEILING_SLACK):
        return ""
    return (f"the ceiling's copies spent {c / r - 1:.0%} more CPU per unit than the reactor ({c:.3g} against "
            f"{r:.3g} ms): here they did the same work at a higher cost than the reactor's processes, so they are "
            "no bound on it (a copy steps the whole bank in one process, each of the reactor's processes a part)")


#: how far one paired job's serial may run from its source's typical serial before the ceiling over it is flagged
SERIAL_SLACK = 0.15
#: paired jobs of one workload a source needs before its typical serial means anything
SERIAL_JOBS_MIN = 3


def serial_skews(rows: pd.DataFrame, subject: Subject = PROCESSES
                 ) -> dict[tuple[str, int, int], tuple[float, float, float, int]]:
    """Per (workload, bank, workers) of the paired jobs: ``(skew, speed, typical, jobs)``, the job's serial throughput
    (``speed``, median over its cycles) over ``typical``, the median of those speeds over the source's paired jobs of
    that workload and bank (``jobs`` of them, at least `SERIAL_JOBS_MIN`).

    Why: serial does the same work at every worker count, so its speed should not depend on the job. On a host
    whose cores run at different speeds (the 16-core reference: `results/reference/h200-16core-2026-12-04-device/`,
    "dqn's 21x ceiling"), the core serial's process
    happens to run on in one job shifts every ratio over it in that job, the ceiling's speedup included, and with
    it a predicted share, while the measured share (the reactor over the ceiling) does not use serial."""
    paired = rows[subject.serial(rows)]
    if "cycle" in paired:
        paired = paired[paired["cycle"].notna()]
    speeds: dict[tuple[str, int], dict[int, float]] = {}
    for (scenario, bank, workers), g in paired.groupby(["scenario", "num_envs", "workers"]):
        speeds.setdefault((str(scenario), int(bank)), {})[int(workers)] = float(g["throughput"].median())
    out = {}
    for (scenario, bank), per in speeds.items():
        if len(per) < SERIAL_JOBS_MIN:
            continue
        typical = float(np.median(list(per.values())))
        for workers, speed in per.items():
            out[(scenario, bank, workers)] = (speed / typical, speed, typical, len(per))
    return out


def serial_check(skew: tuple[float, float, float, int] | None, source: str, predicted: float) -> str:
    """The line that flags a ceiling's speedup taken over a serial that ran away from its typical speed
    (`serial_skews`), with the predicted share at the typical serial; "" within `SERIAL_SLACK`."""
    if skew is None:
        return ""
    ratio, speed, typical, jobs = skew
    if abs(np.log(ratio)) <= np.log(1 + SERIAL_SLACK):
        return ""
    at_typical = (f"; at the typical serial the predicted share is {predicted / ratio:.2f}"
                  if np.isfinite(predicted) else "")
    return (f"the {source}'s serial ran {ratio:.2f}x its median over its {jobs} paired jobs of this workload "
            f"({speed:.4g} against {typical:.4g} per second): the ceiling's speedup over it is off by as much"
            f"{at_typical}")


#: a share this far above the Amdahl share is flagged (`amdahl_check`): serial's server part is measured between
#: its own steps, so the bound is an estimate, not a law
AMDAHL_SLACK = 0.10


def amdahl_shares(rows: pd.DataFrame, subject: Subject = PROCESSES) -> dict[tuple[str, int, int], float]:
    """Per (workload, bank, workers): the highest share of the synchronized ceiling a synchronized orchestration
    can reach at the ceiling's per-core speed, serial's Amdahl bound at ``workers`` over ``workers`` (its rows'
    ``amdahl_bound``, median).

    Why: the ceiling runs ``workers`` copies of serial's whole round, so at its copies' speed per core it is
    ``workers`` x serial; an orchestration of one job keeps the server's part of the round (scatter, the gather's
    fold, the env a marl server steps, dqn's learner) serial and at best splits the steps evenly, so it reaches at
    most (server + steps) / (server + steps / workers) x serial. Where the server's part is large next to one
    worker's share of the steps (marl: the joint env's step against one agent's inference), no runtime reaches a
    share the bound does not hold; a share above it means the orchestration's server part cost less than serial's,
    or its cores ran faster than the copies' (fewer of them busy), which `amdahl_check` says.
    """
    out = {}
    serial = rows[subject.serial(rows)]
    for (scenario, bank, workers), g in serial.groupby(["scenario", "num_envs", "workers"]):
        bound = serial_amdahl_bound(g)
        if np.isfinite(bound) and workers:
            out[(str(scenario), int(bank), int(workers))] = bound / float(workers)
    return out


def amdahl_check(shares: Iterable[tuple[str, float | None, float]]) -> str:
    """The line that flags a share above its Amdahl share (`amdahl_shares`) by more than `AMDAHL_SLACK`, with what
    it means; "" where none is.

    Args:
        shares: ``(what, share, its Amdahl share)``: the measured share with its source's, the predicted one with
            the run's.
    """
    above = [f"{what} share {share:.2f} (Amdahl share {bound:.2f})" for what, share, bound in shares
             if share is not None and np.isfinite(share) and np.isfinite(bound) and share > bound * (1 + AMDAHL_SLACK)]
    if not above:
        return ""
    return (f"the {' and the '.join(above)} {'are' if len(above) > 1 else 'is'} above what a round that keeps serial's "
            "server part serial allows at the copies' speed per core: the reactor's server part cost less than "
            "serial's, or its cores ran faster than the ceiling's copies")


def _cpu_round_us(extra: Any, units: Any, rounds: Any) -> float:
    """A row's CPU time per round in microseconds (``tree_cpu_ms_per_unit``), NaN where it has none."""
    if not isinstance(extra, dict) or not extra.get("tree_cpu_ms_per_unit") or not rounds:
        return np.nan
    return float(extra["tree_cpu_ms_per_unit"]) * 1e3 * float(units) / float(rounds)


def serial_round_us(serial: pd.DataFrame) -> float:
    """Serial's round in microseconds of CPU time (its rows' ``tree_cpu_ms_per_unit``: like the reactor's costs,
    not inflated by other load on the host), median over its rows; wall time where no row has the CPU time.

    Args:
        serial: serial's ok rows of one workload and bank.
    """
    if serial.empty:
        return np.nan
    cpu = [c for c in map(_cpu_round_us, serial["extra_dict"], serial["units"], serial["rounds"]) if np.isfinite(c)]
    if cpu:
        return float(np.median(cpu))
    return float((serial["seconds"] / serial["rounds"]).median() * 1e6)


def _per_cycle(rows: pd.DataFrame, subject: Subject,
               values: Callable[[pd.DataFrame], Iterable[float]]) -> dict[tuple[str, int, int, Any], float]:
    """``values`` of serial's rows (one per row, NaN where a row has none) in each cycle of each paired job:
    ``(workload, bank, workers, cycle)`` -> its row's (the median where a cycle holds several)."""
    serial = rows[subject.serial(rows)]
    if serial.empty or "cycle" not in serial:
        return {}
    value = pd.Series(list(values(serial)), index=serial.index, dtype=float)
    frame = serial.assign(_value=value).dropna(subset=["_value", "cycle"])
    return {(str(sc), int(b), int(w), c): float(v) for (sc, b, w, c), v
            in frame.groupby(["scenario", "num_envs", "workers", "cycle"])["_value"].median().items()}


def serial_by_cycle(rows: pd.DataFrame, subject: Subject = PROCESSES) -> dict[tuple[str, int, int, Any], float]:
    """Serial's CPU per round (us) in each cycle of each paired job: ``(workload, bank, workers, cycle)`` -> its
    row's (the median where a cycle holds several), for the rows with the CPU column.

    Args:
        rows: ok rows of one run.
        subject: whose serial (the interpreter's).
    """
    return _per_cycle(rows, subject, lambda s: map(_cpu_round_us, s["extra_dict"], s["units"], s["rounds"]))


def _step_per_member_us(extra: Any, bank: Any) -> float:
    """A serial row's step per bank member in microseconds (``serial_steps_us`` over the bank), NaN where it has none."""
    if not isinstance(extra, dict) or not extra.get("serial_steps_us") or not bank:
        return np.nan
    return float(extra["serial_steps_us"]) / float(bank)


def serial_step_by_cycle(rows: pd.DataFrame, subject: Subject = PROCESSES) -> dict[tuple[str, int, int, Any], float]:
    """Serial's step per bank member in each cycle of each paired job (its rows' ``serial_steps_us`` over the bank,
    us): the host's speed in that cycle by a measure that does not depend on the bank, unlike serial's round, whose
    per-round server part is a larger share of a smaller bank's round. ``(workload, bank, workers, cycle)`` -> its
    row's (the median where a cycle holds several).

    Args:
        rows: ok rows of one run.
        subject: whose serial (the interpreter's).
    """
    return _per_cycle(rows, subject, lambda s: map(_step_per_member_us, s["extra_dict"], s["num_envs"]))


def process_spreads(rows: pd.DataFrame, subject: Subject = PROCESSES) -> dict[tuple[str, int, int], float]:
    """How unevenly a machine runs equal work at once: per ``(workload, bank, workers)``, the median over its
    reactor rows whose processes each had a core (at least 3 besides process 0) of the slowest other process over
    the median other, per member (`own_spread`; CPU per round, else work + transport per round, for rows from
    before the CPU column; one member each where the rows do not say). Processes that step the same members differ
    on such a machine by their cores (SMT siblings, clocks) and by each round's own chance, and a round waits for
    the slowest; 2 shared cores cannot show it.

    Args:
        rows: ok rows of the machine's run.
        subject: whose reactor rows.
    """
    out: dict[tuple[str, int, int], list[float]] = {}
    reactor = rows[subject.reactor(rows)]
    for _, row in reactor.iterrows():
        extra, cores = row["extra_dict"], _cores(row)
        if not isinstance(extra, dict):
            continue
        ranks = sorted({int(m.group(1)) for k in extra if (m := _PART.match(k))})
        n = len(ranks)
        if ranks != list(range(n)) or n < 4 or (cores is not None and n > cores):
            continue
        costs = [float(extra[f"bd_w{r}_cpu_us"]) if f"bd_w{r}_cpu_us" in extra else
                 float(extra.get(f"bd_w{r}_work_us", 0.0)) + float(extra.get(f"bd_w{r}_transport_us", 0.0))
                 for r in ranks]
        spread = own_spread(costs, [int(extra.get(f"bd_w{r}_members", 1)) for r in ranks])
        if np.isfinite(spread):
            out.setdefault((str(row["scenario"]), int(row["num_envs"]), int(row["workers"])), []).append(spread)
    return {k: float(np.median(v)) for k, v in out.items()}


def _cores(row: pd.Series) -> int | None:
    value = row.get("cpu_count")
    try:
        return int(value) if value is not None and not pd.isna(value) else None
    except (TypeError, ValueError):
        return None


def _busy_host(row: pd.Series) -> bool:
    """The job started on a host whose 1-minute load average was above its cores: other processes took cores,
    so even a job with no more processes than cores waited for them in its hand-offs."""
    meta = row.get("meta")
    load = meta.get("load_avg") if isinstance(meta, dict) else None
    cores = _cores(row)
    return bool(load) and cores is not None and float(load[0]) > cores


def predict_rows(rows: pd.DataFrame, machine: pd.DataFrame | None = None) -> pd.DataFrame:
    """One line per subject (`subjects`: the processes executor, the threads executor on a free-threaded interpreter),
    workload (and bank) and worker count of the run's reactor rows: the measured and predicted share of the
    synchronized ceiling and what the prediction used (NaN where no row has the CPU column to predict from).

    Args:
        rows: the run's ok rows (`harness.report.load.load_results`).
        machine: a reference run of the target machine (its paired ceilings and shares), or None.
    """
    rows = rows[rows["status"] == "ok"]
    frames = [pd.DataFrame(_subject_lines(rows, machine, subject)) for subject in subjects(rows)]
    frames = [f.sort_values(["workload", "bank", "workers"]) for f in frames if not f.empty]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _subject_lines(rows: pd.DataFrame, machine: pd.DataFrame | None, subject: Subject) -> list[dict[str, Any]]:
    """`predict_rows`' lines of one subject."""
    reactor = rows[subject.reactor(rows)]
    # the run's hand-off with a core per process (the breakdown's own column), per workload
    costs_of, busy = {}, set()
    warm: dict[tuple[str, int], list[float]] = {}  # one member's step where each process had a core
    # serial's CPU per round in the same cycle of the same job: each row's costs are read against it (a paired
    # reading: the host's speed moves between cycles and jobs, and moves both alike), and a member's warm step is
    # kept as a fraction of it, so that a job run while the host was slower is not read as cache inflation
    cycle_serial = serial_by_cycle(rows, subject)
    paired: dict[Any, float] = {}
    warm_part: dict[tuple[str, int], list[float]] = {}  # the warm step over serial's round of its cycle
    # like for like: the warm step of a process stepping as many members as the oversubscribed row's processes do,
    # any bank, over serial's member step in its cycle (a bank-free measure of the host's speed)
    cycle_step = serial_step_by_cycle(rows, subject)
    like_part: dict[tuple[str, int], list[float]] = {}
    for i, row in reactor.iterrows():
        rc = round_costs(row["extra_dict"], _cores(row))
        if rc is not None:
            costs_of[i] = rc
            at = (str(row["scenario"]), int(row["num_envs"]), int(row["workers"]), row.get("cycle"))
            if np.isfinite(cycle_serial.get(at, np.nan)):
                paired[i] = cycle_serial[at]
            if _busy_host(row):
                busy.add(i)
            if not rc.oversubscribed and len(rc.costs) > 1:
                step = member_step(rc.costs, rc.members)
                if np.isfinite(step):
                    warm.setdefault(at[:2], []).append(step)
                    if i in paired:
                        warm_part.setdefault(at[:2], []).append(step / paired[i])
                    m = others_members(rc.members)
                    if m is not None and np.isfinite(cycle_step.get(at, np.nan)):
                        like_part.setdefault((at[0], m), []).append(step / cycle_step[at])
    warm_step = {k: float(np.median(v)) for k, v in warm.items()}
    warm_fraction = {k: float(np.median(v)) for k, v in warm_part.items()}
    like_fraction = {k: float(np.median(v)) for k, v in like_part.items()}
    handoffs: dict[str, list[float]] = {}
    like_handoffs: dict[tuple[str, int], list[float]] = {}  # by the members each other process steps, as above
    for i, rc in costs_of.items():
        # a hand-off measured while the host's other load took cores says nothing about a core each
        if not rc.oversubscribed and i not in busy and len(rc.costs) > 1:
            handoffs.setdefault(str(reactor.at[i, "scenario"]), []).append(rc.handoff_us)
            m = others_members(rc.members)
            if m is not None:
                like_handoffs.setdefault((str(reactor.at[i, "scenario"]), m), []).append(rc.handoff_us)
    run_ceiling, run_speedup = ceiling_speedups(rows, subject), reactor_speedups(rows, subject)
    ref_ceiling = ceiling_speedups(machine, subject) if machine is not None else {}
    skews = {"run": serial_skews(rows, subject),
             "machine": serial_skews(machine, subject) if machine is not None else {}}
    ref_share = measured_share_intervals(machine, subject) if machine is not None else {}
    run_interval = measured_share_intervals(rows, subject)
    run_amdahl = amdahl_shares(rows, subject)
    ref_amdahl = amdahl_shares(machine, subject) if machine is not None else {}
    ref_spread = process_spreads(machine, subject) if machine is not None else {}
    run_spread = process_spreads(rows, subject)  # for the lines of rows without the CPU column, said beside them
    lines = []
    for (scenario, bank, workers), g in reactor.groupby(["scenario", "num_envs", "workers"]):
        key = (str(scenario), int(bank), int(workers))
        serial = rows[subject.serial(rows) & (rows["scenario"] == scenario) & (rows["num_envs"] == bank)]
        # where a row's cycle has no serial row with the CPU column: serial's median in its job, else in the run
        in_job = serial_round_us(serial[serial["workers"] == workers])
        fallback = in_job if np.isfinite(in_job) else serial_round_us(serial)
        rounds, serial_rounds, speedups, sources, hand, inflations, inflated_from = [], [], [], set(), [], [], set()
        spreads, spread_from, servers, slowests = [], set(), [], []
        for i in g.index:
            rc = costs_of.get(i)
            if rc is None:
                continue
            like_key = (key[0], others_members(rc.members) or 0)
            if not rc.oversubscribed and i not in busy:
                h, source = rc.handoff_us, "own"
            elif rc.oversubscribed and like_handoffs.get(like_key):  # waits as long as this row's would be
                h, source = float(np.median(like_handoffs[like_key])), "like"
            elif handoffs.get(key[0]):  # a hand-off that waited for a core says nothing about a core each
                h, source = float(np.median(handoffs[key[0]])), "run"
            else:
                h, source = DEFAULT_HANDOFF_US, "default"
            s_round = paired.get(i, fallback)
            at = key + (reactor.at[i, "cycle"],)
            like = like_fraction.get(like_key)
            if rc.oversubscribed and like is not None and np.isfinite(cycle_step.get(at, np.nan)):
                # a warm process stepping as many members, at this cycle's speed (serial's member step)
                warm_ref, warm_from = like * cycle_step[at], "like"
            else:
                # the same bank's warm step at this cycle's speed (its serial round) where both sides are paired,
                # else as measured
                warm_ref = (warm_fraction[key[:2]] * paired[i] if i in paired and key[:2] in warm_fraction
                            else warm_step.get(key[:2]))
                warm_from = "run" if warm_ref else "none"
            inflation = cache_inflation(rc, warm_ref)
            inflated_from.add("own" if not rc.oversubscribed else warm_from)
            # processes that took turns differ by their turns: the target machine's spread where it measured one
            spread = ref_spread.get(key) if rc.oversubscribed else None
            spreads.append(spread if spread is not None else own_spread(rc.costs, rc.members))
            spread_from.add("machine" if spread is not None else "own")
            warm_costs = [c / inflation for c in rc.costs]
            server_us, slowest_us = parts = critical_parts(warm_costs, rc.members, spread)
            round_us = round_from_parts(warm_costs, parts, h)
            rounds.append(round_us)
            servers.append(server_us)
            slowests.append(slowest_us)
            serial_rounds.append(s_round)
            speedups.append(s_round / round_us if round_us > 0 else np.nan)
            sources.add(source)
            hand.append(h)
            inflations.append(inflation)
        # no row with the CPU column: the measured side alone (the prediction '-')
        predicted_round = float(np.median(rounds)) if rounds else np.nan
        serial_round = float(np.median(serial_rounds)) if serial_rounds else serial_round_us(serial)
        speedup = float(np.nanmedian(speedups)) if speedups and np.isfinite(speedups).any() else np.nan
        if key in run_ceiling:
            ceiling, ceiling_from = run_ceiling[key], "run"
        elif key in ref_ceiling:
            ceiling, ceiling_from = ref_ceiling[key], "machine"
        else:
            ceiling, ceiling_from = float(workers), "ideal"
        interval = ref_share.get(key) if machine is not None else run_interval.get(key)
        measured = interval.median if interval is not None else None
        at = (rows["scenario"] == scenario) & (rows["num_envs"] == bank) & (rows["workers"] == workers)
        excess = ceiling_excess(serial[serial["workers"] == workers], rows[at & subject.ceiling(rows)], int(workers),
                                run_ceiling[key]) if key in run_ceiling else ""
        if ceiling_from in ("run", "machine"):
            source = rows if ceiling_from == "run" else machine
            held = source[(source["scenario"] == scenario) & (source["num_envs"] == bank)
                          & (source["workers"] == workers) & subject.ceiling(source)]
            excess = "; ".join(t for t in (excess, unheld_ceiling(held, f"the {ceiling_from}'s")) if t)
        predicted = speedup / ceiling if ceiling > 0 else np.nan
        # this code's own serial part (the run's serial rows) before the target machine's (other code, perhaps);
        # the measured share is checked against its own source's
        amdahl, amdahl_from = ((run_amdahl[key], "run") if key in run_amdahl else
                               (ref_amdahl[key], "machine") if key in ref_amdahl else (np.nan, "-"))
        measured_amdahl = (ref_amdahl if machine is not None else run_amdahl).get(key, np.nan)
        lines.append({
            "executor": subject.name, "workload": key[0], "bank": key[1], "workers": key[2],
            "measured_share": measured, "predicted_share": predicted,
            "error": (predicted - measured) / measured if measured and not np.isnan(predicted) else None,
            "measured_low": interval.low if interval is not None else np.nan,
            "measured_high": interval.high if interval is not None else np.nan,
            "in_interval": (bool(interval.low <= predicted <= interval.high)
                            if interval is not None and interval.enough and not np.isnan(predicted) else None),
            "measured_speedup": run_speedup.get(key),
            "predicted_round_us": predicted_round, "serial_round_us": serial_round,
            "server_us": float(np.median(servers)) if servers else np.nan,
            "slowest_us": float(np.median(slowests)) if slowests else np.nan,
            "predicted_speedup": speedup, "ceiling_speedup": ceiling, "ceiling_from": ceiling_from,
            "handoff_us": float(np.median(hand)) if hand else np.nan, "handoff_from": "+".join(sorted(sources)) or "-",
            "inflation": float(np.median(inflations)) if inflations else np.nan,
            "inflation_from": "+".join(sorted(inflated_from)) or "-",
            "spread": (float(np.nanmedian(spreads)) if np.isfinite(spreads).any() else run_spread.get(key, np.nan)),
            "spread_from": "+".join(sorted(spread_from)) or ("own" if key in run_spread else "-"),
            "ceiling_check": excess,
            "serial_skew": skews.get(ceiling_from, {}).get(key, (np.nan,))[0],
            "serial_check": serial_check(skews.get(ceiling_from, {}).get(key), ceiling_from, predicted),
            "amdahl_share": amdahl, "amdahl_from": amdahl_from,
            "amdahl_check": amdahl_check([("measured", measured, measured_amdahl), ("predicted", predicted, amdahl)]),
        })
    return lines


def predict_run(paths: Iterable[Path | str], machine: Iterable[Path | str] | None = None) -> pd.DataFrame:
    """`predict_rows` of the result files under ``paths``, against the reference run(s) under ``machine``.

    Args:
        paths: the run's folders or result files.
        machine: the target machine's reference run (folders or archives), or None.
    """
    rows = load_results(paths).rows
    ref = load_results(machine).rows if machine else None
    table = predict_rows(rows, ref)
    if ref is not None and len(ref):
        ours, theirs = commits(rows), commits(ref)
        if ours != theirs:  # the error then also holds what changed in the code between the two runs
            table.attrs["commit_note"] = (
                f"the machine's rows are of commit {', '.join(sorted(theirs))}, this run's of "
                f"{', '.join(sorted(ours))} (as the rows record them): each error compares a prediction for this "
                "code with a measurement of that one")
    return table


def commits(rows: pd.DataFrame) -> set[str]:
    """The commits the rows record (``git_sha``, 8 digits, ``(dirty)`` for a working tree with changes)."""
    metas = [m for m in rows["meta"] if isinstance(m, dict)] if "meta" in rows else []
    return {str(m.get("git_sha", "?"))[:8] + (" (dirty)" if m.get("git_dirty") else "") for m in metas}


#: the issue's bar for the prediction: within this relative error of the measured share
PREDICTION_TOLERANCE = 0.20


def _measured_interval(r: dict[str, Any]) -> str:
    """``[low,high]:in`` / ``:out`` (the prediction inside the measured share's 95% interval or not), ``(too few)``
    where the cycles hold no interval, ``-`` where nothing was measured."""
    low, high = r.get("measured_low"), r.get("measured_high")
    measured = r.get("measured_share")
    if measured is None or (isinstance(measured, float) and np.isnan(measured)):
        return "-"
    if low is None or high is None or not (np.isfinite(low) and np.isfinite(high)):
        return "(too few)"
    inside = r.get("in_interval")
    return f"[{low:.2f},{high:.2f}]" + ("" if inside is None else ":in" if inside else ":out")


def summary_line(table: pd.DataFrame) -> str:
    """How the predictions compare with the measurements at 4 workers and more (the issue's check): how many lie
    within `PREDICTION_TOLERANCE`, and how many inside the measured share's interval; "" where none is measured."""
    t = table[(table["workers"] >= 4) & table["error"].notna()] if not table.empty else table
    if t.empty:
        return ""
    close = int((t["error"].abs() <= PREDICTION_TOLERANCE).sum())
    drawn = t[t["in_interval"].notna()]
    inside = int(drawn["in_interval"].astype(bool).sum())
    flagged = t["serial_check"].astype(bool) if "serial_check" in t else pd.Series(False, index=t.index)
    typical = ""
    if flagged.any():  # the flagged cells read at their source's typical serial (`serial_check`)
        at_typical = t["predicted_share"].where(~flagged, t["predicted_share"] / t["serial_skew"])
        off = (at_typical - t["measured_share"]).abs()
        close_typical = int((off <= PREDICTION_TOLERANCE * t["measured_share"]).sum())
        typical = f" ({close_typical} with the {int(flagged.sum())} flagged below read at the typical serial)"
    return (f"at 4+ workers: within {PREDICTION_TOLERANCE:.0%} of the measured share in {close} of {len(t)}{typical}; "
            f"inside its 95% interval in {inside} of {len(drawn)}"
            + (" (the others' cycles hold no interval)" if len(drawn) < len(t) else ""))


def bank_labels(table: pd.DataFrame) -> pd.Series:
    """Each line's workload, with its bank where the table holds that workload at several (``gym/2`` beside
    ``gym/16``: `make proxy`'s like-for-like warm reference runs a second bank)."""
    several = {w for w, n in table.groupby("workload")["bank"].nunique().items() if n > 1}
    return pd.Series([f"{w}/{b}" if w in several else str(w) for w, b in zip(table["workload"], table["bank"])],
                     index=table.index)


def format_lines(table: pd.DataFrame) -> str:
    """``workload workers measured_share predicted_share`` per line (measured ``-`` where there is no paired
    ceiling), then the error, the measured share's interval (and whether the prediction lies in it), the predicted
    round and its parts (``=server+slowest+h``: process 0's server part, the slowest other process's step, the
    hand-offs; process 0's own cost is the round where it is longer), what the prediction used and the Amdahl share;
    then `summary_line`, any ceiling, serial or Amdahl check, and whether the target machine's rows are of other
    code than the run's (`predict_run`). Where the table holds another subject
    than the processes executor (`subjects`), each subject's lines follow a line naming it; a workload at several
    banks is named with each line's (`bank_labels`)."""
    def num(x: Any, fmt: str) -> str:
        return "-" if x is None or (isinstance(x, float) and np.isnan(x)) else format(x, fmt)

    out = ["workload workers measured_share predicted_share  error measured_95%  predicted_round_us "
           "=server_us+slowest_us+handoff serial_round_us predicted_speedup ceiling_speedup(from) handoff_us(from) "
           "inflation(from) amdahl_share(from) spread(from)"]
    named = set(table.get("executor", pd.Series(dtype=str))) - {PROCESSES.name}
    table = table.assign(workload=bank_labels(table)) if not table.empty else table
    subject = None
    for r in table.to_dict("records"):
        if named and r.get("executor") != subject:
            subject = r.get("executor")
            interp = subject.partition(" ")[2]
            on = f" on {interp}" if interp else ""
            out.append(f"# reactor:{subject} (against serial{on} and the synchronized ceiling{on})")
        out.append(f"{r['workload']} {r['workers']} {num(r['measured_share'], '.2f')} "
                   f"{num(r['predicted_share'], '.2f')}  {num(r['error'], '+.0%')} {_measured_interval(r)}  "
                   f"{num(r['predicted_round_us'], '.1f')} ={num(r.get('server_us'), '.1f')}+"
                   f"{num(r.get('slowest_us'), '.1f')}+h {num(r['serial_round_us'], '.1f')} "
                   f"{num(r['predicted_speedup'], '.2f')} {r['ceiling_speedup']:.2f}({r['ceiling_from']}) "
                   f"{num(r['handoff_us'], '.1f')}({r['handoff_from']}) "
                   f"{num(r.get('inflation'), '.2f')}({r.get('inflation_from', '-')}) "
                   f"{num(r.get('amdahl_share'), '.2f')}({r.get('amdahl_from', '-')}) "
                   f"{num(r.get('spread'), '.2f')}({r.get('spread_from', '-')})")
    checks = [f"{r['workload']} {r['workers']}{'' if not named else ' (' + str(r.get('executor')) + ')'}: {r[check]}"
              for r in table.to_dict("records") for check in ("ceiling_check", "serial_check", "amdahl_check")
              if r.get(check)]
    summary = summary_line(table)
    note = table.attrs.get("commit_note")
    return "\n".join(out + ([summary] if summary else []) + checks + ([note] if note else []))
