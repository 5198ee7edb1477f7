"""The backend contract: what every backend in this package implements and what it may rely on.

A backend owns orchestration only (where the roles of a `scenarios.base.Scenario` live, how a round's
messages move, how rounds synchronize); the harness builds it from the registry in `backends` and drives it:
``start``, one ``run`` for all warm-up and timed rounds, ``stop``. Design: docs/design.md.

Contract every backend keeps:
  * worker ``i`` is built from ``scenario.make_worker(i)`` in the process that runs it (never pickled after
    construction: environments and models are created where they live);
  * the server is built once with ``scenario.make_server()`` and lives in the process that called the
    backend's ``run`` (so the harness reads its checksum afterwards);
  * ``clock.begin()`` is called once right before the first round and ``clock.tick()`` once after each
    completed round, both by whoever runs ``server.gather`` (a backend that cannot tell when the roles are
    ready may skip ``begin``: start-up then ends at the first tick);
  * a tick that returns False ends the rounds there: ``run`` returns as after its last round, with every
    role still up for ``stop`` to close (a paired job's stop; an exception from ``tick`` is an error).
"""
from __future__ import annotations

import abc
import mmap
from dataclasses import dataclass, field
from typing import Any, Protocol, Sequence

from scenarios.base import Broadcast, Scenario, Server


@dataclass
class BackendConfig:
    """The base of every backend's config schema (its module's ``SCHEMA``): ``name`` selects the backend.

    A numeric field declares its range in its metadata, ``field(default=..., metadata={"range": {"ge": 1}})``
    (keys ``ge``, ``gt``, ``le``); the harness refuses a job with a value outside it before anything runs."""

    name: str = "?"
    #: a known effect for the harness's self-test (`harness.child.ExtraWork`): each timed round costs this share
    #: of the backend's own warm-up round time more, spent in the process that ticks the clock; changes no result
    extra_work: float = field(default=0.0, metadata={"range": {"ge": 0, "le": 1}})


class Clock(Protocol):
    """What a backend calls once per completed round (implemented by the harness's round clock).

    The harness's clocks also answer ``timer_stops_at_next_tick() -> bool`` (optional: use ``getattr``): whether
    the coming tick may stop the timer (a block's or a repetition's last round, a progress report), which a
    backend whose processes run rounds on their own reads to hold them there (`backends.capacity`). A False
    answer is a promise: that tick does not stop the timer.
    """

    def begin(self) -> None:
        """The roles exist and the first round starts now (ends the start-up interval)."""

    def tick(self) -> bool | None:
        """One round is complete. False: leave the rounds now (the harness needs no more of them: a paired job's
        stop), as after the last round, so that the roles are closed in order by ``stop``; anything else (True,
        None: a clock that never asks) goes on. Backends test ``clock.tick() is False``."""


def shared_slots(n: int) -> Any:
    """``n`` int64 slots, zero, in anonymous shared memory: written by processes forked after this call and
    read by this one (nothing in /dev/shm; gone with the last process that maps it)."""
    import numpy as np

    return np.frombuffer(mmap.mmap(-1, 8 * max(1, n)), dtype=np.int64)[:n]


def split_messages(msgs: Broadcast | Sequence[Any], n: int) -> list[Any]:
    """Expand a scatter result into exactly ``n`` per-worker messages (checks the count).

    Args:
        msgs: what ``server.scatter()`` returned: a `Broadcast` or one message per worker.
        n: the workers.

    Raises:
        ValueError: ``msgs`` holds another number of messages.
    """
    if isinstance(msgs, Broadcast):
        return [msgs.value] * n
    msgs = list(msgs)
    if len(msgs) != n:
        raise ValueError(f"server.scatter() returned {len(msgs)} messages for {n} workers")
    return msgs


class Backend(abc.ABC):
    """Orchestration of one scenario: where the roles live and how a round's messages move.

    The harness calls ``start`` (framework start-up, role creation: timed apart), then ``run`` once for all
    warm-up and timed rounds, then ``stop`` (always, also after an error).
    """

    #: backend name and variant for the results row (``reactor``/``processes``, ``ray``/``compiled``)
    name: str = ""
    variant: str = "-"
    #: the job's ``threads_per_worker`` (set by `backends.make_backend`): the backend applies it with
    #: `scenarios.threads.apply_threads` in every process that runs roles, once its roles are built
    threads_per_worker: int = 1

    def __init__(self, config: Any, workers: int):
        self.config = config
        self.workers = int(workers)
        #: seconds of start-up by part (e.g. Ray: ray_init_s, actor_creation_s, compile_s), kept in rows
        self.startup_breakdown: dict[str, float] = {}
        #: facts about the layout for the results row's ``extra`` (e.g. Ray: envs_per_actor, actors)
        self.row_extra: dict[str, Any] = {}
        #: set by ``start`` (or ``run``, before the first round): the index of the OS process that runs worker ``i`` (0 = the server's process);
        #: the harness splits a round's time by critical path with it (`harness.phases`). None: unknown
        self.process_of_worker: list[int] | None = None

    @abc.abstractmethod
    def start(self, scenario: Scenario, server: Server) -> None:
        """Start the framework and create the worker roles (not counted in throughput)."""

    @abc.abstractmethod
    def run(self, rounds: int, clock: Clock) -> None:
        """Run ``rounds`` rounds, or fewer where ``clock.tick()`` (called after each one's ``server.gather``)
        returns False; then return, leaving the roles to ``stop``."""

    @abc.abstractmethod
    def stop(self) -> None:
        """Tear everything down: no process, actor or shared-memory segment may outlive this call."""

    def torch_threads_observed(self) -> int | list[int] | None:
        """torch's intra-op thread count as read in the workers' processes once their roles were built
        (`scenarios.threads.observed`: None when no worker loaded torch); recorded in every row's ``extra``."""
        return None

    def timer(self, running: bool) -> None:
        """The round clock's timer stops (``False``: a progress report, the end of the warm-up or of a
        repetition) or runs again (``True``; also at the first round). A backend that counts work beside the
        clock (the capacity backend's other copies) counts it only while the timer runs. Optional."""

    def pause(self) -> None:
        """A paired job (`python -m harness compare`) holds this backend's rounds until ``resume``, while other
        backends run their blocks: stop whatever would still run meanwhile (the capacity backend's
        uncoordinated copies). Processes that wait for the next round in a blocking wait need nothing.
        Optional."""

    def resume(self) -> None:
        """The held rounds go on (after ``pause``). Optional."""

    #: a paired job parks this backend between its blocks: every process of its tree stopped (SIGSTOP) after its
    #: warm-up and each of its blocks, continued (SIGCONT) before the next, for a framework whose daemons run
    #: timers whatever the workload (Ray) and would take CPU during the other backends' blocks
    parkable: bool = False

    def prepare_to_park(self) -> None:
        """Called before ``start`` when a paired job will park this backend (``parkable``): make the framework
        tolerate stopped processes (e.g. Ray's health checks, which would declare a stopped raylet dead).
        Optional."""

    def metrics(self) -> dict[str, float]:
        """Numbers about the rounds since the previous call (e.g. where a round's time went), for the
        results row of the repetition that just ended. Optional; called from the clock's callbacks."""
        return {}
