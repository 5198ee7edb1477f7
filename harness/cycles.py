"""The parent of a paired job (``python -m harness compare``): resident backends, cycles of timed blocks, rows.

Every listed backend runs in its own measuring child (`harness.compare_child`), started once, one after the
other, each warmed up while the others wait. Then cycles: in each, every backend runs one block of the same
N rounds, in an order shuffled per cycle with the job's seed, while the others wait on their pipes. Between
two blocks the parent waits until the backend that just finished has gone quiet (its waiting processes
asleep: `settle`), so a block never shares the cores with another backend's wind-down. Each block is one
row of ``results.csv`` (``cycle``, ``block`` = its position in time, and in ``extra``: the CPU the waiting
backends used during it, the settle time, the host's calibration of the cycle and its CPU steal, and
``cycles_s``: the seconds of cycles at the cycle's end, which ``max_seconds`` counts).

Cycles go on until the main ratio (the second backend over the first: reactor/serial in
``backends=serial,reactor,...``) is known to ``precision`` (the half-width of its order-statistic interval
over cycles, relative to the median: `harness.report.stats.median_interval`) or ``max_seconds`` have passed,
never before ``min_cycles``; ``compare.json`` says which stopped it. A backend may be listed twice (an A/A
job): its second resident is an identical copy, labelled ``#2``.
A backend that asks for it (`backends.base.Backend.parkable`: Ray and RLlib, whose daemons run timers whatever the
workload) is parked between its blocks: every process of its tree stopped (`harness.resident.Resident.park`) right
after its warm-up and each of its blocks, and continued, then settled, before its next block or its stop.
A child that fails or passes ``budget.timeout_s`` on one message, or reports an error while leaving its rounds or
tearing down after ``stop``, ends the job: every tree is killed, the job's /dev/shm entries removed, and an
``error`` / ``timeout`` row written (as `harness.runner` does; a traceback goes to ``error.txt``).
"""
from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass, field, replace
from enum import Enum
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

import numpy as np

from harness.cleanup import ShmLedger, end_job
from harness.hostwatch import CoreProbe, cpu_ns, cpus_of, pin_process, steal_seconds
from harness.labels import label_of
from harness.margin import DEFAULT_MARGIN, resolve_margin
from harness.metadata import job_metadata, load_average
from harness.report.intervals import MedianInterval, half_width, median_interval, min_samples
from harness.resident import ChildFailed, Resident, settle
from harness.results import ResultsWriter, make_row, timing_fields
from harness.runner import backend_variant, job_spec, on_interpreter

COMPARE_FILE = "compare.json"


@dataclass
class CompareSettings:
    """How long a paired job runs and how its blocks are sized (``compare.*`` in conf/compare.yaml)."""

    #: stop once the main ratio's interval is within +-precision of its median (0.05: +-5%)
    precision: float = 0.05
    #: stop after this many seconds of cycles whatever the precision (once ``min_cycles`` have run)
    max_seconds: float = 240.0
    #: never stop, on precision or on time, before this many cycles (at least what the confidence needs: 6)
    min_cycles: int = 10
    #: target seconds of the median backend's block (rounds per block from untimed sizing blocks). Short, because
    #: what two blocks of identical residents differ by grows with the time between them (the host drifts), so
    #: 0.1-s blocks give much narrower A/A intervals than 0.2-s ones in jobs of the same length; 0.05-s ones are no
    #: narrower (each block's settle and messages take a larger share):
    #: results/reference/vm-2core-2026-12-05-block-length/
    block_s: float = 0.1
    #: rounds per block; 0: from ``block_s``
    block_rounds: int = 0
    confidence: float = 0.95
    #: restart every resident after this many seconds of cycles (0: never), in the next start order each time
    #: (`start_orders`: the reverse of the last one, or a new one), so an offset a resident owes to its process (its
    #: placement, its memory layout, when it was started) changes with its processes instead of lasting the whole
    #: job (rows: ``extra.epoch``, ``extra.started_at``). With respawning on, the precision stop comes only where a
    #: set of processes ends, from the ``min_sets``-th on (a set's offset cannot be told from an effect, nor can a
    #: last set of a cycle or two dilute it)
    respawn_s: float = 10.0
    #: with respawning on, the fewest sets of processes a job stops on precision after. Each set brings an offset
    #: of its own that the interval over cycles does not see, and with 0.1-s blocks a gym job can reach +-5% within
    #: two sets; the margin covers what the sets leave, z x the offset of one set / sqrt(sets)
    #: (`harness.set_offsets.set_margin`), so a gym job's margin on the 2-vCPU VM was +-2.4% after four sets and
    #: +-1.4% after eight (twice the time: 55 -> 109 s): results/reference/vm-2core-2026-12-06-min-sets/
    min_sets: int = 8
    #: restarting takes at most this share of a job's time: a respawn waits for at least
    #: ``start * (1 - share) / share`` seconds of cycles after a start that took ``start`` (Ray's takes seconds);
    #: 0: no such wait
    respawn_share: float = 0.25
    #: run every single-process resident's blocks of a cycle on one CPU of the job's, the next CPU each cycle
    #: (rows: ``extra.pinned_cpu``): two such residents of one cycle never run on two different CPUs, whose speeds
    #: differ on a shared host, and each one's blocks visit every CPU alike. Residents of several processes (the
    #: reactor, the ceilings, Ray) are never pinned
    pin_single: bool = False
    #: how the residents are started in each set of processes (`start_orders`): ``shuffled``, an order drawn with
    #: the job's seed, reversed in the next set, then a new draw; ``listed``, the listed order, reversed in every
    #: other set. Each flips every pair's order from one set to the next; ``shuffled`` also moves the first place,
    #: whose offset a reversal does not cancel (with ``listed`` it falls on the first listed backend in half the
    #: sets: results/reference/vm-2core-2026-12-06-start-order/)
    start_order: str = "shuffled"
    #: the machine's resolution floor: a ratio is called faster or slower only where its interval clears
    #: 1 +- margin (`harness.report.intervals.verdict`); None: this machine's margin for the job's workload as
    #: its last self-test of that workload measured it by this procedure (`resolve_margin`), else `DEFAULT_MARGIN`
    margin: Optional[float] = None


@dataclass
class CompareOutcome:
    status: str
    rows: int = 0
    cycles: int = 0
    block_rounds: int = 0
    calibration_rounds: int = 0
    stopped_by: str = ""
    message: str = ""
    main_pair: tuple[str, str] | None = None
    main_ratio: tuple[float, float, float] | None = None
    leftover_processes: int = 0
    leftover_shm: list[str] = field(default_factory=list)


def main_ratio(ratios: list[float], confidence: float) -> MedianInterval:
    """Median of per-cycle ratios with its order-statistic interval over cycles, widened for the dependence
    between neighbouring cycles (`harness.report.stats.median_interval`)."""
    return median_interval(ratios, confidence=confidence)


def calibrate(residents: dict[str, "Resident"], warm: dict[str, float], block_s: float,
              tries: int = 4) -> tuple[int, int]:
    """Rounds per block such that the median backend's block lasts about ``block_s``, from untimed blocks of
    every backend (the warm-up's few rounds are too few to trust). The median, not the slowest: on a loaded
    host the synchronized ceiling's rounds can be several times slower than the others', and sizing on them
    would leave the others blocks of a few tens of milliseconds. Returns (rounds per block, rounds run here by
    every backend: they add to the warm-up, and equally to every backend's checksum)."""
    known = sorted(w for w in warm.values() if math.isfinite(w) and w > 0)
    n = max(1, int(block_s / 4 / known[len(known) // 2])) if known else 1
    spent = 0
    typical = math.nan
    for attempt in range(tries):
        per_round = []
        for res in residents.values():
            msg = run_block(res, n)
            rest(res)
            per_round.append(msg["seconds"] / n)
        spent += n
        typical = float(np.median(per_round))
        if typical * n >= block_s / 4 or attempt == tries - 1:
            break
        n = max(n + 1, int(math.ceil(block_s / 4 / typical)))
    return max(1, int(round(block_s / typical))) if typical > 0 else n, spent


def run_block(res: "Resident", n: int) -> dict[str, Any]:
    """One block of ``n`` rounds of ``res``: a parked resident is continued and settled first (what its timers owe
    runs before its block starts, not in it), then ``go n``; the ``block`` message."""
    if res.parked:
        res.unpark()
        settle(res.pids, quiet_ns=res.quiet_ns)
    res.send(f"go {n}")
    return res.expect("block")


def rest(res: "Resident") -> float:
    """After a block (or the warm-up) of ``res``: park it when it asked for that, else wait until it has gone quiet
    (`settle`); the seconds waited."""
    if res.parkable:
        t0 = time.perf_counter()
        res.park()
        return time.perf_counter() - t0
    return settle(res.pids)


def respawn_interval(settings: CompareSettings, start_s: float) -> float:
    """Seconds of cycles until the next respawn after a start that took ``start_s``: ``respawn_s``, or longer where
    starting would otherwise take more than ``respawn_share`` of the job; never without respawning."""
    if settings.respawn_s <= 0:
        return math.inf
    share = settings.respawn_share
    return max(settings.respawn_s, start_s * (1 - share) / share if share > 0 else 0.0)


class StartOrder(str, Enum):
    """The values of ``compare.start_order`` (`start_orders`)."""

    shuffled = "shuffled"
    listed = "listed"


def start_orders(keys: list[str], how: str | StartOrder, seed: int) -> Iterator[list[str]]:
    """The start order of each set of processes (epoch 0, 1, ...) of a paired job: every odd set in the reverse
    of the set before it, so that each pair of residents is started in both orders, one set after the other;
    every even set in the listed order (``listed``) or in an order drawn with ``seed`` (``shuffled``), so that
    which resident is started first of all, which is not an offset a reversal cancels, changes too.

    Args:
        keys: the residents, in the listed order.
        how: a `StartOrder` (or its value).
        seed: the job's seed (the same orders for the same seed).
    """
    valid = [o.value for o in StartOrder]
    how = str(getattr(how, "value", how))
    if how not in valid:
        raise ValueError(f"compare.start_order must be one of {valid}, got {how!r}")
    rng = np.random.default_rng([int(seed), 0x5EED])
    while True:
        order = list(keys) if how == "listed" else [keys[i] for i in rng.permutation(len(keys))]
        yield order
        yield order[::-1]


def set_ended(settings: CompareSettings, epoch: int, elapsed_s: float, respawn_at_s: float) -> bool:
    """Whether the precision stop may come after this cycle: always without respawning; with it, only where the
    current set of processes (``epoch``, from 0) is the ``min_sets``-th or a later one and has run its time (its
    respawn is due at ``respawn_at_s`` seconds of cycles)."""
    return settings.respawn_s <= 0 or (epoch >= settings.min_sets - 1 and elapsed_s >= respawn_at_s)


def fewest_cycles(min_cycles: int, confidence: float) -> int:
    """The cycles a paired job runs before it may stop, on precision or on time: ``min_cycles``, never fewer than
    the confidence needs for an interval (`harness.report.intervals.min_samples`)."""
    return max(int(min_cycles), min_samples(confidence))


def stop_reason(ratios: list[float], cycles: int, elapsed_s: float, settings: CompareSettings,
                set_ended: bool = True) -> tuple[str, Optional[tuple[float, float, float]]]:
    """Whether a paired job stops after ``cycles`` cycles and ``elapsed_s`` seconds of them: ``precision``
    once the main ratio (its per-cycle values ``ratios``) has an interval within +-precision of its median
    (`harness.report.stats.half_width`) where ``set_ended`` (with respawning on: a set of processes, the
    ``min_sets``-th or a later one, has just run its time: a set's offset is not noise the interval can see, and a
    last set of a cycle or two would leave the job one set's); ``time`` once ``max_seconds`` have passed. Neither before
    ``min_cycles`` cycles, which is never fewer than the confidence needs (`harness.report.stats.min_samples`):
    a job stopped by time earlier would give no verdict. Also returns the main ratio's (median, low, high) once
    it has an interval."""
    enough = cycles >= fewest_cycles(settings.min_cycles, settings.confidence)
    interval = None
    if ratios:
        reading = main_ratio(ratios, settings.confidence)
        interval = reading.as_tuple() if reading.enough else None
        if enough and set_ended and interval is not None and half_width(*interval) <= settings.precision:
            return "precision", interval
    if elapsed_s >= settings.max_seconds and enough:
        return "time", interval
    return "", interval


def row_base(cfg: dict[str, Any]) -> dict[str, Any]:
    """The fields every row of this backend's blocks shares (as `harness.runner` makes them for a job), fitted
    to its interpreter: on the free-threaded one the variant says so (``reactor:threads ft``)."""
    scenario = cfg["scenario"]
    meta = job_metadata(job_spec(cfg))
    meta["paired"] = True
    base = {"scenario": scenario["name"], "backend": cfg["backend"]["name"],
            "variant": backend_variant(cfg["backend"]), "workers": cfg["workers"],
            "num_envs": scenario.get("num_envs"), "env_id": scenario.get("env_id", "-"),
            "budget": cfg["budget"]["name"], "seed": cfg["seed"],
            "threads_per_worker": cfg["threads_per_worker"],
            "params": {k: v for k, v in scenario.items() if k != "name"}, "metadata": meta, "unit": None,
            "copy": int(cfg.get("copy", 1))}
    reason = on_interpreter(base, cfg)
    if reason is not None:  # `harness.compare` refuses such a job before anything runs
        raise ValueError(f"{base['backend']}: {reason}")
    return base


def backend_key(cfg: dict[str, Any]) -> str:
    """The label of a job config's rows as the report keys them (``reactor:threads ft``, ``serial:-#2`` for the
    second copy of an A/A job: `harness.labels.BackendLabel`)."""
    base = row_base(cfg)
    return label_of(base["backend"], base["variant"], base["copy"])


def run_compare(jobs: list[dict[str, Any]], job_dir: Path, settings: CompareSettings, seed: int,
                log: Callable[[str], None] = lambda s: None) -> CompareOutcome:
    """Measure ``jobs`` (one composed job config per backend, identical but for ``backend``) paired. The margin
    is resolved once, before anything runs, for the job's workload and procedure (`resolve_margin`): every row and
    ``compare.json`` record it, its source and a stored margin's parts, from which the report takes it to the sets
    of processes the job ran (`harness.report.job_margin.Margin.for_sets`)."""
    resolved = resolve_margin(settings.margin, jobs[0]["scenario"]["name"], int(jobs[0]["workers"]),
                              asdict(settings))
    margin, margin_source = resolved.value, resolved.source
    settings = replace(settings, margin=margin)
    job_dir.mkdir(parents=True, exist_ok=True)
    writer = ResultsWriter(job_dir)
    bases = {}
    for cfg in jobs:
        bases[backend_key(cfg)] = row_base(cfg)
    keys = list(bases)
    outcome = CompareOutcome(status="ok")
    if len(keys) >= 2:
        outcome.main_pair = (keys[1], keys[0])
    ledger = ShmLedger.snapshot()
    residents: dict[str, Resident] = {}
    probe: Optional[CoreProbe] = None
    current = keys[0]
    started = time.monotonic()
    load_start = load_average()
    try:
        probe = CoreProbe()
        job_cpus = sorted(probe.cores)  # the CPUs this job may use (`compare.pin_single` takes turns over them)
        warm: dict[str, float] = {}

        def start(order: list[str]) -> float:
            """Start and warm up the residents of ``order`` one at a time, while the others wait; the seconds it
            took."""
            nonlocal current
            t0 = time.monotonic()
            for key in order:
                current = key
                res = residents[key] = Resident(key, jobs[keys.index(key)], job_dir)
                hello = res.expect("hello")
                started_s = res.expect("started")["startup_seconds"]
                if "startup_seconds" not in bases[key]:  # the first start is the one the rows report
                    bases[key]["unit"] = hello["unit"]
                    bases[key]["interpreter"] = hello.get("interpreter")
                    bases[key]["num_envs"] = hello.get("num_envs", bases[key]["num_envs"])
                    bases[key]["env_id"] = hello.get("env_id", bases[key]["env_id"])
                    bases[key]["round_work_ms"] = hello.get("round_work_ms")
                    bases[key]["startup_seconds"] = started_s
                msg = res.expect("warm")
                warm[key] = msg["seconds"] / msg["rounds"] if msg["rounds"] > 0 else math.nan
                res.parkable = bool(msg.get("parkable"))
                res.refresh_pids()
                if res.parkable:
                    res.measure_idle()
                rest(res)
                parked = ""
                if res.parkable:
                    idle_ms = res.idle_ns_per_s / 1e6
                    idle = f"{idle_ms:,.0f}" if idle_ms >= 100 else f"{idle_ms:.3g}"
                    parked = (f", parked between its blocks ({len(res.pids)} processes, idle {idle} ms of CPU "
                              "per second)")
                log(f"{key}: started in {started_s:.1f} s, warm-up {warm[key] * 1e3:.3g} ms per round{parked}")
            return time.monotonic() - t0

        def retire() -> None:
            """Stop every resident (as at the job's end), counting what each left behind."""
            for res in residents.values():
                res.finish()
            outcome.leftover_processes += sum(len([p for p in r.tree.survivors() if p.pid != r.child.pid])
                                              for r in residents.values())
            outcome.leftover_shm += [n for r in residents.values() for n in ledger.owned(r.tree.pids)]
            for res in residents.values():
                res.close()
                end_job(res.tree, ledger)
            residents.clear()

        orders = start_orders(keys, settings.start_order, seed)
        started_at: dict[str, int] = {}  # each resident's place in its set's start order (rows: extra.started_at)

        def start_set() -> float:
            order = next(orders)
            started_at.update({k: i for i, k in enumerate(order)})
            return start(order)

        start_s = start_set()
        if settings.block_rounds > 0:
            n_rounds, calibration = settings.block_rounds, 0
        else:
            n_rounds, calibration = calibrate(residents, warm, settings.block_s)
        outcome.calibration_rounds = calibration
        outcome.block_rounds = n_rounds
        log(f"blocks of {n_rounds} rounds; verdicts clear a margin of +-{margin * 100:.3g}% ({margin_source})"
            + (f" after {resolved.sets:.3g} sets of processes, taken to the sets the job runs"
               if math.isfinite(resolved.set_part) else ""))
        rng = np.random.default_rng(seed)
        position = 0
        ratios: list[float] = []
        cycle = 0
        epoch = 0
        cycles_from = time.monotonic()  # the time budget counts cycles only (not start-up, warm-up, sizing)
        respawn_at = respawn_interval(settings, start_s)
        while True:
            if time.monotonic() - cycles_from >= respawn_at:
                # fresh processes, in the next start order (`start_orders`): an offset that a resident owes to its
                # process (placement, memory layout, being started first) changes sides instead of lasting the job
                t_respawn = time.monotonic()
                retire()
                epoch += 1
                start_s = start_set()
                cycles_from += time.monotonic() - t_respawn  # respawning is not cycle time
                respawn_at = time.monotonic() - cycles_from + respawn_interval(settings, start_s)
                log(f"respawned every resident in {start_s:.1f} s (epoch {epoch})")
            steal0, t_cycle = steal_seconds(), time.perf_counter()
            core_ms = probe.probe()  # the probes read their pipes again at once: nothing to settle
            order = [keys[i] for i in rng.permutation(len(keys))]
            pin_cpu = job_cpus[cycle % len(job_cpus)] if settings.pin_single and len(job_cpus) > 1 else None
            blocks: dict[str, dict[str, Any]] = {}
            for key in order:
                current = key
                res = residents[key]
                waiting = {k: r.pids for k, r in residents.items() if k != key}
                waiting[""] = probe.pids
                unpark_s = 0.0
                if res.parked:  # continued and settled before the others' CPU is read: not in its block
                    t_unpark = time.perf_counter()
                    res.unpark()
                    settle(res.pids, quiet_ns=res.quiet_ns)  # back at its idle rate: what its timers owe has run
                    unpark_s = time.perf_counter() - t_unpark
                pinned = pin_cpu is not None and len(res.pids) == 1 and pin_process(res.pids[0], {pin_cpu})
                before = {k: cpu_ns(p) for k, p in waiting.items()}
                msg = run_block(res, n_rounds)
                others_ns = {k: cpu_ns(p) - before[k] for k, p in waiting.items()}
                cpus = cpus_of(res.pids)  # where its processes ran the block, before they go to sleep
                if pinned:
                    pin_process(res.pids[0], job_cpus)
                settle_s = rest(res)
                blocks[key] = {"msg": msg, "position": position, "others_ms": sum(others_ns.values()) / 1e6,
                               "others_by": {k: v / 1e6 for k, v in others_ns.items() if k},
                               "settle_ms": settle_s * 1e3, "unpark_ms": unpark_s * 1e3, "cpus": cpus,
                               "pinned_cpu": pin_cpu if pinned else None}
                position += 1
            wall = time.perf_counter() - t_cycle
            steal = (steal_seconds() - steal0) / (wall * max(1, len(probe.cores))) if wall > 0 else math.nan
            outcome.cycles = cycle + 1
            elapsed = time.monotonic() - cycles_from
            # cycles_s: the job's seconds of cycles at this cycle's end (what max_seconds counts), so a longer
            # job's rows also read as the shorter job it began as (`harness.selftest`, --at-seconds)
            host = {"cycle": cycle, "host_core_ms": core_ms, "host_steal": steal, "cycles_s": elapsed}
            if outcome.main_pair is not None:
                a, b_ = outcome.main_pair
                tp = {k: blocks[k]["msg"]["units"] / blocks[k]["msg"]["seconds"] for k in keys}
                ratios.append(tp[a] / tp[b_])
            reason, interval = stop_reason(ratios, cycle + 1, elapsed, settings,
                                           set_ended(settings, epoch, elapsed, respawn_at))
            if interval is not None:
                outcome.main_ratio = interval
                if (cycle + 1) % 10 == 0 or reason:
                    med, lo, hi = interval
                    log(f"cycle {cycle + 1}: {outcome.main_pair[0]} / {outcome.main_pair[1]} = {med:.3f} "
                        f"[{lo:.3f}, {hi:.3f}] (+-{half_width(*interval) * 100:.1f}%), {elapsed:.0f} s")
            for key in keys:
                b = blocks[key]
                msg = b["msg"]
                lat = np.asarray(msg["latencies"], dtype=float)
                extra = dict(msg.get("extra") or {})
                extra.update(host)
                extra.update({"paired": True, "block_rounds": n_rounds, "others_cpu_ms": b["others_ms"],
                              "others_cpu_ms_by": b["others_by"], "parked": residents[key].parkable,
                              "cpus": b["cpus"], "pinned_cpu": b["pinned_cpu"], "epoch": epoch,
                              "started_at": started_at[key],
                              "settle_ms": b["settle_ms"], "unpark_ms": b["unpark_ms"], "stopped_by": reason,
                              "precision_target": settings.precision, **resolved.row_fields(),
                              "confidence": settings.confidence})
                writer.append(make_row(bases[key], repetition=cycle, cycle=cycle, block=b["position"],
                                       status="ok", checksum=msg["checksum"], extra=extra,
                                       gil_enabled=msg.get("gil_enabled"),
                                       **timing_fields(msg["units"], msg["seconds"], lat)))
                outcome.rows += 1
            cycle += 1
            if reason:
                outcome.stopped_by = reason
                break
        current = ""
        retire()
    except ChildFailed as exc:
        outcome.status, outcome.message = exc.status, exc.message
        current = exc.backend
        if exc.traceback:
            (job_dir / "error.txt").write_text(exc.traceback)
            log(exc.traceback.rstrip())
    except BaseException:
        _tear_down(residents, probe, ledger)
        raise
    if outcome.status != "ok":
        err = make_row(bases[current], repetition=outcome.cycles, status=outcome.status,
                       error=f"{current}: {outcome.message}")
        writer.append(err)
    _tear_down(residents, probe, ledger)
    summary = {**asdict(settings), **resolved.row_fields(), "settings": asdict(settings), "backends": keys,
               "status": outcome.status, "message": outcome.message,
               "cycles": outcome.cycles, "block_rounds": outcome.block_rounds,
               "calibration_rounds": outcome.calibration_rounds, "leftover_processes": outcome.leftover_processes,
               "leftover_shm": outcome.leftover_shm, "stopped_by": outcome.stopped_by,
               "main_pair": list(outcome.main_pair) if outcome.main_pair else None,
               "main_ratio": list(outcome.main_ratio) if outcome.main_ratio else None,
               "elapsed_s": time.monotonic() - started, "load_avg_start": load_start,
               "load_avg_end": load_average()}
    (job_dir / COMPARE_FILE).write_text(json.dumps(summary, indent=1, default=str) + "\n")
    return outcome


def _tear_down(residents: dict[str, Resident], probe: Optional[CoreProbe], ledger: ShmLedger) -> None:
    """Kill every child's tree and the probes; remove the job's /dev/shm entries."""
    if probe is not None:
        probe.close()
    for res in residents.values():
        res.close()
    for res in residents.values():
        end_job(res.tree, ledger)
