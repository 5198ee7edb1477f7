"""The processes executor: same observable effects as inline across worker counts, values and tags
crossing processes (zero-delay, delayed, microsteps, actions, stop requests), the plan (meeting
levels, point-to-point waits, one slot per broadcast), errors with remote tracebacks, killed workers, Ctrl-C, and no leaked
process or /dev/shm segment after any of them."""
from __future__ import annotations

import glob
import mmap
import os
import signal
import threading
import time

import numpy as np
import psutil
import pytest

from reactor_backend import (Input, LogicalAction, Output, PhysicalAction, Reactor, ReactionError, Tag, Timer,
                             assemble, msec, reaction, run, sec, shutdown, startup, usec)
from reactor_backend.processes import WorkerDied, plan

WORKERS = [1, 2, 4]


@pytest.fixture(autouse=True)
def no_leaks():
    before = set(glob.glob(f"/dev/shm/rb-{os.getpid()}-*"))
    yield
    assert psutil.Process().children(recursive=True) == []
    assert set(glob.glob(f"/dev/shm/rb-{os.getpid()}-*")) - before == set()


# ---- a server broadcasting to a bank and gathering (the actors microbenchmark's shape) ------------
class Client(Reactor):
    inp = Input()
    out = Output()

    def __init__(self, scale=1):
        super().__init__()
        self.scale = scale
        self.seen = 0

    @reaction(inp, effects=[out])
    def work(self):
        self.seen += 1
        x = self.inp.value
        self.out.set((self.bank_index, os.getpid(), x * self.scale + self.bank_index))


class Server(Reactor):
    ins = Input(width="n")
    out = Output()
    go = LogicalAction()

    def __init__(self, n, rounds):
        super().__init__()
        self.n, self.rounds, self.round = n, rounds, 0
        self.log = []
        self.pids = set()

    @reaction(startup, go, effects=[out])
    def send(self):
        self.out.set(np.arange(5) + self.round)

    @reaction(ins, effects=[go])
    def gather(self):
        vals = [p.value for p in self.ins]
        assert all(p.is_present for p in self.ins)
        self.pids.update(v[1] for v in vals)
        self.log.append((self.elapsed, self.microstep, [(v[0], v[2].tolist()) for v in vals]))
        self.round += 1
        if self.round < self.rounds:
            self.go.schedule(usec(10) * (self.round % 3))  # mixes microstep and time advances


class Star(Reactor):
    def __init__(self, n=6, rounds=20, client=Client):
        super().__init__()
        self.server = Server(n, rounds)
        self.clients = self.bank(client, n, scale=3)
        self.connect(self.server.out, self.clients.inp, broadcast=True)
        self.connect(self.clients.out, self.server.ins)


def test_star_matches_inline_for_every_worker_count():
    ref = Star()
    ref_stats = run(ref, executor="inline")
    for w in WORKERS:
        main = Star()
        stats = run(main, executor="processes", workers=w)
        assert main.server.log == ref.server.log
        assert (stats.tags, stats.reactions, stats.final_tag.time - stats.start_time) == \
               (ref_stats.tags, ref_stats.reactions, ref_stats.final_tag.time - ref_stats.start_time)
        assert len(main.server.pids) == w  # the bank really ran in w processes
        # state of members placed in other workers was copied back into the caller's objects
        assert [c.seen for c in main.clients] == [20] * 6


class JitteryClient(Client):
    """A client that answers after a pseudo-random pause (by bank index and round): the processes it lives in
    reach the gather meeting in a different order every round."""

    @reaction(Client.inp, effects=[Client.out])
    def work(self):
        time.sleep(((self.bank_index * 7919 + self.seen * 104729) % 13) * 1e-4)
        self.seen += 1
        x = self.inp.value
        self.out.set((self.bank_index, os.getpid(), x * self.scale + self.bank_index))


@pytest.mark.parametrize("workers", [3, 8])
def test_a_gather_reads_every_result_of_its_round_whatever_order_the_processes_arrive_in(workers):
    """Process 0 reads each process's results as that process arrives at the meeting: with arrivals in a different
    order every round, every round's gather still holds that round's results of every client, as inline's does."""
    ref = Star(16, 60, client=JitteryClient)
    run(ref, executor="inline")
    main = Star(16, 60, client=JitteryClient)
    run(main, executor="processes", workers=workers)
    assert main.server.log == ref.server.log
    assert len(main.server.pids) == workers


class Logger(Reactor):
    tick = Timer(offset=0, period=msec(1))

    def __init__(self, log):
        super().__init__()
        self.log = log
        self.env = None

    @reaction(startup)
    def build(self):
        self.env = threading.Lock()  # not plain data: stays in its worker

    @reaction(tick)
    def step(self):
        self.log.append((self.bank_index, os.getpid(), self.elapsed))


def test_state_of_other_workers_is_copied_back_in_place():
    logs = [[] for _ in range(4)]

    class M(Reactor):
        def __init__(self):
            super().__init__()
            self.b = self.bank(Logger, 4, log=None)
            for member, log in zip(self.b, logs):
                member.log = log

    main = M()
    run(main, timeout=msec(3), executor="processes", workers=2)
    assert [[(i, t) for i, _, t in log] for log in logs] == [[(i, msec(k)) for k in range(4)] for i in range(4)]
    assert {pid for _, pid, _ in logs[0]} == {os.getpid()} and {pid for _, pid, _ in logs[3]} != {os.getpid()}
    assert main.b[0].env is not None and main.b[3].env is None  # the lock lived in worker 1 only


def test_plan_has_minimal_barriers_and_one_slot_per_broadcast():
    main = Star(n=8)
    p = plan(assemble(main), 2)
    # server.send (level 0) -> clients (level 1) -> server.gather (level 2): two barriers
    assert p.barrier_levels == (1, 2)
    broadcast = [e for e in p.exports if e[1] is main.server.out]
    assert len(broadcast) == 1 and broadcast[0][4] == (1,)  # written once, read by worker 1
    back = [e for e in p.exports if e[1] is not main.server.out]
    assert len(back) == 4  # only the 4 members on worker 1 send across
    assert plan(assemble(Star()), 1).barrier_levels == ()


class FanoutProbe(Client):
    """A client that records, in its own process, where a value set on ``root`` (the server's broadcast) goes there."""
    root = None

    @reaction(startup)
    def look(self):
        self.reached = sorted(q.owner.bank_index for q in self.root.fanout)
        self.ready = sorted(rx.reactor.bank_index for rx in self.root.reactions)


def test_a_broadcast_reaches_only_the_ports_of_its_own_process():
    """Each process delivers a value only to the ports its own reactions read and makes ready only its own
    reactions (a broadcast to a bank is not marked, valued and triggered for every member in every process); the
    results are inline's, and the caller's program is whole again after the run."""
    expected = Star(4, 5)
    run(expected)
    main = Star(4, 5, client=FanoutProbe)
    for c in main.clients:
        c.root = main.server.out
    run(main, executor="processes", workers=2)
    assert main.server.log == expected.server.log
    assert [c.reached for c in main.clients] == [[0, 1], [0, 1], [2, 3], [2, 3]]
    assert [c.ready for c in main.clients] == [[0, 1], [0, 1], [2, 3], [2, 3]]
    assert sorted(q.owner.bank_index for q in main.server.out.fanout) == [0, 1, 2, 3]
    assert sorted(rx.reactor.bank_index for rx in main.server.out.reactions) == [0, 1, 2, 3]


def test_meetings_are_point_to_point():
    """The server's process never waits for its readers when it broadcasts, and each client
    process waits only for the server's, never for the other clients' processes."""
    main = Star(n=8)
    p = plan(assemble(main), 4)
    assert p.barrier_levels == (1, 2)
    assert p.meetings(0) == {1: (True, ()), 2: (False, (1, 2, 3))}
    for rank in (1, 2, 3):
        assert p.meetings(rank) == {1: (False, (0,)), 2: (True, ())}


# ---- delays, microsteps and actions across processes -----------------------------------------------
class Relay(Reactor):
    inp = Input()
    out = Output()
    echo = Output()
    tick = Timer(offset=msec(1), period=msec(3))
    act = LogicalAction(min_delay=usec(5))

    def __init__(self):
        super().__init__()
        self.count = 0

    @reaction(tick, effects=[act])
    def on_tick(self):
        self.act.schedule(usec(self.bank_index), self.bank_index)

    @reaction(act, inp, effects=[out, echo])
    def fire(self):
        self.count += 1
        if self.act.is_present:  # a value received from the neighbour is not forwarded again
            self.out.set((self.bank_index, self.act.value, self.microstep))
        if self.inp.is_present:
            self.echo.set((self.bank_index, self.inp.value, self.microstep))


class Recorder(Reactor):
    ins = Input(width=4)
    direct = Input(width=4)
    echo = Input(width=4)

    def __init__(self):
        super().__init__()
        self.log = []

    @reaction(ins)
    def rec(self):
        self.log.append(("delayed", self.elapsed, self.microstep, [p.value for p in self.ins if p.is_present]))

    @reaction(direct)
    def rec2(self):
        self.log.append(("direct", self.elapsed, self.microstep, sorted(p.value for p in self.direct if p.is_present)))

    @reaction(echo)
    def rec3(self):
        self.log.append(("echo", self.elapsed, self.microstep, [p.value for p in self.echo if p.is_present]))

    @reaction(shutdown)
    def bye(self):
        self.log.append(("shutdown", self.elapsed, self.microstep))


class Ring(Reactor):
    """Bank members send to their right neighbour with after=0 (a microstep) and to a recorder on
    worker 0 both directly and with after=2 ms."""

    def __init__(self):
        super().__init__()
        self.relays = self.bank(Relay, 4)
        self.rec = Recorder()
        outs = [r.out for r in self.relays]
        self.connect(outs, [self.relays[(i + 1) % 4].inp for i in range(4)], after=0)
        self.connect(self.relays.out, self.rec.ins, after=msec(2))
        self.connect(self.relays.out, self.rec.direct)
        self.connect(self.relays.echo, self.rec.echo)


@pytest.mark.parametrize("workers", WORKERS)
def test_delays_microsteps_and_actions_cross_processes(workers):
    ref = Ring()
    ref_stats = run(ref, timeout=msec(11))
    main = Ring()
    stats = run(main, timeout=msec(11), executor="processes", workers=workers)
    assert main.rec.log == ref.rec.log
    assert any(entry[2] > 0 for entry in ref.rec.log if entry[0] == "echo")  # microsteps happened
    assert stats.tags == ref_stats.tags and stats.reactions == ref_stats.reactions
    assert [r.count for r in main.relays] == [r.count for r in ref.relays]


class Stopper(Reactor):
    out = Output()
    tick = Timer(offset=0, period=msec(1))

    @reaction(tick, effects=[out])
    def step(self):
        self.out.set(self.bank_index)
        if self.bank_index == 3 and self.elapsed == msec(4):
            self.request_stop()


class Sink(Reactor):
    inp = Input(width=4)

    def __init__(self):
        super().__init__()
        self.log = []

    @reaction(inp)
    def got(self):
        self.log.append((self.elapsed, self.microstep, [p.value for p in self.inp if p.is_present]))

    @reaction(shutdown)
    def bye(self):
        self.log.append(("shutdown", self.elapsed, self.microstep))


class StopMain(Reactor):
    def __init__(self):
        super().__init__()
        self.b = self.bank(Stopper, 4)
        self.sink = Sink()
        self.connect(self.b.out, self.sink.inp)


@pytest.mark.parametrize("workers", [2, 4])
def test_request_stop_in_another_process_stops_everyone(workers):
    ref = StopMain()
    run(ref, timeout=sec(1))
    main = StopMain()
    stats = run(main, timeout=sec(1), executor="processes", workers=workers)
    assert main.sink.log == ref.sink.log
    assert main.sink.log[-1] == ("shutdown", msec(4), 1)
    assert stats.final_tag == Tag(stats.start_time + msec(4), 1)


# ---- values ------------------------------------------------------------------------------------------
class ArraySource(Reactor):
    out = Output()
    tick = Timer(offset=0, period=msec(1))

    @reaction(tick, effects=[out])
    def emit(self):
        rng = np.random.default_rng(int(self.elapsed // msec(1)) + 10 * self.bank_index)
        self.out.set({"frame": rng.integers(0, 255, (210, 160, 3), dtype=np.uint8), "i": self.bank_index})


class ArraySink(Reactor):
    inp = Input(width=2)

    def __init__(self):
        super().__init__()
        self.sums = []
        self.writable = []
        self.private = []

    @reaction(inp)
    def got(self):
        for p in self.inp:
            frame = p.value["frame"]
            self.sums.append((p.value["i"], int(frame.astype(np.int64).sum())))
            self.writable.append(frame.flags.writeable)
            while isinstance(frame.base, np.ndarray):
                frame = frame.base
            shared = isinstance(frame.base, memoryview) and isinstance(frame.base.obj, mmap.mmap)
            self.private.append(not shared)  # its own memory, not a view over the shared segment


class ArrayMain(Reactor):
    def __init__(self):
        super().__init__()
        self.src = self.bank(ArraySource, 2)
        self.sink = ArraySink()
        self.connect(self.src.out, self.sink.inp)


def test_arrays_cross_as_views_or_copies():
    ref = ArrayMain()
    run(ref, timeout=msec(5))
    main = ArrayMain()
    run(main, timeout=msec(5), executor="processes", workers=2)
    assert main.sink.sums == ref.sink.sums and all(main.sink.private)  # private copies by default
    main = ArrayMain()
    run(main, timeout=msec(5), executor="processes", workers=2, copy_arrays=False)
    assert main.sink.sums == ref.sink.sums
    # member 1 lives in worker 1: its frames arrive as views over shared memory
    assert main.sink.private == [True, False] * 6
    # and every reader sees a read-only array, a copy or not, in a dict (the sharing rule)
    assert not any(ref.sink.writable + main.sink.writable)


class LendingSource(Reactor):
    """Builds each value in the array its port lends (zero-copy output)."""

    out = Output()
    tick = Timer(offset=0, period=msec(1))

    def __init__(self):
        super().__init__()
        self.from_slot = []  # per tag: was the lent array the transport's buffer?
        self.same = []       # per tag: the same array as at the previous tag?
        self._last = None

    @reaction(tick, effects=[out])
    def emit(self):
        a = self.out.lend((4, 3), np.int32)
        self.from_slot.append(self.out.lender is not None)
        self.same.append(a is self._last)
        self._last = a
        a[...] = int(self.elapsed // msec(1)) + 100 * self.bank_index
        self.out.set(a)


class LentSink(Reactor):
    inp = Input(width=2)

    def __init__(self):
        super().__init__()
        self.got = []

    @reaction(inp)
    def record(self):
        self.got.append([p.value.tolist() for p in self.inp])


class LendingMain(Reactor):
    def __init__(self):
        super().__init__()
        self.src = self.bank(LendingSource, 2)
        self.sink = LentSink()
        self.connect(self.src.out, self.sink.inp)


@pytest.mark.parametrize("copy_arrays", [True, False])
def test_values_built_in_lent_arrays_arrive_as_inline(copy_arrays):
    ref = LendingMain()
    run(ref, timeout=msec(5))
    assert len(ref.sink.got) == 6 and ref.sink.got[-1][1] == [[105] * 3] * 4
    assert not any(ref.src[0].from_slot) and ref.src[0].same[1:] == [True] * 5  # the port's own array
    port = ref.src[0].out
    assert port.lend(np.int64(5), "uint8") is port.lend((5,), np.uint8) and port.lend(5, np.uint8).shape == (5,)
    main = LendingMain()
    run(main, timeout=msec(5), executor="processes", workers=2, copy_arrays=copy_arrays)
    assert main.sink.got == ref.sink.got
    # member 1 runs in worker 1 and sends to worker 0: it built its values in the slot; member 0 is local
    assert main.src[1].from_slot == [True] * 6 and main.src[0].from_slot == [False] * 6
    assert main.src[1].same[1:] == [True] * 5
    assert all(p.lender is None for p in main.src.out)  # nothing lends after the run


def test_a_port_with_a_delayed_connection_refuses_to_lend():
    class Delayed(Reactor):
        def __init__(self):
            super().__init__()
            self.src = LendingSource()
            self.sink = LentSink()
            self.connect(self.src.out, self.sink.inp[0], after=msec(1))

    with pytest.raises(ReactionError, match="delayed connection"):
        run(Delayed(), timeout=msec(5))


class Keeper(Reactor):
    """Keeps every array it receives (a replay buffer's pattern)."""

    inp = Input(width=2)

    def __init__(self):
        super().__init__()
        self.kept = []

    @reaction(inp)
    def got(self):
        self.kept.extend(p.value["frame"] for p in self.inp)


def test_kept_arrays_stay_intact_by_default():
    class M(Reactor):
        def __init__(self):
            super().__init__()
            self.src = self.bank(ArraySource, 2)
            self.k = Keeper()
            self.connect(self.src.out, self.k.inp)

    ref = M()
    run(ref, timeout=msec(5))
    main = M()
    run(main, timeout=msec(5), executor="processes", workers=2)
    assert len(main.k.kept) == 12 and all(np.array_equal(a, b) for a, b in zip(main.k.kept, ref.k.kept))
    views = M()
    run(views, timeout=msec(5), executor="processes", workers=2, copy_arrays=False)
    # with views, frames kept from worker 1 all show the slot's last value: why copying is the default
    from_worker = views.k.kept[1::2]
    assert all(np.array_equal(a, from_worker[-1]) for a in from_worker)
    assert not np.array_equal(ref.k.kept[1], ref.k.kept[-1])


class RecordSource(Reactor):
    out = Output()
    tick = Timer(offset=0, period=msec(1))

    @reaction(tick, effects=[out])
    def emit(self):
        k = int(self.elapsed // msec(1))
        self.out.set((np.full(2, k, dtype=np.float32), float(k % 2), k % 3 == 0, k * 1000))


class RecordSink(Reactor):
    """Reads each tag's record; ``keep``: keeps every one (a replay buffer's pattern)."""

    inp = Input()

    def __init__(self, keep):
        super().__init__()
        self.keep = keep
        self.seen, self.kept = [], []

    @reaction(inp)
    def got(self):
        v = self.inp.value
        self.seen.append((v[0].tolist(), v[1], v[2], v[3]))
        if self.keep:
            self.kept.append(v)


def test_imported_records_kept_by_a_reaction_stay_as_received():
    """Process 0 refills the tuple of an imported record in place where nothing but the runtime holds it
    (`RecordCodec.refill`); a reaction that keeps the values it received holds them, and each keeps its own."""
    class M(Reactor):
        def __init__(self, keep):
            super().__init__()
            self.src = RecordSource().place(1)
            self.sink = RecordSink(keep).place(0)
            self.connect(self.src.out, self.sink.inp)

    ref = M(True)
    run(ref, timeout=msec(8))
    assert len(ref.sink.seen) == 9
    for copy_arrays in (False, True):  # views: the tuple the codec read is the port's value (refilled)
        for keep in (False, True):
            main = M(keep)
            run(main, timeout=msec(8), executor="processes", workers=2, copy_arrays=copy_arrays)
            assert main.sink.seen == ref.sink.seen
        # the scalars of every kept record as received (kept views of the slot's array show its last value)
        assert [t[1:] for t in main.sink.kept] == [seen[1:] for seen in ref.sink.seen]
        assert len({id(t) for t in main.sink.kept}) == len(main.sink.kept)


# ---- faults --------------------------------------------------------------------------------------------
class Faulty(Reactor):
    out = Output()
    tick = Timer(offset=0, period=msec(1))

    def __init__(self, mode="raise"):
        super().__init__()
        self.mode = mode

    @reaction(tick, effects=[out])
    def step(self):
        if self.bank_index == 1 and self.elapsed == msec(3):
            if self.mode == "raise":
                raise ValueError(f"broken member {self.bank_index}")
            if self.mode == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
        self.out.set(self.bank_index)


class Drain(Reactor):
    inp = Input(width=2)

    @reaction(inp)
    def got(self):
        pass


class FaultMain(Reactor):
    def __init__(self, mode):
        super().__init__()
        self.b = self.bank(Faulty, 2, mode=mode)
        self.sink = Drain()
        self.connect(self.b.out, self.sink.inp)


def test_error_in_worker_raises_reaction_error_with_remote_traceback():
    t0 = time.perf_counter()
    with pytest.raises(ReactionError) as info:
        run(FaultMain("raise"), timeout=sec(1), executor="processes", workers=2)
    assert time.perf_counter() - t0 < 30  # generous (a loaded machine): it must end, not hang
    e = info.value
    assert e.reactor == "main.b[1]" and e.reaction == "step"
    assert e.tag.microstep == 0
    assert "broken member 1" in str(e) and "worker 1" in str(e)
    assert "raise ValueError" in e.remote_traceback
    assert isinstance(e.__cause__, ValueError)


def test_error_in_caller_stops_workers():
    class Bad(Reactor):
        inp = Input(width=2)

        @reaction(inp)
        def got(self):
            if self.elapsed == msec(2):
                raise KeyError("caller side")

    class M(Reactor):
        def __init__(self):
            super().__init__()
            self.b = self.bank(Faulty, 2, mode="none")
            self.bad = Bad()
            self.connect(self.b.out, self.bad.inp)

    with pytest.raises(ReactionError, match="caller side") as info:
        run(M(), timeout=sec(10), executor="processes", workers=2)
    assert info.value.reactor == "main.bad"


def test_killed_worker_tears_down():
    t0 = time.perf_counter()
    with pytest.raises(WorkerDied, match="SIGKILL"):
        run(FaultMain("kill"), timeout=sec(100), executor="processes", workers=2)
    assert time.perf_counter() - t0 < 30  # generous (a loaded machine): it must end, not hang


def test_ctrl_c_tears_down():
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    t0 = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        run(FaultMain("none"), timeout=sec(100), fast=False, executor="processes", workers=3)
    assert time.perf_counter() - t0 < 30  # generous: without the teardown it would run for 100 s
    timer.join()


# ---- physical actions owned by a worker process ------------------------------------------------------
class Sensor(Reactor):
    """A thread of the worker that owns this reactor feeds its physical action."""

    ext = PhysicalAction()
    out = Output()

    @reaction(startup)
    def start(self):
        if self.bank_index != 1:
            return

        def feed():
            for i in range(4):
                time.sleep(0.01)
                self.ext.schedule(0, i)

        threading.Thread(target=feed, daemon=True).start()

    @reaction(ext, effects=[out])
    def on_ext(self):
        self.out.set((self.ext.value, os.getpid()))


class SensorLog(Reactor):
    inp = Input(width=2)

    def __init__(self):
        super().__init__()
        self.got = []

    @reaction(inp)
    def rec(self):
        for p in self.inp:
            if p.is_present:
                self.got.append((p.value[0], p.value[1], self.tag))
                if p.value[0] == 3:
                    self.request_stop()


def test_physical_action_scheduled_from_a_non_owner_process_raises():
    """The caller (worker 0) holds a handle on a sensor placed in worker 1: scheduling its physical
    action here would fire in the wrong process and trigger nothing, so it is refused by name."""
    errors = []

    class Poker(Reactor):
        def __init__(self, target):
            super().__init__()
            self.target = target

        @reaction(startup)
        def poke(self):
            try:
                self.target.ext.schedule(0, 99)
            except ReactionError as exc:
                errors.append(str(exc))
            self.request_stop()

    class M(Reactor):
        def __init__(self):
            super().__init__()
            self.s = self.bank(Sensor, 2)
            self.log = SensorLog()
            self.connect(self.s.out, self.log.inp)
            self.poker = Poker(self.s[1]).place(0)

    run(M(), timeout=sec(5), executor="processes", workers=2)
    assert len(errors) == 1 and "s[1].ext" in errors[0] and "another worker process" in errors[0]


@pytest.mark.parametrize("fast", [True, False])
def test_physical_action_of_a_worker_process_wakes_everyone(fast):
    class M(Reactor):
        def __init__(self):
            super().__init__()
            self.s = self.bank(Sensor, 2)
            self.log = SensorLog()
            self.connect(self.s.out, self.log.inp)

    main = M()
    t0 = time.perf_counter()
    stats = run(main, timeout=sec(120), fast=fast, executor="processes", workers=2)
    assert time.perf_counter() - t0 < 60  # keepalive: woken by the worker's events, not by the timeout
    assert [v for v, _, _ in main.log.got] == [0, 1, 2, 3]
    assert all(pid != os.getpid() for _, pid, _ in main.log.got)
    tags = [t for _, _, t in main.log.got]
    assert tags == sorted(tags) and tags[0].time - stats.start_time >= msec(10)
    assert stats.final_tag == Tag(tags[-1].time, tags[-1].microstep + 1)


def test_docs_example_runs():
    """The python block of docs/processes.md runs as written."""
    import re
    from pathlib import Path

    doc = Path(__file__).resolve().parents[2] / "docs" / "processes.md"
    blocks = re.findall(r"```python\n(.*?)```", doc.read_text(), flags=re.S)
    assert blocks
    for i, code in enumerate(blocks):
        exec(compile(code, f"processes.md[block {i}]", "exec"), {"__name__": "docs_processes"})


# ---- the caller's process environment ---------------------------------------------------------------
_LONG_RUN = """
import os, sys, time
from reactor_backend import Input, Output, Reactor, Timer, reaction, run, msec, sec
class W(Reactor):
    out = Output()
    t = Timer(0, msec(1))
    @reaction(t, effects=[out])
    def s(self):
        {work}
        self.out.set(os.getpid())
class S(Reactor):
    inp = Input(width=3)
    def __init__(self):
        super().__init__()
        self.pids = set()
    @reaction(inp)
    def g(self):
        self.pids.update(p.value for p in self.inp)
        if len(self.pids) == 3 and not getattr(self, "said", False):
            self.said = True
            print("running", flush=True)
class M(Reactor):
    def __init__(self):
        super().__init__()
        self.b = self.bank(W, 3)
        self.s = S()
        self.connect(self.b.out, self.s.inp)
m = M()
run(m, timeout={timeout}, fast=False, executor="processes", workers=3)
print("done", len(m.s.pids), flush=True)
"""


def _python(code: str) -> "subprocess.Popen[str]":
    import subprocess
    import sys
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)


def test_sigterm_to_the_caller_stops_workers_and_removes_segments():
    proc = _python(_LONG_RUN.format(work="pass", timeout="sec(60)"))
    assert proc.stdout.readline().strip() == "running"
    workers = psutil.Process(proc.pid).children()
    assert len(workers) == 2
    proc.terminate()
    assert proc.wait(timeout=5) == 143
    psutil.wait_procs(workers, timeout=3)
    assert not any(w.is_running() and w.status() != psutil.STATUS_ZOMBIE for w in workers)
    assert glob.glob(f"/dev/shm/rb-{proc.pid}-*") == []


def test_workers_use_torch_after_the_caller_started_its_thread_pool():
    import torch  # noqa: F401 - a required dependency: a broken install fails here instead of skipping

    code = ("import torch\ntorch.set_num_threads(2)\na = torch.randn(300, 300)\n(a @ a).sum()\n"
            + _LONG_RUN.format(work="x = __import__('torch').randn(200, 200); (x @ x).sum()", timeout="msec(30)"))
    proc = _python(code)
    try:
        out, _ = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert out.splitlines()[-1] == "done 3"


class SlowFail(Reactor):
    @reaction(startup)
    def r(self):
        if self.bank_index == 1:
            time.sleep(0.2)  # fails last in wall time, first in the reactions' order
            raise ValueError("member 1")
        if self.bank_index == 3:
            raise ValueError("member 3")


def test_first_failure_in_reaction_order_wins_not_first_in_time():
    class M(Reactor):
        def __init__(self):
            super().__init__()
            self.members = self.bank(SlowFail, 4)

    for w in (1, 4):
        with pytest.raises(ReactionError, match=r"member 1") as info:
            run(M(), executor="processes", workers=w)
        assert info.value.reactor == "main.members[1]"


class Ticker(Reactor):
    out = Output()
    tick = Timer(offset=0, period=msec(1))

    @reaction(startup)
    def start(self):
        if self.bank_index == 1:  # a thread of worker 1 asks the whole program to stop
            threading.Timer(0.05, self.request_stop).start()

    @reaction(tick, effects=[out])
    def step(self):
        self.out.set(self.bank_index)


def test_request_stop_from_a_thread_of_a_worker_process():
    class M(Reactor):
        def __init__(self):
            super().__init__()
            self.b = self.bank(Ticker, 2)
            self.sink = Drain()
            self.connect(self.b.out, self.sink.inp)

    t0 = time.perf_counter()
    stats = run(M(), timeout=sec(120), fast=False, executor="processes", workers=2)
    assert time.perf_counter() - t0 < 60  # generous (a loaded machine); the timeout is 120 s
    # stopped by the request (one microstep after a tag), not by the timeout (a microstep-0 tag at 120 s);
    # no lower bound on the logical time: it may lag the 50 ms timer on a loaded machine
    assert stats.final_tag.microstep >= 1 and stats.elapsed < sec(60)


def test_levels_and_fast_reductions_run_in_the_core(monkeypatch):
    """In fast mode the core runs every level, meeting and tag-advance reduction of the processes
    executor itself (``_core.ProcessLink``): the executor's Python ``run_level`` and ``advance`` are
    not called per tag (they cost a fine-grained round more than its reactions), and the results are
    inline's. Slow mode still waits collectively through ``advance``."""
    from reactor_backend.processes import ProcessExecutor

    calls = {"run_level": 0, "advance": 0}
    original_advance = ProcessExecutor._advance

    def counting_run_level(self, level, reactions):
        calls["run_level"] += 1
        for r in reactions:
            self.core.execute(r)

    def counting_advance(self, local_next, stop):
        calls["advance"] += 1
        return original_advance(self, local_next, stop)

    monkeypatch.setattr(ProcessExecutor, "run_level", counting_run_level)
    monkeypatch.setattr(ProcessExecutor, "_advance", counting_advance)
    expected = Star(4, 12)
    run(expected)
    main = Star(4, 12)
    run(main, executor="processes", workers=2)
    assert main.server.log == expected.server.log
    assert calls == {"run_level": 0, "advance": 0}

    slow = Star(4, 3)
    run(slow, fast=False, executor="processes", workers=2)
    assert slow.server.log == [(t, m, v) for t, m, v in expected.server.log[:3]]
    assert calls["run_level"] == 0 and calls["advance"] > 0
