"""The threads executor's shared state, under many threads and many rounds (``make test-ft`` runs this file
on the free-threaded interpreter, FT_TEST_REPEAT times; it runs on the default one too).

Each test would catch one of the unsafe spots issue 41 found:

* the crew's count of futex sleeps, added to by every thread (a plain ``+= 1`` loses counts without a GIL):
  the total must equal the per-thread counts, which only their own thread writes;
* the crew's waiting phases, which must be the `Waiting` options the processes executor reads (no copies
  of its constants): every field reaches the crew, and every field is a reactor backend option;
* the thread settings (``threads_per_worker``): applied once per process, before any reaction runs, never
  from bank members' startup reactions on several threads at once; `apply_threads` and `import_torch`
  called from many threads at once leave the settings in one piece and hand out torch only once it is set.
"""
from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import threading
import time

import pytest

from reactor_backend import _crew, executors, run, usec
from reactor_backend.waiting import Waiting
from scenarios import threads as thread_settings

GIL = getattr(sys, "_is_gil_enabled", lambda: True)()
HAVE_TORCH = subprocess.run([sys.executable, "-c", "import torch"], capture_output=True).returncode == 0


class FakeReaction:
    """What the crew reads of a reaction: its index (the crew calls ``execute(reaction)``)."""

    def __init__(self, index: int) -> None:
        self.index = index


@pytest.mark.parametrize("workers", [4, 8, 16])
def test_crew_counts_every_futex_sleep_under_many_threads(workers):
    """Sleeps of 2 us (slices that run out constantly) on every thread, many levels: the crew's total,
    added to by all threads at once, equals the sum of the per-thread counts; every reaction runs exactly
    once per level, on its placed worker."""
    per_worker = 3
    n_reactions = workers * per_worker
    placed = [i // per_worker for i in range(n_reactions)]
    runs = [0] * n_reactions          # one writer per slot: the reaction's worker thread
    where: list[set[int]] = [set() for _ in range(n_reactions)]

    def execute(r: FakeReaction) -> None:
        runs[r.index] += 1
        where[r.index].add(threading.get_ident())
        x = 0
        for i in range(200 if r.index % 2 else 20):  # uneven work: some threads wait for others
            x += i
        if r.index % 5 == 0:
            time.sleep(0)

    w = Waiting(spins=0, yield_ns=0, yield_shared_ns=0, yield_gap_ns=0, slice_ns=2_000)
    crew = _crew.Crew(workers, execute, placed, w)
    threads = [threading.Thread(target=crew.serve, args=(k,), daemon=True) for k in range(1, workers)]
    for t in threads:
        t.start()
    levels = 3000
    reactions = [FakeReaction(i) for i in range(n_reactions)]
    try:
        for level in range(levels):
            # alternate full levels with levels that leave most workers idle (they keep sleeping)
            crew.run_level(level, reactions if level % 3 else reactions[: per_worker * 2])
    finally:
        crew.stop()
        for t in threads:
            t.join(timeout=10)
    assert not any(t.is_alive() for t in threads)
    full = sum(1 for level in range(levels) if level % 3)
    expected = [levels if i < per_worker * 2 else full for i in range(n_reactions)]
    assert runs == expected
    assert all(len(s) == 1 for s in where)  # each reaction always on one thread
    by_thread = crew.futex_sleeps_by_thread
    assert len(by_thread) == workers
    assert sum(by_thread[1:]) > 0, "the workers never slept: the test exercised nothing"
    assert crew.futex_sleeps == sum(by_thread)


def test_crew_reads_every_waiting_phase_as_the_processes_executor_does():
    w = Waiting(spins=7, yield_ns=1500, yield_shared_ns=2000, yield_gap_ns=250, slice_ns=3000, check_ns=9000)
    own = _crew.Crew(1, lambda r: None, [], w)  # a core per thread
    crowded = _crew.Crew(4096, lambda r: None, [], w)  # more threads than cores
    for crew in (own, crowded):
        assert crew.waiting is w and crew.slice_ns == 3000 and crew.yield_gap_ns == 250
    if GIL:  # a woken thread waits for the GIL anyway: sleep at once
        assert (own.spin_iters, own.yield_ns) == (0, 0) == (crowded.spin_iters, crowded.yield_ns)
    else:  # _sync.Barrier's reading of the same options (tests/harness/test_reactor_options.py)
        assert (own.spin_iters, own.yield_ns, own.adapt) == (7, 1500, False)
        assert (crowded.spin_iters, crowded.yield_ns, crowded.adapt) == (0, 2000, True)
    default = _crew.Crew(2, lambda r: None, [0])
    assert default.waiting == Waiting() and default.slice_ns == Waiting().slice_ns
    with pytest.raises(TypeError):
        _crew.Crew(2, lambda r: None, [0], {"slice_ns": 1})


def test_the_threads_executor_hands_its_waiting_to_the_crew(monkeypatch):
    from tests.reactor.test_threads_ft import Stress

    made = []

    class Recording(_crew.Crew):
        def __init__(self, *args, **kwargs):
            made.append(self)

    monkeypatch.setattr(executors, "Crew", Recording)
    w = Waiting(slice_ns=123_000, yield_gap_ns=4_000)
    run(Stress(), executor="threads", workers=3, timeout=usec(10) * 5, waiting=w)
    assert len(made) == 1 and made[0].waiting is w and made[0].slice_ns == 123_000


def test_every_waiting_field_is_a_reactor_option():
    from backends.reactor import ReactorConfig, waiting

    options = {"spins": "wait_spins", "yield_ns": "wait_yield_us", "yield_shared_ns": "wait_yield_shared_us",
               "yield_gap_ns": "wait_yield_gap_us", "slice_ns": "wait_slice_us", "check_ns": "wait_check_us"}
    assert {f.name for f in dataclasses.fields(Waiting)} == set(options)
    assert set(options.values()) <= {f.name for f in dataclasses.fields(ReactorConfig)}
    assert waiting(ReactorConfig()) == Waiting()
    for i, (name, option) in enumerate(options.items()):  # each option sets its field, and only it
        value = 3 + i
        got = waiting(ReactorConfig(**{option: value}))
        scale = 1 if name == "spins" else 1000
        assert got == dataclasses.replace(Waiting(), **{name: value * scale}), option


@pytest.fixture
def restore_thread_settings(monkeypatch):
    """This process's thread variables, torch's count and the module's state come back after the test."""
    for var in thread_settings.THREAD_VARS:
        if var in os.environ:
            monkeypatch.setenv(var, os.environ[var])
        else:
            monkeypatch.delenv(var, raising=False)
    torch = sys.modules.get("torch")
    count = torch.get_num_threads() if torch is not None else None
    monkeypatch.setattr(thread_settings, "_applied", thread_settings._applied)
    monkeypatch.setattr(thread_settings, "_pinned", thread_settings._pinned)
    yield
    if torch is not None:
        torch.set_num_threads(count)


@pytest.mark.parametrize("executor", ["threads", "inline"])
def test_in_process_executors_apply_the_threads_once_before_any_reaction(monkeypatch, restore_thread_settings,
                                                                         executor):
    """The backend applies ``threads_per_worker`` once, in the calling thread, before the bank members'
    startup reactions build their roles (on several threads at once under the threads executor)."""
    import backends.reactor as reactor_backend_module
    from backends.reactor import Executor, ReactorBackend, ReactorConfig
    from scenarios import make_scenario
    from scenarios.configs import ActorsConfig
    from tests.conftest import TickClock, run_rounds

    events: list[tuple[str, int]] = []
    lock = threading.Lock()
    active, most = [0], [0]
    real_apply = reactor_backend_module.apply_threads

    def recording_apply(threads):
        with lock:
            active[0] += 1
            most[0] = max(most[0], active[0])
            events.append(("apply", threading.get_ident()))
        time.sleep(0.02)  # a window for a concurrent call to show
        try:
            return real_apply(threads)
        finally:
            with lock:
                active[0] -= 1

    monkeypatch.setattr(reactor_backend_module, "apply_threads", recording_apply)
    scenario = make_scenario(ActorsConfig(num_clients=8, payload_bytes=1000), seed=3)
    serial, _ = run_rounds(scenario, 20)
    make_worker = scenario.make_worker

    def building(index):
        with lock:
            events.append(("build", threading.get_ident()))
        return make_worker(index)

    monkeypatch.setattr(scenario, "make_worker", building)
    backend = ReactorBackend(ReactorConfig(executor=Executor(executor), breakdown=False), 4)
    backend.threads_per_worker = 2
    server = scenario.make_server()
    backend.start(scenario, server)
    backend.run(20, TickClock())
    assert server.checksum() == serial.checksum()
    kinds = [kind for kind, _ in events]
    assert kinds.count("build") == 8
    assert kinds.count("apply") == 1 and kinds[0] == "apply" and most[0] == 1, kinds
    assert events[0][1] == threading.get_ident()  # the calling thread, before the run
    assert os.environ["OMP_NUM_THREADS"] == "2"
    assert backend.torch_threads_observed() in (None, 2)


def test_apply_threads_from_many_threads_at_once_leaves_the_settings_in_one_piece(restore_thread_settings):
    """8 threads call `apply_threads` with different counts at once, 500 rounds: every call sees the count
    it set (torch's count is per thread; read under the lock), and after each round the three variables
    agree (one call's writes, not a mix)."""
    if HAVE_TORCH:
        thread_settings.import_torch()
    torch = sys.modules.get("torch")
    n, rounds = 8, 500
    barrier = threading.Barrier(n + 1)
    wrong: list[tuple[int, int, object]] = []

    def caller(i: int) -> None:
        for rnd in range(rounds):
            barrier.wait()
            want = 1 + (i + rnd) % n
            got = thread_settings.apply_threads(want)
            if torch is not None and got != want:
                wrong.append((rnd, want, got))
            barrier.wait()

    threads = [threading.Thread(target=caller, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    torn = []
    for rnd in range(rounds):
        barrier.wait()  # the round's calls run
        barrier.wait()  # ... and are done
        values = [os.environ[v] for v in thread_settings.THREAD_VARS]
        if len(set(values)) != 1 or thread_settings._applied != int(values[0]):
            torn.append((rnd, values, thread_settings._applied))
    for t in threads:
        t.join()
    assert not wrong, wrong[:5]
    assert not torn, torn[:5]


SUBPROCESS_IMPORT = r"""
import sys, threading
from scenarios import threads as s
if sys.argv[1] != "none":
    s.apply_threads(int(sys.argv[1]))
n = 16
barrier = threading.Barrier(n)
seen = []
def load():
    barrier.wait()
    torch = s.import_torch()
    seen.append(torch.get_num_threads())
ts = [threading.Thread(target=load) for _ in range(n)]
[t.start() for t in ts]
[t.join() for t in ts]
print(sorted(set(seen)), len(seen))
"""


@pytest.mark.skipif(not HAVE_TORCH, reason="needs torch in this interpreter (.venv-ft: make install-ft FT_TORCH=pypi)")
@pytest.mark.parametrize("applied,want", [("none", 1), ("3", 3)])
def test_import_torch_from_many_threads_hands_out_torch_only_once_its_count_is_set(applied, want):
    """A fresh process: 16 threads load torch at once through `import_torch`; each reads the count at once:
    1 (roles are built single-threaded), or the count `apply_threads` set before."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = subprocess.run([sys.executable, "-c", SUBPROCESS_IMPORT, applied], capture_output=True, text=True,
                         cwd=root, timeout=300, env={**os.environ, "PYTHONPATH": root})
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split("\n")[0] == f"[{want}] 16"


@pytest.mark.skipif(not HAVE_TORCH, reason="needs torch in this interpreter (.venv-ft: make install-ft FT_TORCH=pypi)")
def test_every_thread_of_the_threads_executor_runs_torch_at_the_applied_count(restore_thread_settings):
    """torch's intra-op count is per thread: the executor's threads set theirs as they start (its
    ``initializer``), so every reaction reads the applied count, whatever each thread had before."""
    from reactor_backend import Input, Output, Reactor, reaction, startup

    torch = thread_settings.import_torch()
    thread_settings.apply_threads(3)

    class Reader(Reactor):
        go = Input()
        out = Output()

        @reaction(go, effects=[out])
        def read(self):
            self.out.set((threading.get_ident(), torch.get_num_threads()))

    class Main(Reactor):
        counts = Input(width=8)
        go = Output()

        def __init__(self):
            super().__init__()
            self.seen = None

        @reaction(startup, effects=[go])
        def start(self):
            self.go.set(1)

        @reaction(counts)
        def gather(self):
            self.seen = [p.value for p in self.counts]

    class Top(Reactor):
        def __init__(self):
            super().__init__()
            self.main = Main()
            self.readers = self.bank(Reader, 8)
            self.connect(self.main.go, self.readers.go, broadcast=True)
            self.connect(self.readers.out, self.main.counts)

    top = Top()
    run(top, executor="threads", workers=4, initializer=thread_settings.apply_threads_here)
    assert len({ident for ident, _ in top.main.seen}) == 4
    assert {count for _, count in top.main.seen} == {3}


def test_a_failing_initializer_fails_the_run_before_any_reaction():
    from tests.reactor.test_threads_ft import Stress

    def boom():
        raise RuntimeError("initializer failed")

    main = Stress()
    with pytest.raises(RuntimeError, match="initializer failed"):
        run(main, executor="threads", workers=3, timeout=usec(10) * 5, initializer=boom)
    assert main.clock.n == 0 and all(m.actions == 0 for m in main.members)
    assert not [t for t in threading.enumerate() if t.name.startswith("reactor-worker-")]
