"""Orchestration microbenchmarks (the paper repository's "Number of actors" and "Object size" experiments).

Each round the server broadcasts one uint8 array of ``payload_bytes`` (random bytes from the seed, with the
first and last bytes stamped with the round number); every client does ``work_us`` microseconds of work
(busy-spinning on ``perf_counter`` or sleeping), copies the array and returns the copy; the server gathers
and verifies every copy. Both build what they send in the role's ``result_buffer`` (the server stamps its
payload there in place; each client copies into its own), so a backend whose transport owns the memory values
travel in can have them built there and send both without a copy of its own, as a reactor program in one
address space passes a pointer.
Overhead per round = round time - ``round_work_seconds()`` (the work of one client, i.e. the critical path
when every client runs in parallel).

Verification is cheap on purpose (a 100 MB payload times 16 clients per round must not be hashed): shape,
dtype and a strided sample of at most 65 bytes (stamps included) are compared with what was sent,
and only the sample enters the checksum.
"""
from __future__ import annotations

import time
import zlib
from typing import Any, Sequence

import numpy as np

from scenarios.base import Broadcast, Scenario, Server, Worker, WorkFacts
from scenarios.checksum import RunningChecksum

#: at most this many strided bytes (plus the last one) are compared per returned copy (a few us)
SAMPLE_BYTES = 64


class PayloadCorrupted(RuntimeError):
    """A client returned something other than an exact copy of this round's payload."""


def spin(seconds: float) -> None:
    """Busy-wait for ``seconds`` (keeps a core busy, like compute, unlike sleep).

    Args:
        seconds: how long to spin.
    """
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


class CopyClient(Worker):
    """Does the configured work, then returns a copy of the broadcast array."""

    def __init__(self, work: str, work_us: float):
        self.work_s = float(work_us) * 1e-6
        self.sleep = work == "sleep"

    def step(self, msg: np.ndarray) -> np.ndarray:
        if self.work_s > 0:
            if self.sleep:
                time.sleep(self.work_s)
            else:
                spin(self.work_s)
        out = self.result_buffer(msg.shape, msg.dtype)
        out[...] = msg
        return out


class BroadcastServer(Server):
    """Broadcasts the stamped payload and checks every returned copy against a strided sample."""

    def __init__(self, payload_bytes: int, seed: int):
        n = int(payload_bytes)
        if n < 0:
            raise ValueError("payload_bytes must be >= 0")
        self.payload = np.random.default_rng([seed, 3]).integers(0, 256, size=n, dtype=np.uint8)
        #: the sample is payload[::stride] plus the last byte (the two round stamps are always in it),
        #: taken with one precomputed fancy index (one numpy call instead of two slices and a concat)
        self.stride = max(1, n // SAMPLE_BYTES)
        self._index = np.r_[np.arange(0, n, self.stride), n - 1] if n else np.zeros(0, dtype=np.intp)
        self.round = 0
        self.expected = self._sample(self.payload)
        self._crc = 0

    def _sample(self, arr: np.ndarray) -> bytes:
        if arr.size == 0:
            return b""
        return arr.take(self._index).tobytes()

    def scatter(self) -> Broadcast:
        p = self.result_buffer(self.payload.shape, self.payload.dtype)
        if p is not self.payload:  # a new buffer (the first round, or one a backend provides): fill it once
            p[...] = self.payload
            self.payload = p
        if p.size:
            p[0] = self.round & 0xFF
            p[-1] = (self.round >> 8) & 0xFF
            self.expected = self._sample(p)
        return Broadcast(p)

    def gather(self, results: Sequence[Any]) -> None:
        n, expected, shape = self.payload.size, self.expected, self.payload.shape
        for i, copy in enumerate(results):
            if not isinstance(copy, np.ndarray) or copy.dtype != np.uint8 or copy.shape != shape:
                got = f"{type(copy).__name__} {getattr(copy, 'dtype', '')} {getattr(copy, 'shape', '')}"
                raise PayloadCorrupted(f"round {self.round}: client {i} returned {got}, expected uint8 ({n},)")
            if n and self._sample(copy) != expected:
                raise PayloadCorrupted(f"round {self.round}: client {i} returned a copy whose bytes differ")
        # chained CRC of (clients, sample) per round: order-sensitive, a few hundred ns
        self._crc = zlib.crc32(expected, zlib.crc32(len(results).to_bytes(4, "little"), self._crc))
        self.round += 1

    def checksum(self) -> str:
        digest = RunningChecksum()
        digest.update((self.round, int(self.payload.size), self._crc))
        return digest.hexdigest()


class ActorsScenario(Scenario):
    """``num_clients`` clients, one broadcast-work-copy-gather round at a time."""

    facts = WorkFacts(inputs_retained=False)  # roles read received arrays within the round only
    name = "actors"
    unit = "rounds"

    @property
    def num_workers(self) -> int:
        return int(self.config.num_clients)

    def make_server(self) -> Server:
        return BroadcastServer(int(self.config.payload_bytes), self.seed)

    def make_worker(self, index: int) -> Worker:
        work = str(getattr(self.config.work, "value", self.config.work))
        return CopyClient(work, float(self.config.work_us))

    def units_per_round(self) -> int:
        return 1

    def round_work_seconds(self) -> float:
        return float(self.config.work_us) * 1e-6

    def row_fields(self) -> dict[str, Any]:
        return {"num_envs": self.num_workers, "env_id": f"{int(self.config.payload_bytes)}B"}


class ObjectSizeScenario(ActorsScenario):
    """The same round with 16 clients and a large payload (1 KB to 100 MB)."""

    name = "object_size"
