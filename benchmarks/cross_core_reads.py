"""Reading records written on another core: what process 0's gather pays per result for the cache lines a record
spans (`reactor_backend.transport`, flat records).

Run: ``python -m benchmarks.cross_core_reads [--rounds 20000] [--slots 15]``; to compare two trees, run it from each
(``cd OTHER && python -m benchmarks.cross_core_reads``), alternating, several times.

Why: with a core per process, process 0 reads each other process's result record after that process wrote it on
its own core, so every cache line the record spans moves between cores, one after the last arrival. An env step's
record (reward, done, a small observation, its checksum encoding) fits one line when its small fields are packed;
laid out a line per field it spans three. Two processes, each pinned to a core of its own: a writer that writes
``--slots`` gym-step records a round (a fresh observation each) and then publishes the round, and a reader that
waits for it and reads them (the round check and the read of each slot, as the core's meeting does), timing only
the reads. Printed: the reader's median time per round and per record. Needs two usable cores.

A quick, self-contained check (no results rows); dated readings belong in the issue notes and reference READMEs.
"""
from __future__ import annotations

import argparse
import mmap
import os
import struct
import time

import numpy as np

from reactor_backend import transport
from scenarios.checksum import digest

_WRITTEN, _READ = 0, 64  # the shared control words (each on its own cache line): last round written, last read


def measure(rounds: int = 20000, slots: int = 15) -> dict[str, float]:
    """The reader's median nanoseconds per round (the last 80% of the rounds) and per record.

    Args:
        rounds: rounds to run.
        slots: records written and read per round.
    """
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        raise RuntimeError("cross_core_reads needs two usable cores")
    prefix = f"rb-{os.getpid()}-xc-"
    table = transport.SlotTable(prefix, slots, create=True)
    ctl = mmap.mmap(-1, 4096)

    def get(off: int) -> int:
        return struct.unpack_from("<q", ctl, off)[0]

    def put(off: int, value: int) -> None:
        struct.pack_into("<q", ctl, off, value)

    pid = os.fork()
    if pid == 0:  # the writer, on the second core
        code = 1
        try:
            os.sched_setaffinity(0, {cores[1]})
            writers = [transport.SlotTable(prefix, slots, create=False).writer(i) for i in range(slots)]
            rng = np.random.default_rng(0)
            for rnd in range(1, rounds + 1):
                while get(_READ) != rnd - 1:
                    pass
                for w in writers:
                    obs = rng.random(4, dtype=np.float32)
                    w.write((obs, 1.0, False, digest(obs, 1.0, False)), rnd)
                put(_WRITTEN, rnd)
            code = 0
        finally:
            os._exit(code)
    try:
        os.sched_setaffinity(0, {cores[0]})
        readers = [table.reader(i) for i in range(slots)]
        times = np.empty(rounds, dtype=np.int64)
        for rnd in range(1, rounds + 1):
            while get(_WRITTEN) != rnd:
                pass
            t0 = time.perf_counter_ns()
            for r in readers:
                if r.round() == rnd:
                    r.read()
            times[rnd - 1] = time.perf_counter_ns() - t0
            put(_READ, rnd)
        _, status = os.waitpid(pid, 0)
        if status != 0:
            raise RuntimeError(f"the writer process failed (status {status})")
    finally:
        os.sched_setaffinity(0, set(cores))
        transport.unlink_prefix(prefix)
    per_round = float(np.median(times[rounds // 5:]))
    return {"round_ns": per_round, "record_ns": per_round / slots}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=20000)
    ap.add_argument("--slots", type=int, default=15)
    args = ap.parse_args(argv)
    got = measure(args.rounds, args.slots)
    print(f"reader: {got['round_ns']:.0f} ns a round for {args.slots} records written on another core, "
          f"{got['record_ns']:.0f} ns a record")


if __name__ == "__main__":
    main()
