"""Round-trip microbenchmark of the processes executor vs a pipe ping-pong.

Run: ``python -m benchmarks.bench_processes [--clients 2 4] [--sizes 0 100000] [--workers 2]``.


Why: the executor's claim is that a fixed communication pattern lets processes synchronize through
shared-memory barriers far more cheaply than message passing. This measures one *round*: a server
reactor (pinned to worker 0, the calling process) broadcasts a payload to N client reactors (a bank
split over the workers), each client copies it and sends it back, the server gathers all N and
starts the next round one microstep later. Printed: median and p90 microseconds per round for the
processes executor with private copies for readers (the default) and with read-only views
(``copy_arrays=False``), for inline (reference), for the bare primitives doing the same exchange
without reactors (the floor: ``_sync`` barriers + ``transport`` slots, N forked processes), and
for the same pattern over OS pipes to N
worker processes (``multiprocessing.Pipe``, raw bytes, no pickling), the textbook alternative.

This is a quick, self-contained check (no results rows); the harness's ``actors`` / ``object_size``
scenarios are the measurements of record.

Measurements (dated, with the machine they ran on) are logged in docs/processes.md, "Cost per round".
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import platform
import statistics
import time
from typing import Any

import numpy as np

from reactor_backend import Input, LogicalAction, Output, Reactor, reaction, run, startup


class Client(Reactor):
    """Receives the payload, copies it (the 'work' of the microbenchmark) and returns it."""

    inp = Input()
    out = Output()

    @reaction(inp, effects=[out])
    def work(self) -> None:
        self.out.set(self.inp.value.copy())


class Server(Reactor):
    """Broadcasts, gathers, and schedules the next round; keeps per-round wall times."""

    ins = Input(width="n")
    out = Output()
    again = LogicalAction()

    def __init__(self, n: int, payload: np.ndarray, rounds: int) -> None:
        super().__init__()
        self.n, self.payload, self.rounds = n, payload, rounds
        self.times: list[float] = []
        self.ok = True

    @reaction(startup, again, effects=[out])
    def send(self) -> None:
        self.times.append(time.perf_counter())
        self.out.set(self.payload)

    @reaction(ins, effects=[again])
    def gather(self) -> None:
        for p in self.ins:
            v = p.value
            self.ok &= v.nbytes == self.payload.nbytes
        if len(self.times) < self.rounds:
            self.again.schedule(0)
        else:
            self.times.append(time.perf_counter())


class Star(Reactor):
    def __init__(self, n: int, payload: np.ndarray, rounds: int) -> None:
        super().__init__()
        self.server = Server(n, payload, rounds).place(0)
        self.clients = self.bank(Client, n)
        self.connect(self.server.out, self.clients.inp, broadcast=True)
        self.connect(self.clients.out, self.server.ins)


def _round_stats(times: list[float], warmup: int) -> tuple[float, float]:
    d = np.diff(times)[warmup:] * 1e6
    return float(np.median(d)), float(np.percentile(d, 90))


def bench_reactor(executor: str, workers: int, clients: int, nbytes: int, rounds: int,
                  warmup: int, **options: Any) -> tuple[float, float]:
    payload = np.ones(nbytes, dtype=np.uint8)
    main = Star(clients, payload, rounds + warmup)
    run(main, executor=executor, workers=workers, **options)
    assert main.server.ok
    return _round_stats(main.server.times, warmup)


def bench_raw(clients: int, nbytes: int, rounds: int, warmup: int) -> tuple[float, float]:
    """The floor: the same round with bare primitives (no reactors), in the executor's protocol:
    the caller writes one slot and publishes; each of ``clients`` forked processes waits for it,
    reads it, writes its own slot and publishes; the caller waits for each, reads all slots; then
    everybody meets in the tag-advance reduction."""
    from reactor_backend._procgroup import ProcessGroup
    from reactor_backend.transport import SlotTable, unlink_prefix

    n = clients + 1
    group = ProcessGroup(n)
    prefix = group.prefix + "raw-"
    SlotTable(prefix, n, create=True)
    payload = np.ones(nbytes, dtype=np.uint8)
    total = rounds + warmup

    def body(rank: int, b: Any) -> list[float]:
        tab = SlotTable(prefix, n, create=False)
        times: list[float] = []
        everyone = tuple(range(1, n))
        if rank == 0:
            w, rs = tab.writer(0), [tab.reader(i) for i in range(1, n)]
            for i in range(total):
                times.append(time.perf_counter())
                w.write(payload, i)
                b.sync(3 * i + 1, True, ())
                b.sync(3 * i + 2, False, everyone)
                for r in rs:
                    assert r.read().nbytes == nbytes
                b.reduce_at(3 * i + 3, i, 0, 0, 0, 0)
            times.append(time.perf_counter())
        else:
            r, w = tab.reader(0), tab.writer(rank)
            for i in range(total):
                b.sync(3 * i + 1, False, (0,))
                w.write(r.read().copy(), i)
                b.sync(3 * i + 2, True, ())
                b.reduce_at(3 * i + 3, i, 0, 0, 0, 0)
        return times

    try:
        times = group.run(body)
    finally:
        unlink_prefix(prefix)
    return _round_stats(times, warmup)


def _pipe_client(conn: Any) -> None:
    while True:
        msg = conn.recv_bytes()
        if msg == b"stop":
            return
        buf = bytearray(msg)  # the same "copy" as the reactor client
        conn.send_bytes(buf)


def bench_pipes(clients: int, nbytes: int, rounds: int, warmup: int) -> tuple[float, float]:
    ctx = mp.get_context("fork")
    conns, procs = [], []
    for _ in range(clients):
        a, b = ctx.Pipe()
        p = ctx.Process(target=_pipe_client, args=(b,), daemon=True)
        p.start()
        conns.append(a)
        procs.append(p)
    payload = np.ones(nbytes, dtype=np.uint8).tobytes()
    times = []
    try:
        for _ in range(rounds + warmup):
            times.append(time.perf_counter())
            for c in conns:
                c.send_bytes(payload)
            for c in conns:
                assert len(c.recv_bytes()) == nbytes
        times.append(time.perf_counter())
    finally:
        for c in conns:
            c.send_bytes(b"stop")
        for p in procs:
            p.join(5)
            if p.is_alive():
                p.kill()
                p.join()
    return _round_stats(times, warmup)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=int, nargs="+", default=[2])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--sizes", type=int, nargs="+", default=[0, 100_000, 10_000_000], help="payload bytes")
    ap.add_argument("--rounds", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=3, help="runs per cell; the best median is printed")
    args = ap.parse_args(argv)
    print(f"# {platform.node()} {platform.processor() or platform.machine()} cpus={os.cpu_count()} "
          f"python={platform.python_version()} numpy={np.__version__}")
    print(f"{'clients':>7} {'payload':>10} {'backend':>24} {'median_us':>10} {'p90_us':>10}")
    for n in args.clients:
        for size in args.sizes:
            rounds = args.rounds if size < 1_000_000 else max(50, args.rounds // 40)
            warm = max(5, rounds // 10)
            cells = [("inline", lambda: bench_reactor("inline", 1, n, size, rounds, warm)),
                     (f"processes(w={args.workers})",
                      lambda: bench_reactor("processes", args.workers, n, size, rounds, warm)),
                     (f"processes(w={args.workers},views)",
                      lambda: bench_reactor("processes", args.workers, n, size, rounds, warm, copy_arrays=False)),
                     ("raw sync+slots", lambda: bench_raw(n, size, rounds, warm)),
                     ("pipe ping-pong", lambda: bench_pipes(n, size, rounds, warm))]
            for name, fn in cells:
                best = min((fn() for _ in range(args.repeat)), key=lambda x: x[0])
                print(f"{n:>7} {size:>10} {name:>24} {best[0]:>10.1f} {best[1]:>10.1f}", flush=True)


if __name__ == "__main__":
    main()
