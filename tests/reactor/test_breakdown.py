"""The processes executor's time breakdown and the progress-position layout."""
import time

import pytest

from reactor_backend import Input, LogicalAction, Output, Reactor, reaction, run, startup
from reactor_backend import _sync
from reactor_backend.processes import Breakdown


class Busy(Reactor):
    inp = Input()
    out = Output()

    @reaction(inp, effects=[out])
    def step(self):
        t = time.perf_counter() + 0.002   # 2 ms of role work per round, spun (not slept)
        while time.perf_counter() < t:
            pass
        self.out.set(self.bank_index)


class Srv(Reactor):
    res = Input(width=2)
    go = Output()
    again = LogicalAction()

    def __init__(self, rounds):
        super().__init__()
        self.rounds, self.done, self.seen = rounds, 0, []

    @reaction(startup, again, effects=[go])
    def send(self):
        self.go.set(self.done)

    @reaction(res, effects=[again])
    def gather(self):
        self.seen.append([p.value for p in self.res])
        self.done += 1
        if self.done < self.rounds:
            self.again.schedule(0)


class Main(Reactor):
    def __init__(self, rounds=10, member=Busy, server=Srv):
        super().__init__()
        self.srv = server(rounds)
        self.workers = self.bank(member, 2)
        self.connect(self.srv.go, self.workers.inp, broadcast=True)
        self.connect(self.workers.out, self.srv.res)


def test_breakdown_accounts_for_every_process_and_the_role_work():
    bd = Breakdown()
    assert bd.snapshot() == []
    main = Main(10)
    stats = run(main, executor="processes", workers=2, breakdown=bd)
    snap = bd.snapshot()
    assert stats.breakdown == snap and len(snap) == 2
    assert main.srv.seen == [[0, 1]] * 10
    for rank, part in enumerate(snap):
        assert part["other"] >= 0 and part["tags"] >= 10
        # the timed parts are disjoint intervals inside the tag loop: they never exceed its total
        assert part["work"] + part["transport"] + part["wait"] + part["handoff"] + part["other"] == part["total"]
        # each process runs one member: 10 rounds x 2 ms of work at least
        assert part["work"] >= 10 * 2_000_000, (rank, part)
        assert part["work"] <= part["total"]
    # the server's process waits for the other member's result every round
    assert snap[0]["wait"] > 0


class Sleepy(Busy):
    """Half of each round's role work spun (CPU), half slept (wall time only)."""

    @reaction(Busy.inp, effects=[Busy.out])
    def step(self):
        time.sleep(0.002)
        t = time.thread_time() + 0.002
        while time.thread_time() < t:
            pass
        self.out.set(self.bank_index)


def test_cpu_counts_the_cpu_a_process_used_not_the_time_it_slept_or_waited():
    """``cpu`` is thread CPU time outside the waits: the spun half of each round's work, not the slept half
    (which the wall-time ``work`` counts), and not the waiting for the other member's result."""
    bd = Breakdown()
    run(Main(10, member=Sleepy), executor="processes", workers=2, breakdown=bd)
    for rank, part in enumerate(bd.snapshot()):
        assert part["work"] >= 10 * 4_000_000, (rank, part)
        # 10 x 2 ms spun, plus the tag loop's own CPU; never the 10 x 2 ms slept nor the waits
        assert 10 * 2_000_000 <= part["cpu"] < 10 * 3_500_000, (rank, part)


class Lagging(Reactor):
    """Member 0 answers 30 ms after the scatter, member 1 at once."""

    inp = Input()
    out = Output()

    @reaction(inp, effects=[out])
    def step(self):
        if self.bank_index == 0:
            time.sleep(0.03)
        self.out.set(self.bank_index)


class Apart(Main):
    """The server alone on process 0, its two members on processes 1 and 2."""

    def __init__(self, rounds):
        super().__init__(rounds, member=Lagging)
        self.workers.place([1, 2])


def test_a_meeting_reads_the_early_process_while_it_waits_for_the_late_one_and_counts_that_as_overlap():
    """Process 0 gathers from processes 1 (30 ms late) and 2 (at once): it reads process 2's slot while it still
    waits for process 1, and that read is ``overlap`` (part of its ``transport``); where it reads from one
    process only, nothing overlaps."""
    bd = Breakdown()
    main = Apart(5)
    run(main, executor="processes", workers=3, breakdown=bd)
    assert main.srv.seen == [[0, 1]] * 5
    w0 = bd.snapshot()[0]
    assert 0 < w0["overlap"] <= w0["transport"], w0
    bd = Breakdown()
    run(Main(5, member=Lagging), executor="processes", workers=2, breakdown=bd)
    assert [part["overlap"] for part in bd.snapshot()] == [0, 0]


class Excluding(Srv):
    """A server that spends 5 ms of every round on something it takes out of the breakdown (as the harness's
    clock between a paired job's blocks, `backends.reactor.ReactorBackend.timer`)."""

    breakdown = None

    @reaction(Srv.res, effects=[Srv.again])
    def gather(self):
        t0, c0 = time.perf_counter_ns(), time.thread_time_ns()
        t = time.thread_time() + 0.005
        while time.thread_time() < t:
            pass
        type(self).breakdown.exclude(time.perf_counter_ns() - t0, time.thread_time_ns() - c0)
        self.seen.append([p.value for p in self.res])
        self.done += 1
        if self.done < self.rounds:
            self.again.schedule(0)


def test_time_excluded_by_the_caller_is_not_role_work_nor_cpu():
    bd = Excluding.breakdown = Breakdown()
    run(Main(10, server=Excluding), executor="processes", workers=2, breakdown=bd)
    w0 = bd.snapshot()[0]
    # process 0 steps one member (10 x 2 ms) and spent 10 x 5 ms on excluded work: only the first counts
    assert 10 * 2_000_000 <= w0["work"] < 10 * 4_000_000, w0
    assert w0["cpu"] < 10 * 4_000_000, w0
    assert w0["work"] + w0["transport"] + w0["wait"] + w0["handoff"] + w0["other"] == w0["total"]
    bd.exclude(1, 1)  # after the run: nothing to take it from, no error


def test_breakdown_true_gives_stats_and_off_gives_none():
    assert run(Main(3), executor="processes", workers=2, breakdown=True).breakdown[1]["work"] > 0
    assert run(Main(3), executor="processes", workers=2).breakdown is None


def test_positions_order_levels_before_the_advance_and_tags_after_each_other():
    m, a = _sync.meeting_position, _sync.advance_position
    assert m(5, -1) < m(5, 0) < m(5, 7) < a(5, 0) < a(5, 1) < m(6, -1)
    assert _sync.split_position(m(5, 7)) == (5, "level", 7)
    assert _sync.split_position(a(9, 2)) == (9, "advance", 2)
    with pytest.raises(OverflowError):
        m(_sync.MAX_EPOCH + 1, 0)
    with pytest.raises(OverflowError):
        a(1, -1)


def test_parts_of_a_difference_of_two_readings_are_never_negative():
    """A reading can catch another process between two of its stores (here: ``total`` already stored, ``wait``
    not yet), which inflates that reading's derived ``other``; the parts of the next interval, derived from the
    counters' own differences, stay at least 0 where the difference of derived parts would go below."""
    torn = {"work": 100, "transport": 10, "wait": 50, "total": 300, "tags": 5, "handoff": 20, "cpu": 90, "overlap": 0}
    later = {"work": 200, "transport": 20, "wait": 180, "total": 420, "tags": 10, "handoff": 30, "cpu": 180,
             "overlap": 5}
    naive_other = Breakdown.parts(later)["other"] - Breakdown.parts(torn)["other"]
    assert naive_other < 0  # what the rows carried before
    delta = Breakdown.parts({k: later[k] - torn[k] for k in later})
    assert all(delta[p] >= 0 for p in Breakdown.PARTS)
    assert delta["handoff"] == 10 and delta["wait"] == 120 and delta["work"] == 100


@pytest.mark.parametrize("rounds", [1, 7])
def test_the_final_totals_count_every_tag_of_the_loop(rounds):
    """Process 0's tag ends store nothing (off its critical path): after the run the counters of every process
    still hold every tag and the last round's work and CPU."""
    bd = Breakdown()
    main = Main(rounds, member=Sleepy)
    run(main, executor="processes", workers=2, breakdown=bd)
    for rank, part in enumerate(bd.snapshot()):
        # one tag per round (startup's, then one microstep each), then the final tag
        assert part["tags"] == rounds + 1, (rank, part)
        assert part["work"] >= rounds * 4_000_000, (rank, part)
        assert part["cpu"] >= rounds * 2_000_000, (rank, part)  # each round's 2 ms spun on the CPU clock


class Uneven(Busy):
    """Member 0 (process 0's) spins 4 ms of CPU a round, member 1 (process 1's) 1 ms: process 0 never waits for
    the other's result."""

    @reaction(Busy.inp, effects=[Busy.out])
    def step(self):
        t = time.thread_time() + (0.004 if self.bank_index == 0 else 0.001)
        while time.thread_time() < t:
            pass
        self.out.set(self.bank_index)


class Reading(Srv):
    """A server that reads the breakdown's counters at every round's gather, as the harness reads them at a paired
    job's block ends (`backends.reactor.ReactorBackend.metrics`)."""

    breakdown = None

    def __init__(self, rounds):
        super().__init__(rounds)
        self.readings = []

    @reaction(Srv.res, effects=[Srv.again])
    def gather(self):
        self.readings.append(type(self).breakdown.counters())
        self.done += 1
        if self.done < self.rounds:
            self.again.schedule(0)


def test_readings_during_the_run_cover_one_round_each_in_every_process():
    """Readings taken at the same point of every round differ by one round in every process, the reader's own
    included (whose tag ends store nothing, to keep the CPU clock off its critical path: it stores as it reads):
    so a paired job's per-block columns cover their blocks' rounds, however short."""
    bd = Reading.breakdown = Breakdown()
    main = Main(12, member=Uneven, server=Reading)
    run(main, executor="processes", workers=2, breakdown=bd)
    readings = main.srv.readings
    assert len(readings) == 12
    for a, b in zip(readings[1:], readings[2:]):
        for rank, least_cpu in ((0, 4_000_000), (1, 1_000_000)):
            assert b[rank]["tags"] - a[rank]["tags"] == 1, (rank, a[rank], b[rank])
            assert least_cpu <= b[rank]["cpu"] - a[rank]["cpu"] < least_cpu + 1_500_000, (rank, a[rank], b[rank])


def test_the_reader_s_totals_stop_at_its_loop_s_end():
    """Process 0 stores its totals as it reads the counters (`ProcessLink.store_now`); the final reading comes after
    the other processes have finished, well after its loop: once the loop has ended (`flush`) a reading stores
    nothing more, so the final totals are the loop's, not the loop's plus the teardown."""
    import mmap

    from reactor_backend._core import ProcessLink
    from reactor_backend.processes import _C_BREAKDOWN

    barrier = _sync.Barrier(mmap.mmap(-1, _sync.control_size(2)), 2, 0)
    link = ProcessLink(barrier, (), True, True, _C_BREAKDOWN, _sync.NEVER, reader=True)
    total = _C_BREAKDOWN + Breakdown.FIELDS.index("total")

    def stored():
        return barrier.counter(0, total)

    link.store_now()
    first = stored()
    time.sleep(0.002)
    link.store_now()
    assert stored() >= first + 2_000_000  # while the loop runs, a reading stores the totals up to now
    link.flush(3)
    last = stored()
    time.sleep(0.002)
    link.store_now()
    assert stored() == last and barrier.counter(0, _C_BREAKDOWN + Breakdown.FIELDS.index("tags")) == 3


class PausedReading(Reading):
    """Reads the counters inside a pause (`Breakdown.pause`, `resume`), as the harness's clock does between a paired
    job's blocks, after 0 or 4 ms of CPU spent in the pause (alternately) and before 2 ms more."""

    @reaction(Srv.res, effects=[Srv.again])
    def gather(self):
        bd = type(self).breakdown
        bd.pause()
        _burn(0.004 if self.done % 2 else 0.0)
        self.readings.append(bd.counters())
        _burn(0.002)
        bd.resume()
        self.done += 1
        if self.done < self.rounds:
            self.again.schedule(0)


def _burn(seconds):
    t = time.thread_time() + seconds
    while time.thread_time() < t:
        pass


def test_a_reading_inside_a_pause_shows_none_of_the_pause():
    """Between two readings taken inside pauses, process 0's CPU is the round's (its member's 4 ms), whatever the
    pauses spent before or after the reading: process 0's totals are stored as the pause begins."""
    bd = PausedReading.breakdown = Breakdown()
    main = Main(12, member=Uneven, server=PausedReading)
    run(main, executor="processes", workers=2, breakdown=bd)
    readings = main.srv.readings
    for a, b in zip(readings[1:], readings[2:]):
        assert b[0]["tags"] - a[0]["tags"] == 1, (a[0], b[0])
        assert 4_000_000 <= b[0]["cpu"] - a[0]["cpu"] < 5_500_000, (a[0], b[0])
    assert bd.snapshot()[0]["cpu"] < 12 * 5_500_000  # the pauses' 12 x 4 ms on average are not in the totals
