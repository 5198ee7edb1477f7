"""How a process of the processes executor waits for the others (`_sync.Barrier`): named options.

A waiter spins briefly (``pause``), then yields its core (``sched_yield``), then sleeps in ``FUTEX_WAIT``
in time slices. How long each phase lasts decides what a round costs: too little spinning or yielding and
a waiter goes to sleep and comes back to cold caches; too much and it burns the core its partner needs.
The defaults were measured on a 2-vCPU VM (docs/processes.md); another machine may want others, so each is
an option of ``run(..., executor="processes", waiting=Waiting(...))`` and of the reactor backend's config
(``backend.wait_*``, docs/reactor.md, "The reactor backend's options").
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Waiting:
    """The waiting phases of a process that waits for another's progress or at a barrier.

    ``spins``: ``pause`` instructions before yielding, only when every process owns a core (with fewer cores
    than processes a spinner burns the quantum its partner needs; with cores to spare a short spin catches
    a partner that is nearly there).

    ``yield_ns``: how long a waiter yields before it sleeps when every process owns a core. Long: a waiter
    that sleeps lets its (virtual) CPU go idle, and on a VM the host then runs something else there, so the
    waiter comes back to cold caches, and it covers a server's serial part of several milliseconds (marl
    simple_spread). docs/processes.md, "Cost per round", gives the readings behind each default.

    ``yield_shared_ns``: the same when processes outnumber cores: short, and adapted between waits (a wait
    that ends while yielding lengthens the next phase, one that had to sleep halves it), since every yield
    then hands whole time slices to the other processes.

    ``yield_gap_ns``: a ``sched_yield`` that returns after more than this (other processes ran meanwhile)
    ends the yield phase at once: on a machine shared with other work,
    yielding costs whole time slices of others per round, sleeping one wake-up.

    ``slice_ns``: the longest single futex sleep; ``check_ns``: how often a sleeping waiter checks that its
    partners are alive (the parent reaps dead children, a child checks its parent) and sees Ctrl-C.
    """

    spins: int = 50
    yield_ns: int = 20_000_000
    yield_shared_ns: int = 50_000
    yield_gap_ns: int = 30_000
    slice_ns: int = 10_000_000
    check_ns: int = 50_000_000

    def __post_init__(self) -> None:
        for name in ("spins", "yield_ns", "yield_shared_ns", "yield_gap_ns"):
            if getattr(self, name) < 0:
                raise ValueError(f"Waiting.{name} must be >= 0, got {getattr(self, name)}")
        for name in ("slice_ns", "check_ns"):
            if getattr(self, name) <= 0:
                raise ValueError(f"Waiting.{name} must be > 0, got {getattr(self, name)}")
