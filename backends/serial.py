"""The serial backend: every role in the measuring process, one after another, no framework.

It defines the reference checksum and the per-core ceiling that efficiency is measured against.
"""
from __future__ import annotations

from dataclasses import dataclass

from backends.base import Backend, BackendConfig, Clock, split_messages
from scenarios.base import Scenario, Server, finish_round

NAME = "serial"


@dataclass
class SerialConfig(BackendConfig):
    """No framework: every role in the measuring process, one after another (the reference)."""

    name: str = "serial"


class SerialBackend(Backend):
    name = "serial"
    variant = "-"

    def start(self, scenario: Scenario, server: Server) -> None:
        self.server = server
        self.topology = scenario.topology
        self.workers_ = []
        for i in range(scenario.num_workers):
            self.workers_.append(scenario.make_worker(i))
        self.relay = scenario.make_relay() if scenario.has_relay() else None
        server.placement([0] * scenario.num_workers)  # every role in the server's process

    def run(self, rounds: int, clock: Clock) -> None:
        server, workers = self.server, self.workers_
        n = len(workers)
        clock.begin()
        if self.topology == "chain":
            for _ in range(rounds):
                (msg,) = split_messages(server.scatter(), 1)
                for w in workers:
                    msg = w.step(msg)
                server.gather([msg])
                clock.tick()
            return
        relay = self.relay
        for _ in range(rounds):
            msgs = split_messages(server.scatter(), n)
            server.gather([w.step(m) for w, m in zip(workers, msgs)])
            finish_round(server, relay)
            clock.tick()

    def stop(self) -> None:
        for w in [*getattr(self, "workers_", []), *([self.relay] if getattr(self, "relay", None) else [])]:
            w.close()


SCHEMA = SerialConfig
BACKEND = SerialBackend
