"""Backend registry: a backend config's ``name`` (and variant) -> the orchestration class.

Imports are lazy so that a serial run never imports Ray or the reactor runtime.
"""
from __future__ import annotations

from typing import Any

from scenarios.base import Backend, load_target

#: backend name -> "module:Class"
BACKENDS: dict[str, str] = {
    "serial": "harness.backends.serial:SerialBackend",
    "reactor": "reactor_backend.orchestration:ReactorBackend",
    "ray": "ray_backend.orchestration:RayBackend",
    "vector": "harness.backends.vector:VectorBackend",
    "ale_vector": "harness.backends.ale_vector:AleVectorBackend",
    "capacity": "harness.backends.capacity:CapacityBackend",
}


def make_backend(config: Any, workers: int) -> Backend:
    return load_target(BACKENDS, config.name, "backend")(config, workers)
