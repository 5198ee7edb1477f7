"""The Ray actor that holds worker roles, and how worker indices are packed into actors.

An actor is a plain class here (made remote by the orchestration with the options of the job), so the
same code runs under ``.remote()`` calls and inside a Compiled Graph. It builds its workers with
``scenario.make_worker(i)`` in its own process: environments and models are created where they live.
"""
from __future__ import annotations

import os
import time
from typing import Any, Sequence

import numpy as np

from scenarios.base import Scenario, Worker


#: ``envs_per_actor`` value that packs the roles into one actor per worker (Ray CPU)
AUTO = "auto"


def parse_envs_per_actor(value: Any) -> str | int:
    """``"auto"`` or a positive int from a config value; a clear error naming the key otherwise."""
    text = str(getattr(value, "value", value)).strip().lower()
    if text == AUTO:
        return AUTO
    try:
        k = int(text)
    except ValueError:
        raise ValueError(f"backend.envs_per_actor must be 'auto' or an integer >= 1, got {value!r}") from None
    if k < 1:
        raise ValueError(f"backend.envs_per_actor must be 'auto' or an integer >= 1, got {value!r}")
    return k


def is_packed(value: Any) -> bool:
    """True unless the layout is the paper's one actor per role (``envs_per_actor=1``)."""
    return parse_envs_per_actor(value) != 1


def resolve_envs_per_actor(value: Any, num_roles: int, workers: int) -> int:
    """Roles per actor: the integer as given, or for ``auto`` ceil(roles / workers) (one actor per worker)."""
    k = parse_envs_per_actor(value)
    if k == AUTO:
        if workers < 1 or num_roles < 1:
            raise ValueError(f"envs_per_actor=auto needs roles >= 1 and workers >= 1, got {num_roles}, {workers}")
        return -(-num_roles // workers)
    return int(k)


def actor_slices(num_workers: int, envs_per_actor: int) -> list[range]:
    """Consecutive worker indices per actor: ``k`` each, the last actor may hold fewer."""
    if num_workers < 1:
        raise ValueError("a scenario needs at least one worker")
    if envs_per_actor < 1:
        raise ValueError(f"envs_per_actor must be >= 1, got {envs_per_actor}")
    k = envs_per_actor
    return [range(start, min(start + k, num_workers)) for start in range(0, num_workers, k)]


#: scalar types whose size is known without serializing them
_SCALARS = (type(None), bool, int, float, complex, np.generic)


def known_small(value: Any, limit: int) -> bool:
    """True when ``value`` is certainly smaller than ``limit`` bytes once serialized.

    Only plain scalars, strings, bytes, numpy arrays and containers of them are sized (without
    serializing); anything else counts as large, so it goes through the object store once.
    """
    budget = [limit]

    def fits(v: Any, depth: int) -> bool:
        if depth > 8:
            return False
        if isinstance(v, _SCALARS):
            budget[0] -= 16
        elif isinstance(v, (str, bytes, bytearray)):
            budget[0] -= len(v) + 16
        elif isinstance(v, np.ndarray):
            if v.dtype.hasobject:
                return False
            budget[0] -= v.nbytes + 128
        elif isinstance(v, (tuple, list)):
            budget[0] -= 8
            if not all(fits(item, depth + 1) for item in v):
                return False
        elif isinstance(v, dict):
            if not all(fits(k, depth + 1) and fits(item, depth + 1) for k, item in v.items()):
                return False
        else:
            return False
        return budget[0] > 0

    return limit > 0 and fits(value, 0)


def owned_copy(value: Any) -> Any:
    """``value`` with every read-only numpy array (a zero-copy view of a Ray buffer) copied out.

    A Compiled Graph hands numpy results to the driver as views of its shared-memory channel; the channel
    cannot take the next round's result until those views are gone. The server may keep what it gathers,
    so results are copied into memory the driver owns. Containers are rebuilt only when something inside
    them was copied.
    """
    if isinstance(value, np.ndarray):
        return value.copy() if not value.flags.writeable else value
    if isinstance(value, (tuple, list)):
        items = [owned_copy(v) for v in value]
        if all(a is b for a, b in zip(items, value)):
            return value
        if isinstance(value, list):
            return items
        return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
    if isinstance(value, dict):
        copied = {k: owned_copy(v) for k, v in value.items()}
        return value if all(copied[k] is value[k] for k in value) else copied
    return value


class WarmUp:
    """Sentinel message of a compiled graph's warm-up execution: the actors return without stepping.

    Ray's first execution of a compiled graph sets up each actor's channel context (importing torch when
    it is installed), which can take seconds per actor; a warm-up pass moves that into start-up without
    touching any role, so the checksum is unchanged.
    """


class RoleActor:
    """A Ray actor holding the worker roles ``indices`` of ``scenario`` (one or several envs)."""

    def __init__(self, scenario: Scenario, indices: Sequence[int], threads: int):
        from scenarios.threads import apply_threads

        apply_threads(threads)  # the variables, for what the roles load
        self.indices = list(indices)
        self.workers: list[Worker] = [scenario.make_worker(i) for i in self.indices]
        self.step_ns = 0
        apply_threads(threads)  # every role of this actor is built: torch too, as every backend does

    def ready(self) -> dict[str, Any]:
        """Once the workers exist: this actor's pid and thread pinning (start-up ends when all are ready)."""
        from scenarios.threads import torch_threads

        return {
            "pid": os.getpid(),
            "workers": self.indices,
            "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
            "torch_threads": torch_threads(),
        }

    def step_each(self, msgs: Sequence[Any]) -> list[Any]:
        """One round with one message per held worker, in worker-index order."""
        if msgs is WarmUp:
            return []
        t0 = time.perf_counter_ns()
        out = [w.step(m) for w, m in zip(self.workers, msgs)]
        self.step_ns += time.perf_counter_ns() - t0
        return out

    def step_all(self, msg: Any) -> list[Any]:
        """One round in which every held worker receives the same (broadcast) message."""
        if msg is WarmUp:
            return []
        t0 = time.perf_counter_ns()
        out = [w.step(msg) for w in self.workers]
        self.step_ns += time.perf_counter_ns() - t0
        return out

    def busy_ns(self) -> int:
        """Nanoseconds spent inside the roles' ``step`` so far (the backend's time breakdown)."""
        return self.step_ns

    def close(self) -> None:
        """Close the workers (environments, files) before the actor is killed."""
        for w in self.workers:
            w.close()
