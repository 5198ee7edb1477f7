"""Shared-memory primitives of the multi-process executor, exercised with real forked processes:
the barrier and the reduction, the stop word, futex sleeping under oversubscription, the slot
transport (arrays, pickles, growth), and the process group's lifecycle (errors, killed workers,
Ctrl-C, no leaked processes or /dev/shm segments)."""
from __future__ import annotations

import glob
import os
import signal
import threading
import time

import numpy as np
import psutil
import pytest

from reactor_backend import _sync
from reactor_backend import transport as T
from reactor_backend._procgroup import ProcessGroup, WorkerDied, WorkerError


def _segments() -> set[str]:
    return set(glob.glob(f"/dev/shm/rb-{os.getpid()}-*"))


@pytest.fixture(autouse=True)
def no_leaks():
    """Every test must leave no child process and no /dev/shm segment of this process behind."""
    before = _segments()
    yield
    assert psutil.Process().children(recursive=True) == []
    assert _segments() - before == set()


def _fork_all(n, body):
    """Run body(rank, barrier) in n-1 forked children and here; return rank 0's result."""
    return ProcessGroup(n).run(body)


# ---- barrier ------------------------------------------------------------------------------------

@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_barrier_rounds(n):
    """Nobody leaves round r before everybody has counted r + 1 arrivals."""
    rounds = 400

    def body(rank, b):
        for r in range(rounds):
            b.add_counter(0, 1)
            b.arrive()
            assert min(b.counter(p, 0) for p in range(n)) >= r + 1
        return b.counter(rank, 0)

    assert _fork_all(n, body) == rounds


def test_lexicographic_min_prefers_microstep():
    def body(rank, b):
        return b.reduce_at(1 << 32, 5, 3 - rank, 9, rank, 0)

    assert _fork_all(3, body) == (5, 1, 9, 0, 0)


def test_oversubscribed_barrier_does_not_starve():
    """6 processes on (at most) 2 cores: no busy spinning, yields and futex sleeps still finish fast."""
    n, rounds = 6, 300

    def body(rank, b):
        b.slice_ns = 2_000_000_000  # a sleeper missed by a wake-up would cost 2 s
        t0 = time.perf_counter()
        for _ in range(rounds):
            b.arrive()
        return (time.perf_counter() - t0) / rounds, b.spin_iters

    per_round, spins = _fork_all(n, body)
    if n > len(os.sched_getaffinity(0)):
        assert spins == 0
    assert per_round < 0.5  # generous: far below one lost wake-up, far above a loaded machine's rounds


def test_counters_are_per_process():
    def body(rank, b):
        b.add_counter(2, rank + 1)
        b.add_counter(2, 10)
        b.arrive()
        return [b.counter(p, 2) for p in range(b.nproc)]

    assert _fork_all(3, body) == [11, 12, 13]


def test_stop_word_first_request_wins_and_wakes_waiters():
    def body(rank, b):
        if rank == 1:
            time.sleep(0.05)
            assert b.request_stop(99)
            assert not b.request_stop(100)
            raise _sync.Aborted(99)
        t0 = time.perf_counter()
        with pytest.raises(_sync.Aborted) as info:
            b.arrive()
        assert info.value.code == 99
        assert time.perf_counter() - t0 < 20  # generous: without the stop word it would wait forever
        raise info.value

    with pytest.raises(_sync.Aborted):
        _fork_all(3, body)


# ---- point-to-point progress ---------------------------------------------------------------------

def test_progress_handoff_orders_data_between_processes():
    """A ping-pong through publish / wait_for carries data written before each publish (here: a
    counter slot), in order, for many rounds, with no barrier."""
    rounds = 2000

    def body(rank, b):
        for i in range(1, rounds + 1):
            if rank == 0:
                b.add_counter(0, 1)          # "data" written before publishing
                b.publish(2 * i)
                b.wait_for(1, 2 * i + 1)
                assert b.counter(1, 0) == i  # the partner's data for this round is visible
            else:
                b.wait_for(0, 2 * i)
                assert b.counter(0, 0) == i
                b.add_counter(0, 1)
                b.publish(2 * i + 1)
        return b.progress(0), b.progress(1)

    assert _fork_all(2, body) == (2 * rounds, 2 * rounds + 1)


def test_writer_does_not_wait_for_readers():
    """sync(publish=True, wait=()) returns at once even though nobody has read yet; a reader that
    arrives late still passes (positions only grow, so later positions satisfy earlier waits)."""
    def body(rank, b):
        if rank == 0:
            for pos in range(1, 101):
                b.sync(pos, True, ())
            b.wait_for(1, 1)  # keep the partner's mapping alive until it has checked
            return None
        time.sleep(0.2)
        b.sync(50, False, (0,))  # rank 0 is long past 50: it did not wait for this reader
        assert b.progress(0) == 100
        b.publish(1)
        return None

    _fork_all(2, body)


@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_reduce_at_rounds(n):
    """The tag-advance reduction over progress words agrees on the same minima in every process,
    round after round, also when processes arrive in different orders (parity double-buffering)."""
    rounds = 400

    def body(rank, b):
        out = []
        for r in range(rounds):
            if (r + rank) % 7 == 0:
                time.sleep(0.0002)  # stagger arrivals
            t, m, st, sm, fl = b.reduce_at((r + 1) << 32, r * 10 + (n - 1 - rank), rank,
                                           _sync.NEVER if rank != n - 1 else r, 7 - rank, 1 << rank)
            assert (t, m) == (r * 10, n - 1)
            assert (st, sm) == (r, 7 - (n - 1))
            assert fl == (1 << n) - 1
            out.append(t)
        return out

    assert _fork_all(n, body) == [r * 10 for r in range(rounds)]


def test_progress_wait_sleeps_and_is_woken():
    """A waiter that gave up spinning sleeps in the futex and is woken by the publish (no lost
    wake-up): it returns soon after the publish, not at the end of its sleep slice."""
    def body(rank, b):
        b.slice_ns = 60_000_000_000  # a lost wake-up would show as a 60 s wait
        if rank == 1:
            time.sleep(0.3)
            b.publish(7)
            return None
        t0 = time.perf_counter()
        b.wait_for(1, 7)
        return time.perf_counter() - t0, b.futex_sleeps

    elapsed, _sleeps = _fork_all(2, body)
    assert 0.25 < elapsed < 20  # generous: a busy machine may delay the wake-up, a lost one takes 60 s


def test_handoff_counts_from_the_publish_not_from_the_start_of_the_wait():
    """With ``stamp`` on, a wait that had to wait adds only its hand-off (the awaited publish's stamp to
    the moment the waiter saw it) to ``handoff_ns``, not the time the partner spent working before it
    published; a position reached before the wait counts nothing, and a waiter with ``stamp`` off counts
    nothing."""
    def body(rank, b):
        b.stamp = True
        b.handoff_counter = 7        # the total also kept where every process can read it
        if rank == 1:
            b.wait_for(0, 1)
            time.sleep(0.2)          # the partner's "work" while rank 0 waits
            b.publish(5)
            b.wait_for(0, 2)
            b.publish(6)             # published long before rank 0 waits for it: no hand-off
            b.wait_for(0, 3)
            time.sleep(0.2)
            b.publish(7)
            return None
        t0 = time.perf_counter_ns()
        b.publish(1)
        b.wait_for(1, 5)
        waited = time.perf_counter_ns() - t0
        first = (b.handoffs, b.handoff_ns)
        b.publish(2)
        while b.progress(1) < 6:
            time.sleep(0.001)
        b.wait_for(1, 6)
        b.stamp = False
        b.publish(3)
        b.wait_for(1, 7)
        return waited, first, (b.handoffs, b.handoff_ns), b.counter(0, 7)

    waited, (n, ns), after, counted = _fork_all(2, body)
    assert n == 1 and 0 < ns < waited and waited >= 200_000_000
    assert ns < waited - 150_000_000     # the 0.2 s of work before the publish is not hand-off
    assert after == (1, ns)
    assert counted == ns


def test_stamping_a_publish_leaves_the_progress_line_to_the_progress_word():
    """A waiter spins on the progress word's cache line: with ``stamp`` on, a publish writes its stamp
    elsewhere (its own line), so the waiter's line changes exactly as without stamps (the word and its
    sequence number); the stamps did cost the empty actors round 1.4 us when they shared that line."""
    def changed(before: bytes, after: bytes) -> set[int]:
        return {i for i, (x, y) in enumerate(zip(before, after)) if x != y}

    buf = bytearray(_sync.control_size(2))
    b = _sync.Barrier(buf, 2, 0)
    before = bytes(buf)
    b.publish(1)
    plain = changed(before, bytes(buf))
    assert plain                                     # the progress word (and its sequence number)
    line = {i // 64 for i in plain}
    assert len(line) == 1
    b.stamp = True
    before = bytes(buf)
    b.publish(2)
    stamped = changed(before, bytes(buf))
    assert stamped - plain                           # the stamp was written
    assert {i for i in stamped if i // 64 in line} <= plain


def test_counters_address_points_at_this_process_counters():
    """Compiled code stores the breakdown's totals through ``counters_address`` (no Python call per tag):
    a word stored there is the counter every process reads; slot checks guard the hand-off counter."""
    import ctypes

    buf = bytearray(_sync.control_size(2))
    b = _sync.Barrier(buf, 2, 1)
    ctypes.c_int64.from_address(b.counters_address() + 8 * 3).value = 12345
    assert _sync.Barrier(buf, 2, 0).counter(1, 3) == 12345
    assert b.counter(0, 3) == 0
    with pytest.raises(IndexError):
        b.handoff_counter = 16  # COUNTERS: 16 per process
    b.handoff_counter = -1


def test_the_yield_phase_adapts_only_when_asked():
    """With ``adapt`` (processes outnumber cores) a wait whose yield phase ran out and had to sleep halves
    the next phase; without it (a core per process) the phase stays as long as it was, whatever the wait.
    The partner here is a thread of this process with its own handle on the block."""
    import mmap

    buf = mmap.mmap(-1, _sync.control_size(2))
    partner = _sync.Barrier(buf, 2, 1)
    for position, adapt in ((1, False), (2, True)):
        waiter = _sync.Barrier(buf, 2, 0)
        waiter.adapt = adapt
        waiter.yield_ns = 2_000_000
        before = waiter.yield_phase_ns      # 2 ms (50 us on a single core: the oversubscribed start)
        publisher = threading.Timer(0.05, partner.publish, args=(position,))
        publisher.start()
        waiter.wait_for(1, position)        # yields at most 2 ms, then sleeps until the publish at 50 ms
        publisher.join()
        assert waiter.futex_sleeps >= 1     # the phase ran out (or a late yield ended it): it slept
        assert waiter.yield_phase_ns == (max(20_000, before // 2) if adapt else before), adapt


def _timed_wait(waiter, partner, position, after_s):
    """``waiter`` meets ``partner`` (a thread of this process with its own handle), which publishes ``position``
    ``after_s`` from now: (wall ns, this thread's CPU ns, the waiter's counted wait CPU ns) of the meeting."""
    publisher = threading.Timer(after_s, partner.publish, args=(position,))
    w0, t0, c0 = waiter.wait_cpu_ns, time.perf_counter_ns(), time.thread_time_ns()
    publisher.start()
    waiter.sync(position, False, (1,))  # a meeting that waits for rank 1, as the executor's
    wall, cpu = time.perf_counter_ns() - t0, time.thread_time_ns() - c0
    publisher.join()
    return wall, cpu, waiter.wait_cpu_ns - w0


def test_a_wait_counts_the_cpu_it_used_not_the_time_it_slept():
    """With ``count_cpu`` (the breakdown's), a meeting adds the CPU its wait used to ``wait_cpu_ns``: a waiter
    that yielded 2 ms and then slept until the publish at 100 ms counts about its 2 ms, not the wall time; one
    that kept yielding until the publish counts what the CPU clock says it used (its wall time, on a quiet
    core); with a core per process (else the meeting's own clock reads hold it) a publish that wakes a sleeper
    counts the wake-up in the publisher's. Without ``count_cpu`` nothing counts."""
    import mmap

    buf = mmap.mmap(-1, _sync.control_size(2))
    partner = _sync.Barrier(buf, 2, 1)
    partner.count_cpu = True
    waiter = _sync.Barrier(buf, 2, 0)
    waiter.count_cpu = True
    waiter.yield_ns, waiter.adapt = 2_000_000, False
    wall, cpu, counted = _timed_wait(waiter, partner, 1, 0.1)
    assert waiter.futex_sleeps >= 1                       # it slept, and the publish woke it
    assert 0 < counted <= cpu + 1_000_000, (wall, cpu, counted)
    assert counted < wall / 4, (wall, cpu, counted)       # the ~98 ms asleep are not CPU
    if len(os.sched_getaffinity(0)) >= 2:                 # a core per process (2): the publish counts its wake-up
        assert partner.wait_cpu_ns > 0
    waiter.yield_ns = 500_000_000
    wall, cpu, counted = _timed_wait(waiter, partner, 2, 0.02)
    assert abs(counted - cpu) <= 0.25 * cpu + 1_000_000, (wall, cpu, counted)
    waiter.count_cpu = False
    before = waiter.wait_cpu_ns
    _timed_wait(waiter, partner, 3, 0.01)
    assert waiter.wait_cpu_ns == before


def test_a_long_spin_counts_the_cpu_it_used():
    """A waiter told to spin for long (``backend.wait_spins`` set high, where every process has a core) counts its
    spin as its wait's CPU, as a yielding waiter counts its yields: the spin reads the clock every few dozen pauses,
    so its wall time counts up to the last reading that found it still on its core. (It counted none of a spin
    longer than 5 us: the breakdown then put the spin in the process's CPU outside its waits.)"""
    import mmap

    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("a spinning waiter and its partner need a core each")
    buf = mmap.mmap(-1, _sync.control_size(2))
    partner = _sync.Barrier(buf, 2, 1)
    waiter = _sync.Barrier(buf, 2, 0)
    waiter.count_cpu = True
    waiter.spin_iters = 1 << 40  # spins until the publish (or until it loses its core)
    wall, cpu, counted = _timed_wait(waiter, partner, 1, 0.02)
    assert abs(counted - cpu) <= 0.25 * cpu + 1_000_000, (wall, cpu, counted)


def test_wait_any_returns_once_any_pending_process_arrived_in_whatever_order():
    """``wait_any(position, ranks, pending)`` returns as soon as one of the pending ranks has reached the
    position, whichever it is: here the last rank, while the first waits for the waiter to see it (a meeting
    reads each rank's slots as it arrives, not rank after rank), and with ``stamp`` on it counts that rank's
    hand-off. Ranks not pending are not waited for; one already there, or nothing pending, returns at once."""
    def body(rank, b):
        b.stamp = True
        if rank == 2:
            b.publish(1)  # an earlier publish in its ring: the hand-off to position 2 is known exactly
            time.sleep(0.05)
            b.publish(2)
            b.wait_for(0, 9)
            return None
        if rank == 1:
            deadline = time.monotonic() + 30  # a wait_any that waited for rank 1 first fails below, not hangs
            while b.progress(0) < 5 and time.monotonic() < deadline:
                time.sleep(0.001)
            b.publish(2)
            b.wait_for(0, 9)
            return None
        b.wait_any(2, (1, 2), bytearray([1, 1]))
        assert b.progress(2) >= 2 and b.progress(1) < 2  # rank 2 ended the wait; rank 1 has not arrived
        assert b.handoffs == 1                            # the wait counted rank 2's hand-off
        b.wait_any(2, (1, 2), bytearray([0, 1]))           # there already
        b.wait_any(2, (1, 2), bytearray(2))                # nothing pending
        b.publish(5)
        b.wait_any(2, (1, 2), bytearray([1, 0]))
        assert b.progress(1) >= 2
        with pytest.raises(IndexError):
            b.wait_any(2, (3,), bytearray([1]))
        with pytest.raises(ValueError):
            b.wait_any(2, (1, 2), bytearray(1))
        with pytest.raises(ValueError):
            b.wait_any(2, (1, 2, 1, 2), bytearray(4))  # more ranks than processes
        b.publish(9)
        return True

    assert _fork_all(3, body)


def test_stop_wakes_a_wait_for_any():
    def body(rank, b):
        if rank == 1:
            time.sleep(0.05)
            b.request_stop(42)
            raise _sync.Aborted(42)
        with pytest.raises(_sync.Aborted) as info:
            b.wait_any(1, (1,), bytearray([1]))
        assert info.value.code == 42
        raise info.value

    with pytest.raises(_sync.Aborted):
        _fork_all(2, body)


def test_stop_wakes_a_progress_waiter():
    def body(rank, b):
        if rank == 1:
            time.sleep(0.05)
            b.request_stop(42)
            raise _sync.Aborted(42)
        t0 = time.perf_counter()
        with pytest.raises(_sync.Aborted) as info:
            b.wait_for(1, 1)
        assert info.value.code == 42
        assert time.perf_counter() - t0 < 20  # generous: without the stop word it would wait forever
        raise info.value

    with pytest.raises(_sync.Aborted):
        _fork_all(2, body)


def test_check_callable_runs_while_sleeping():
    buf = bytearray(_sync.control_size(2))
    calls = []

    def check():
        calls.append(1)
        if len(calls) == 3:
            raise TimeoutError("partner gone")

    b = _sync.Barrier(buf, 2, 0, check=check)
    b.check_ns = 1_000_000
    with pytest.raises(TimeoutError):
        b.arrive()  # rank 1 never comes
    assert b.futex_sleeps >= 3


def test_sigint_interrupts_a_wait():
    buf = bytearray(_sync.control_size(2))
    b = _sync.Barrier(buf, 2, 0)
    timer = threading.Timer(0.1, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    t0 = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        b.arrive()
    assert time.perf_counter() - t0 < 20  # generous: rank 1 never comes, so only the signal ends the wait
    timer.join()


# ---- transport ----------------------------------------------------------------------------------

@pytest.fixture
def table():
    prefix = f"rb-{os.getpid()}-tt-"
    tab = T.SlotTable(prefix, 4, create=True)
    yield tab
    T.unlink_prefix(prefix)


def test_array_roundtrip_is_one_copy_and_a_readonly_view(table):
    w, r = table.writer(0), table.reader(0)
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    w.write(x, round_=7)
    assert r.round() == 7
    y = r.read()
    assert y.dtype == x.dtype and y.shape == x.shape and np.array_equal(x, y)
    assert not y.flags.writeable
    assert np.shares_memory(y, r.read())   # a view over the slot, not a copy
    x[0, 0] = 100
    assert y[0, 0] == 0                    # the writer's array is not shared
    w.write(x * 2, round_=8)
    assert y[0, 0] == 200                  # ...but the view follows the slot's next value
    c = table.reader(0, copy=True).read()
    assert c.flags.writeable and not np.shares_memory(c, y)


def test_a_lent_array_is_the_slot_itself_and_lending_publishes_nothing(table):
    w, r = table.writer(1), table.reader(1)
    w.write(np.zeros(3, dtype=np.int16), round_=4)
    a = w.lend((2, 5), np.float64)
    assert a.flags.writeable and a.shape == (2, 5) and a.dtype == np.float64
    assert r.round() == 4                          # laid out, not published: still round 4's value
    a[...] = np.arange(10).reshape(2, 5)
    w.write(a, round_=5)
    y = r.read()
    assert r.round() == 5 and y.shape == (2, 5) and np.array_equal(y, np.arange(10).reshape(2, 5))
    assert w.lend((2, 5), "float64") is a          # the same array while the layout stays
    a[1, 4] = -1.0                                  # written in place, not yet sent...
    assert y[1, 4] == -1.0                         # ...the reader's view shows it: the slot's own memory
    w.write(a[:], round_=6)                        # a view of all of it is sent in place as well
    assert r.round() == 6 and r.read()[1, 4] == -1.0
    w.write(np.ones((2, 5)), round_=7)             # another array of the layout is copied into the slot
    assert (a == 1).all() and (r.read() == 1).all()
    b = w.lend(7, np.uint8)                        # a new layout: a new array, readers follow
    b[...] = 9
    w.write(b, round_=8)
    assert r.read().tolist() == [9] * 7
    e = w.lend((0,), np.float32)                   # no bytes: an empty array, sent as such
    w.write(e, round_=9)
    assert r.read().shape == (0,) and r.read().dtype == np.float32
    with pytest.raises(ValueError, match="plain-dtype"):
        w.lend(3, object)


def test_non_contiguous_and_odd_arrays(table):
    w, r = table.writer(1), table.reader(1)
    base = np.arange(100, dtype=np.int64).reshape(10, 10)
    for value in (base[:, ::3], base.T, np.zeros((0, 5)), np.array(3.5), np.array(["a", "bc"]),
                  np.array([1, "x"], dtype=object), np.zeros(3, dtype=[("a", "i4"), ("b", "f8")]),
                  np.ma.masked_array([1, 2], mask=[0, 1])):
        w.write(value, 1)
        got = r.read()
        assert type(got) is type(value) and got.dtype == value.dtype and got.shape == value.shape
        assert np.array_equal(np.asarray(got), np.asarray(value))


def test_pickled_values_with_out_of_band_arrays(table):
    w, r = table.writer(2), table.reader(2)
    for value in (None, 0, 3.25, "text", (1, [2, {"k": b"v"}]), {"obs": np.ones((4, 84, 84), np.uint8), "rew": 1.0}):
        w.write(value, 1)
        got = r.read()
        if isinstance(value, dict):
            assert got.keys() == value.keys() and np.array_equal(got["obs"], value["obs"])
            assert not got["obs"].flags.writeable  # zero-copy out-of-band buffer
        else:
            assert got == value


def test_records_keep_types_values_and_follow_layout_changes(table):
    """Flat tuples/lists of arrays and scalars (an env step) cross without pickling, equal to what
    was sent, round after round; a change of layout (shape, field type, length, container, an int
    beyond 64 bits, a non-record value) is picked up at once by the same reader."""
    w, r, rc = table.writer(2), table.reader(2), table.reader(2, copy=True)
    obs = np.arange(4, dtype=np.float32)
    seq = [(obs, 1.0, False), (obs * 2, 0.5, True), (obs * 3, -2.0, False),       # same layout: fast path
           # one field differs from the cached layout: the writer's quick match must notice each
           (obs, 1, False), (obs.astype(np.float64), 1.0, False), [obs, 1.0, False], (obs[:2], 1.0, False),
           (obs, 1.0, 1), (obs, 1.0, False, None), (obs, 1.0, False), (obs[::2].copy(), 1.0, None),
           (np.zeros((2, 3), np.uint8), 1, None),                                # new layout
           [np.ones(3), 2.5, 7, True, None, np.zeros(0, np.int16)],              # list, empty array
           (1 << 70, 1.0),                                                       # int beyond int64: pickled
           (np.float64(1.5), 2.0),                                               # numpy scalar: pickled
           (obs, 1.0, False), ("text", 1), (), (obs * 4, 9.0, True)]
    for i, value in enumerate(seq):
        w.write(value, i)
        for reader in (r, rc):
            got = reader.read()
            assert type(got) is type(value) and len(got) == len(value)
            for a, b in zip(got, value):
                assert type(a) is type(b)
                if isinstance(b, np.ndarray):
                    assert a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)
                    assert a.flags.writeable == (reader is rc)
                else:
                    assert a == b
    # a view handed out earlier follows the slot's next value of the same layout (views contract)
    w.write((obs, 1.0, False), 20)
    v = r.read()
    w.write((obs + 10, 1.0, False), 21)
    assert v[0][0] == 10


def test_a_small_records_fields_share_one_cache_line_and_a_large_array_starts_its_own(table):
    """An env step's record (reward, done, a 4-float observation, a 21-byte checksum encoding) lies in one 64-byte
    line of the segment, every array at a 16-byte boundary (numpy's largest alignment): a reader on another core
    fetches one line per record, not one per field. An array of a cache line or more starts on a line of its own.
    Values cross unchanged, the arrays aligned."""
    import pickle

    w, r = table.writer(3), table.reader(3)

    def data_offsets(value):
        w.write(value, 1)
        n = int.from_bytes(bytes(w.buf[:8]), "little")
        container, fields, offsets = pickle.loads(bytes(w.buf[8:8 + n]))
        base = T._aligned(8 + n)
        ends = [off + (f[3] if f[0] == "a" else T.SCALAR_BYTES) for f, off in zip(fields, offsets)]
        return base, fields, offsets, ends

    step = (np.arange(4, dtype=np.float32), 1.0, False, np.arange(21, dtype=np.uint8))
    base, fields, offsets, ends = data_offsets(step)
    assert base % 64 == 0 and max(ends) <= 64
    assert all(off % 16 == 0 for f, off in zip(fields, offsets) if f[0] == "a")
    got = r.read()
    assert all(np.array_equal(a, b) for a, b in zip(got, step)) and all(a.flags.aligned for a in got[::3])
    big = (np.arange(3, dtype=np.float64), 2.0, np.arange(100, dtype=np.float64))
    base, fields, offsets, ends = data_offsets(big)
    assert offsets[0] == 16 and offsets[2] % 64 == 0 and offsets[2] >= ends[0]
    got = r.read()
    assert np.array_equal(got[2], big[2]) and got[1] == 2.0 and got[2].flags.aligned


def test_bare_scalars_cross_as_eight_byte_records_not_pickles(table):
    """A bare int, float or bool (an agent's action) is laid out once as a one-field record and then
    written in place: equal value and exact type at the reader, the slot's kind a record (not a
    pickle), one layout for as long as the type stays; a change of type, an int beyond 64 bits, a
    numpy scalar or a non-scalar is picked up at once by the same reader."""
    w, r = table.writer(3), table.reader(3)

    def kind() -> int:
        return T._HDR.unpack_from(table.mm, w.off)[4]

    def layout() -> int:
        return T._HDR.unpack_from(table.mm, w.off)[1]

    w.write(3, 0)
    first = layout()
    for i, v in enumerate([4, -(1 << 63), (1 << 63) - 1, 0], start=1):   # same layout: written in place
        w.write(v, i)
        got = r.read()
        assert type(got) is int and got == v and r.round() == i
        assert kind() == T.KIND_RECORD and layout() == first
    seq = [2.5, -0.0, True, False, 7, 1 << 70, 8, np.int64(9), None, (1, 2.0), 3.25, [True], False]
    for i, v in enumerate(seq, start=10):
        w.write(v, i)
        got = r.read()
        assert type(got) is type(v) and (got == v if not isinstance(v, float) else repr(got) == repr(v))
        big_or_numpy = v == 1 << 70 or type(v) is np.int64
        assert kind() == (T.KIND_PICKLE if big_or_numpy else T.KIND_NONE if v is None else T.KIND_RECORD)


def test_records_with_strided_arrays_extreme_ints_and_byte_orders(table):
    """The compiled record writer copies a strided field (a slice, a transpose) by value, keeps
    64-bit ints exact at both ends, pickles an int beyond them and returns to the record layout at
    the next value, and never mistakes a byte-swapped dtype for the laid-out one."""
    w, r = table.writer(0), table.reader(0)
    grid = np.arange(48, dtype=np.float32).reshape(6, 8)
    lo, hi = -(1 << 63), (1 << 63) - 1
    seq = [(grid[:, :4].copy(), 1, True), (grid[:, ::2], lo, False), (grid[::2, :4].T.T, hi, True),
           (grid[:, :4], 1 << 64, True), (grid[:, 1:5], -5, False),
           (grid[:, :4].astype(">f4"), 2, True), (grid[:, :4].astype("<f4"), 3, False)]
    for i, value in enumerate(seq):
        w.write(value, i)
        got = r.read()
        assert type(got) is tuple and len(got) == 3
        assert got[0].dtype == value[0].dtype and np.array_equal(got[0], value[0])
        assert type(got[1]) is int and got[1] == value[1]
        assert got[2] is value[2]


def test_record_codec_refuses_a_value_of_another_layout(table):
    """``RecordCodec.write`` says 0 for a value that does not match its layout (type, length, shape,
    dtype, container), -1 for an int beyond 64 bits, 1 when written; a reader's codec over the same
    bytes returns what was written."""
    from reactor_backend._codec import BARE, TUPLE, RecordCodec

    buf = memoryview(bytearray(256))
    fields = [("a", "<i4", (2, 3), 24), ("f",), ("i",), ("b",), ("n",)]
    offsets = [64, 0, 8, 16, 24]
    wc = RecordCodec(buf, TUPLE, fields, offsets)
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    assert wc.write((a, 0.5, 7, True, None)) == 1
    view = RecordCodec(buf.toreadonly(), TUPLE, fields, offsets).read()
    assert np.array_equal(view[0], a) and view[1:] == (0.5, 7, True, None) and not view[0].flags.writeable
    got = RecordCodec(buf, TUPLE, fields, offsets, copy=True).read()
    assert np.array_equal(got[0], a) and got[1:] == (0.5, 7, True, None) and got[0].flags.writeable
    for bad in ([a, 0.5, 7, True, None], (a, 0.5, 7, True), (a.T, 0.5, 7, True, None),
                (a.astype(np.int64), 0.5, 7, True, None), (a, 1, 7, True, None), (a, 0.5, 7.0, True, None),
                (a, 0.5, 7, 1, None), (a, 0.5, 7, True, 0), (list(a), 0.5, 7, True, None)):
        assert wc.write(bad) == 0, bad
    assert wc.write((a, 0.5, 1 << 64, True, None)) == -1
    with pytest.raises(ValueError, match="beyond the end"):
        RecordCodec(memoryview(bytearray(32)), TUPLE, fields, offsets)
    # a bare record is one scalar that is the value itself: its own type only, nothing wrapped
    bare = RecordCodec(buf, BARE, [("i",)], [0])
    assert bare.write(7) == 1 and bare.read() == 7 and type(bare.read()) is int
    for bad in ((7,), [7], 7.0, True, None, np.int64(7)):
        assert bare.write(bad) == 0, bad
    assert bare.write(1 << 64) == -1
    for fields_, what in (([("i",), ("f",)], "one float, int or bool"), ([("a", "<i4", (2,), 8)], "one float")):
        with pytest.raises(ValueError, match=what):
            RecordCodec(buf, BARE, fields_, [0] * len(fields_))
    with pytest.raises(ValueError, match="unknown record container"):
        RecordCodec(buf, 5, fields, offsets)


def test_record_codec_refills_its_last_tuple_in_place():
    """``RecordCodec.refill`` stores the record's current fields into the tuple its ``read`` returned last: the
    values of a new ``read``, the items that are still right kept as they are (a float of the same bits, the
    array view, the bools); any other tuple is refused."""
    from reactor_backend._codec import TUPLE, RecordCodec

    buf = memoryview(bytearray(128))
    fields, offsets = [("a", "<f4", (2,), 8), ("f",), ("f",), ("b",), ("i",)], [64, 0, 8, 16, 24]
    wc = RecordCodec(buf, TUPLE, fields, offsets)
    rc = RecordCodec(buf.toreadonly(), TUPLE, fields, offsets)
    wc.write((np.array([1, 2], np.float32), 1.0, 0.5, False, 3))
    t = rc.read()
    assert rc.last is t
    view, one, half = t[0], t[1], t[2]
    wc.write((np.array([5, 6], np.float32), 1.0, -0.5, True, 1 << 40))
    rc.refill(t)
    assert t[0].tolist() == [5.0, 6.0] and t[1:] == (1.0, -0.5, True, 1 << 40) and t == rc.read()
    assert t[0] is view and t[1] is one and t[2] is not half  # kept where the bits did not change
    wc.write((np.array([5, 6], np.float32), 1.0, 0.0, True, 3))
    t2 = rc.read()
    wc.write((np.array([5, 6], np.float32), 1.0, -0.0, True, 3))
    rc.refill(t2)
    assert str(t2[2]) == "-0.0"  # bits, not ==: -0.0 replaces 0.0
    for other in (t, tuple(list(t2))):  # an earlier tuple, an equal one
        with pytest.raises(ValueError, match="returned last"):
            rc.refill(other)


def test_slot_grows_and_unlinks_old_segments(table):
    w = table.writer(3, initial_capacity=4096)
    r = table.reader(3)
    sizes = [10, 5000, 100_000, 3_000_000, 50]
    kept = []
    for i, n in enumerate(sizes):
        x = np.full(n, i, dtype=np.uint8)
        w.write(x, i)
        y = r.read()
        assert y.shape == (n,) and (y == i).all()
        kept.append(y)
        segs = glob.glob(f"/dev/shm/{table.prefix}s3-*")
        assert len(segs) == 1, segs  # the writer unlinks the outgrown segment
    assert w.capacity >= 3_000_000
    assert (kept[2] == 2).all()      # views on an outgrown segment stay valid


def test_transport_between_processes():
    """A child writes arrays and pickles into slots, the parent reads them after a barrier."""
    n = 2
    rounds = 50

    def body(rank, b):
        tab = T.SlotTable(prefix, 2, create=False)
        if rank == 1:
            w = tab.writer(0)
            for i in range(rounds):
                w.write(np.full((i + 1) * 1000, i, dtype=np.int32) if i % 2 else {"i": i, "a": np.arange(i)}, i)
                b.arrive()
                b.arrive()
            return None
        r = tab.reader(0)
        out = []
        for i in range(rounds):
            b.arrive()
            assert r.round() == i
            v = r.read()
            out.append(int(v[-1]) if i % 2 else int(v["a"].sum()))
            b.arrive()
        return out

    g = ProcessGroup(n)
    prefix = g.prefix + "t-"
    T.SlotTable(prefix, 2, create=True)
    try:
        out = g.run(body)
    finally:
        T.unlink_prefix(prefix)
    assert out == [i if i % 2 else sum(range(i)) for i in range(rounds)]


# ---- process group lifecycle --------------------------------------------------------------------

def test_worker_exception_stops_all_with_remote_traceback():
    def body(rank, b):
        b.arrive()
        if rank == 2:
            err = ValueError("bad value in worker")
            err.reactor, err.reaction, err.tag = "main.client[3]", "step", (12, 1)
            raise err
        while True:
            b.arrive()

    t0 = time.perf_counter()
    with pytest.raises(WorkerError) as info:
        _fork_all(3, body)
    assert time.perf_counter() - t0 < 20  # generous: the alternative is a hang
    e = info.value
    assert e.rank == 2 and e.exc_type == "ValueError"
    assert (e.reactor, e.reaction, e.tag) == ("main.client[3]", "step", (12, 1))
    assert "bad value in worker" in e.remote_traceback and "raise err" in e.remote_traceback
    assert isinstance(e.original, ValueError)


def test_parent_exception_stops_children():
    def body(rank, b):
        b.arrive()
        if rank == 0:
            raise RuntimeError("parent fails")
        while True:
            b.arrive()

    t0 = time.perf_counter()
    with pytest.raises(RuntimeError, match="parent fails"):
        _fork_all(3, body)
    assert time.perf_counter() - t0 < 20  # generous: the alternative is a hang


def test_killed_worker_is_detected_and_reported():
    def body(rank, b):
        b.arrive()
        if rank == 1:
            os.kill(os.getpid(), signal.SIGKILL)
        while True:
            b.arrive()

    g = ProcessGroup(3)
    t0 = time.perf_counter()
    with pytest.raises(WorkerDied, match="SIGKILL"):
        g.run(body)
    assert time.perf_counter() - t0 < 20  # generous: the alternative is a hang


def test_stuck_worker_is_killed_after_grace():
    """A child busy in a long computation does not see the stop word: it is SIGKILLed."""
    def body(rank, b):
        if rank == 1:
            time.sleep(60)
        raise RuntimeError("parent gives up")

    g = ProcessGroup(2, grace=0.3)
    t0 = time.perf_counter()
    with pytest.raises(RuntimeError, match="gives up"):
        g.run(body)
    assert time.perf_counter() - t0 < 20  # generous: the stuck worker would sleep 60 s
    assert os.WIFSIGNALED(g.statuses[1]) and os.WTERMSIG(g.statuses[1]) == signal.SIGKILL


def test_ctrl_c_in_parent_tears_down():
    def body(rank, b):
        while True:
            b.arrive()
            if rank != 0:
                time.sleep(0.001)

    timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    t0 = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        _fork_all(3, body)
    assert time.perf_counter() - t0 < 20  # generous: the alternative is a hang
    timer.join()


def test_children_die_with_their_parent(tmp_path):
    """Kill -9 the process that called run: its workers go too (PR_SET_PDEATHSIG)."""
    pidfile = tmp_path / "pids"
    middle = os.fork()
    if middle == 0:  # pragma: no cover - the process that "calls run"
        try:
            def body(rank, b):
                with open(pidfile, "a") as f:
                    f.write(f"{os.getpid()}\n")
                while True:
                    b.arrive()
            ProcessGroup(3).run(body)
        finally:
            os._exit(0)
    deadline = time.time() + 10
    while time.time() < deadline and (not pidfile.exists() or len(pidfile.read_text().split()) < 3):
        time.sleep(0.01)
    pids = [int(p) for p in pidfile.read_text().split()]
    os.kill(middle, signal.SIGKILL)
    os.waitpid(middle, 0)
    def running(pid):
        try:
            return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return False

    deadline = time.time() + 2
    while time.time() < deadline and any(running(p) for p in pids if p != middle):
        time.sleep(0.01)
    assert not any(running(p) for p in pids if p != middle)
    # what the harness does after SIGKILLing a measurement: remove leftovers by prefix
    T.unlink_prefix(f"rb-{middle}-")
    assert glob.glob(f"/dev/shm/rb-{middle}-*") == []


def test_bare_arrays_follow_every_layout_change_through_the_compiled_path(table):
    """A slot's compiled write/read (``_codec.SlotHotWriter``/``SlotHotReader``) takes a value only
    while it keeps the layout last laid out; every change (shape, dtype, byte order, a strided array,
    None, a pickled value, a record, back to an array) reaches both a view reader and a copy reader
    intact, and the round stamp follows every write."""
    w, r, rc = table.writer(3), table.reader(3), table.reader(3, copy=True)
    a = np.arange(6, dtype=np.int32)
    seq = [a, a + 1, a + 2,                                   # same layout: compiled path
           a.reshape(2, 3), a.astype(np.int64), a.astype(">i4"), np.arange(12, dtype=np.int32)[::2],
           None, None, {"k": a}, (a, 1.0), (a + 5, 2.0), a + 3, np.zeros(0, np.int32), np.zeros(0, np.int32),
           np.zeros(0, np.int8), a + 4]
    for i, value in enumerate(seq):
        w.write(value, 100 + i)
        assert r.round() == rc.round() == 100 + i
        for reader in (r, rc):
            got = reader.read()
            if value is None:
                assert got is None
            elif isinstance(value, dict):
                assert np.array_equal(got["k"], value["k"])
            elif isinstance(value, tuple):
                assert np.array_equal(got[0], value[0]) and got[1] == value[1]
            else:
                assert type(got) is np.ndarray and got.dtype == value.dtype and got.shape == value.shape
                assert np.array_equal(got, value) and got.flags.writeable == (reader is rc)


def test_compiled_slot_writer_refuses_a_bad_layout(table):
    from reactor_backend._codec import SlotHotWriter

    with pytest.raises(ValueError, match="header"):
        SlotHotWriter(table.mm, len(table.mm), lambda v, r: None)
    hot = SlotHotWriter(table.mm, 0, lambda v, r: None)
    with pytest.raises(ValueError, match="C-contiguous"):
        hot.lay_array(np.zeros(4), np.zeros(8)[::2])


def test_a_meeting_that_waits_for_a_rank_beyond_the_processes_fails_when_the_link_is_built():
    import mmap

    from reactor_backend._core import ProcessLink

    buf = mmap.mmap(-1, _sync.control_size(2))
    barrier = _sync.Barrier(buf, 2, 0)
    meeting = ((), False, (5,), ((barrier.progress_address(1), ()),), bytearray(1))
    with pytest.raises(IndexError, match="rank 5 of 2 processes"):
        ProcessLink(barrier, (None, meeting), False, True, 0, _sync.NEVER)
    ProcessLink(barrier, (None, ((), False, (1,), meeting[3], bytearray(1))), False, True, 0, _sync.NEVER)
