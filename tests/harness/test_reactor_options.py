"""The reactor backend's options reach the runtime as the schema says: the ``wait_*`` options are the runtime's
`Waiting` (defaults unchanged), and the even split has one definition."""
from __future__ import annotations

import dataclasses
import mmap

from backends._bank_split import split_by_cost
from backends.reactor import ReactorConfig, waiting
from reactor_backend import _sync
from reactor_backend.placement import even_part
from reactor_backend.waiting import Waiting


def test_the_schema_defaults_are_the_runtimes_waiting_defaults():
    assert waiting(ReactorConfig()) == Waiting()


def test_wait_options_set_every_barrier_phase():
    w = waiting(ReactorConfig(wait_spins=7, wait_yield_us=1.5, wait_yield_shared_us=2, wait_yield_gap_us=0.25))
    assert w == dataclasses.replace(Waiting(), spins=7, yield_ns=1500, yield_shared_ns=2000, yield_gap_ns=250)
    own = _sync.Barrier(mmap.mmap(-1, _sync.control_size(1)), 1, 0, waiting=w)  # a core per process
    assert (own.spin_iters, own.yield_ns, own.yield_gap_ns, own.adapt) == (7, 1500, 250, False)
    crowded = _sync.Barrier(mmap.mmap(-1, _sync.control_size(4096)), 4096, 0, waiting=w)  # more than cores
    assert (crowded.spin_iters, crowded.yield_ns, crowded.adapt) == (0, 2000, True)


def test_the_cost_placement_spreads_the_rest_by_the_even_split():
    out = split_by_cost(10, 3, step=1.0, gather=0.0, split_gather=True, handoff=0.0)
    first = out.count(0)
    assert out[first:] == [1 + even_part(i, 10 - first, 2) for i in range(10 - first)]
