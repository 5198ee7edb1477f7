"""The serial backend: every role in the measuring process, one after another, no framework.

It defines the reference checksum and the per-core ceiling that efficiency is measured against, and measures
the scenario's Amdahl bound: per round, the time of the server's part (scatter, gather, relay: serial in every
orchestration) and of the workers' steps (the part that ``workers`` processes can share), so that
``(server + steps) / (server + steps / workers)`` is the best any backend can do over serial with a perfect
split and free communication, from the same rounds the reference runs.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from backends.base import Backend, BackendConfig, Clock, split_messages
from scenarios.threads import apply_threads, observed, torch_threads
from scenarios.base import Scenario, Server, finish_round

NAME = "serial"


@dataclass
class SerialConfig(BackendConfig):
    """No framework: every role in the measuring process, one after another (the reference)."""

    name: str = "serial"
    #: time the server's part and the workers' steps of each round apart (four clock reads per round) and
    #: record them, with the Amdahl bound at ``workers``, in the rows' ``extra`` (``serial_server_us``,
    #: ``serial_steps_us``, ``amdahl_bound``)
    breakdown: bool = True


class SerialBackend(Backend):
    name = "serial"
    variant = "-"

    def __init__(self, config: Any, workers: int):
        super().__init__(config, workers)
        self.timed = bool(config.breakdown)
        self._server_ns = self._steps_ns = self._rounds = 0
        self._seen = (0, 0, 0)
        self._torch_threads: int | None = None

    def start(self, scenario: Scenario, server: Server) -> None:
        self.server = server
        self.topology = scenario.topology
        #: the worker roles, in bank order (``self.workers`` is their count, as on every backend)
        self.worker_roles = [scenario.make_worker(i) for i in range(scenario.num_workers)]
        self.relay = scenario.make_relay() if scenario.has_relay() else None
        self.process_of_worker = [0] * scenario.num_workers  # every role in the server's process
        apply_threads(self.threads_per_worker)  # every role of this process is built

    def run(self, rounds: int, clock: Clock) -> None:
        server, workers = self.server, self.worker_roles
        n = len(workers)
        self._torch_threads = torch_threads()  # the workers' process, as the rounds start
        clock.begin()
        if self.topology == "chain":
            for _ in range(rounds):
                (msg,) = split_messages(server.scatter(), 1)
                for w in workers:
                    msg = w.step(msg)
                server.gather([msg])
                if clock.tick() is False:
                    return
            return
        relay = self.relay
        if not self.timed:
            for _ in range(rounds):
                msgs = split_messages(server.scatter(), n)
                server.gather([w.step(m) for w, m in zip(workers, msgs)])
                finish_round(server, relay)
                if clock.tick() is False:
                    return
            return
        now = time.perf_counter_ns
        for _ in range(rounds):
            t0 = now()
            msgs = split_messages(server.scatter(), n)
            t1 = now()
            results = [w.step(m) for w, m in zip(workers, msgs)]
            t2 = now()
            server.gather(results)
            finish_round(server, relay)
            t3 = now()
            self._server_ns += (t1 - t0) + (t3 - t2)
            self._steps_ns += t2 - t1
            self._rounds += 1
            if clock.tick() is False:
                return

    def metrics(self) -> dict[str, float]:
        """Per round since the last call: microseconds in the server's part and in the workers' steps, and the
        Amdahl bound ``(server + steps) / (server + steps / workers)`` (star topologies, ``breakdown=true``)."""
        server, steps, rounds = self._server_ns, self._steps_ns, self._rounds
        before = self._seen
        self._seen = (server, steps, rounds)
        n = rounds - before[2]
        if not self.timed or n <= 0:
            return {}
        s_us = (server - before[0]) / n / 1e3
        w_us = (steps - before[1]) / n / 1e3
        whole = s_us + w_us
        bound = whole / (s_us + w_us / self.workers) if whole > 0 else float("nan")
        return {"serial_server_us": s_us, "serial_steps_us": w_us, "amdahl_bound": bound}

    def torch_threads_observed(self) -> int | list[int] | None:
        return observed([self._torch_threads])

    def stop(self) -> None:
        for w in [*getattr(self, "worker_roles", []), *([self.relay] if getattr(self, "relay", None) else [])]:
            w.close()


SCHEMA = SerialConfig
BACKEND = SerialBackend
