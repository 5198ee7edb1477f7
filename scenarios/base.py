"""The backend-neutral shape of every workload: a server role, a bank of worker roles, and rounds.

Every workload of the paper has the same round structure, so every backend orchestrates it the same way:

    each round:  msgs = server.scatter()          # one message per worker (or one `Broadcast`)
                 results[i] = workers[i].step(msgs[i])   # independent: may run in parallel
                 server.gather(results)           # in worker-index order
                 clock.tick()                     # the round is done

A scenario knows no framework. It owns the RL compute (environments, policies, learners) as plain classes
with plain methods, seeded from the config, and a checksum of everything the server received. A backend owns
orchestration only: where roles live (thread, process, actor), how messages move, how rounds synchronize.

Contract every backend keeps:
  * worker ``i`` is built from ``scenario.make_worker(i)`` in the process that runs it (never pickled after
    construction: environments and models are created where they live);
  * the server is built once with ``scenario.make_server()`` and lives in the process that called the
    backend's ``run`` (so the harness reads its checksum afterwards);
  * ``clock.begin()`` is called once right before the first round and ``clock.tick()`` once after each
    completed round, both by whoever runs ``server.gather`` (a backend that cannot tell when the roles are
    ready may skip ``begin``: start-up then ends at the first tick).
"""
from __future__ import annotations

import abc
import hashlib
import struct
import zlib
from dataclasses import dataclass
from typing import Any, Protocol, Sequence

import numpy as np


@dataclass(frozen=True)
class Broadcast:
    """A scatter message that every worker receives unchanged (sent once where the transport allows)."""

    value: Any


class Worker(abc.ABC):
    """One worker role (an env, a rollout worker, an agent, a client). Built where it runs."""

    @abc.abstractmethod
    def step(self, msg: Any) -> Any:
        """Do this round's work for ``msg`` and return the result the server gathers."""

    def close(self) -> None:
        """Release resources (environments, files). Called once by the backend at teardown."""


class Server(abc.ABC):
    """The server role: produces each round's messages and consumes the gathered results."""

    @abc.abstractmethod
    def scatter(self) -> Broadcast | Sequence[Any]:
        """This round's messages: a `Broadcast` or one message per worker, in worker-index order."""

    @abc.abstractmethod
    def gather(self, results: Sequence[Any]) -> None:
        """Consume this round's results, one per worker, in worker-index order."""

    @abc.abstractmethod
    def checksum(self) -> str:
        """Stable hash of everything received so far; equal across backends for equal config and seed."""

    def placement(self, process_of_worker: Sequence[int]) -> None:
        """Told by the backend before the first round: ``process_of_worker[i]`` is the index of the OS
        process that runs worker ``i`` (0 = the server's own process). Lets a server attribute time by
        critical path (`scenarios.dqn`) without guessing the backend's layout. Optional to use."""

    def metrics(self) -> dict[str, float]:
        """Extra per-repetition numbers for the results row (for example a time breakdown). Optional."""
        return {}

    def final_metrics(self) -> dict[str, float]:
        """Numbers computed once after the last round, outside timing (for example an evaluation return)."""
        return {}

    def close(self) -> None:
        """Release resources held by the server."""


class Clock(Protocol):
    """What a backend calls once per completed round (implemented by the harness's round clock)."""

    def begin(self) -> None:
        """The roles exist and the first round starts now (ends the start-up interval)."""

    def tick(self) -> None:
        """One round is complete."""


class Scenario(abc.ABC):
    """A workload: its roles, its unit of work and the knobs that define it.

    Instances are small, picklable descriptions (configuration plus seed); heavy state is created by
    `make_server` and `make_worker` in the process that runs the role.
    """

    #: short name used in configs and results rows (``gym``, ``atari``, ...)
    name: str = ""
    #: the unit of work counted per round (``env_steps``, ``rounds``, ``inferences``)
    unit: str = "env_steps"
    #: ``star``: the server scatters to every worker and gathers from all (every workload of the paper);
    #: ``chain``: the server's single message passes through worker 0, 1, ..., n-1 and back to the server
    topology: str = "star"
    #: True when a role keeps references to received arrays past the round (a replay buffer does): a
    #: zero-copy transport must then hand out private copies. False lets it pass read-only views that are
    #: valid until the sender's next value, as Ray's object store does for numpy arrays.
    inputs_retained: bool = True

    def __init__(self, config: Any, seed: int):
        self.config = config
        self.seed = int(seed)

    @property
    @abc.abstractmethod
    def num_workers(self) -> int:
        """Number of worker roles (the bank width), independent of how many processes run them."""

    @abc.abstractmethod
    def make_server(self) -> Server:
        """Build the server role (in the process that drives the rounds)."""

    @abc.abstractmethod
    def make_worker(self, index: int) -> Worker:
        """Build worker ``index`` (in the process, thread or actor that will run it)."""

    @abc.abstractmethod
    def units_per_round(self) -> int:
        """Units of work done by one round (e.g. ``num_envs`` env steps)."""

    def row_fields(self) -> dict[str, Any]:
        """`num_envs` and `env_id` for the results row; scenarios override when the names differ."""
        return {"num_envs": self.num_workers, "env_id": getattr(self.config, "env_id", "-")}

    def round_work_seconds(self) -> float | None:
        """Known fixed work per round, if any (microbenchmarks), so overhead = round time - work."""
        return None


def load_target(registry: dict[str, str], name: str, kind: str) -> Any:
    """The class that ``registry[name]`` ("module:Class") names, imported on first use."""
    import importlib

    try:
        module, cls = registry[name].split(":")
    except KeyError:
        raise ValueError(f"unknown {kind} {name!r}; known: {sorted(registry)}") from None
    return getattr(importlib.import_module(module), cls)


def split_messages(msgs: Broadcast | Sequence[Any], n: int) -> list[Any]:
    """Expand a scatter result into exactly ``n`` per-worker messages (checks the count)."""
    if isinstance(msgs, Broadcast):
        return [msgs.value] * n
    msgs = list(msgs)
    if len(msgs) != n:
        raise ValueError(f"server.scatter() returned {len(msgs)} messages for {n} workers")
    return msgs


class RunningChecksum:
    """Incremental, order-sensitive hash of values (arrays, numbers, tuples) received by a server.

    Arrays are folded through CRC-32 of their bytes (about 30 us per Atari frame) plus dtype and shape, and
    every piece feeds a BLAKE2b state, so the digest is cheap per round yet covers every byte.
    """

    def __init__(self) -> None:
        self._h = hashlib.blake2b(digest_size=16)

    def update(self, value: Any) -> None:
        h = self._h
        if isinstance(value, np.ndarray):
            arr = np.ascontiguousarray(value)
            h.update(f"{arr.dtype.str}{arr.shape}".encode())
            h.update(struct.pack("<I", zlib.crc32(arr.data if arr.size else b"")))
        elif isinstance(value, (bool, np.bool_)):
            h.update(b"?1" if value else b"?0")
        elif isinstance(value, (int, np.integer)):
            h.update(b"i" + int(value).to_bytes(16, "little", signed=True))
        elif isinstance(value, (float, np.floating)):
            h.update(b"f" + struct.pack("<d", float(value)))
        elif isinstance(value, (tuple, list)):
            h.update(b"(%d" % len(value))
            for item in value:
                self.update(item)
        elif isinstance(value, dict):
            h.update(b"{%d" % len(value))
            for key in sorted(value):
                self.update(str(key))
                self.update(value[key])
        elif isinstance(value, (str, bytes)):
            data = value.encode() if isinstance(value, str) else value
            h.update(b"s%d:" % len(data) + data)
        elif value is None:
            h.update(b"N")
        else:
            raise TypeError(f"cannot checksum a {type(value).__name__}")

    def hexdigest(self) -> str:
        return self._h.hexdigest()


class Backend(abc.ABC):
    """Orchestration of one scenario: where the roles live and how a round's messages move.

    The harness calls ``start`` (framework start-up, role creation: timed apart), then ``run`` once for all
    warm-up and timed rounds, then ``stop`` (always, also after an error).
    """

    #: backend name and variant for the results row (``reactor``/``processes``, ``ray``/``compiled``)
    name: str = ""
    variant: str = "-"

    def __init__(self, config: Any, workers: int):
        self.config = config
        self.workers = int(workers)
        #: seconds of start-up by part (e.g. Ray: ray_init_s, actor_creation_s, compile_s), kept in rows
        self.startup_breakdown: dict[str, float] = {}
        #: facts about the layout for the results row's ``extra`` (e.g. Ray: envs_per_actor, actors)
        self.row_extra: dict[str, Any] = {}

    @abc.abstractmethod
    def start(self, scenario: Scenario, server: Server) -> None:
        """Start the framework and create the worker roles (not counted in throughput)."""

    @abc.abstractmethod
    def run(self, rounds: int, clock: Clock) -> None:
        """Run ``rounds`` rounds; call ``clock.tick()`` after each one's ``server.gather``."""

    @abc.abstractmethod
    def stop(self) -> None:
        """Tear everything down: no process, actor or shared-memory segment may outlive this call."""
