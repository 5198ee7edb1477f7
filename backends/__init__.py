"""Every backend adapter, one module each, and the one registry that names them.

``serial`` (no framework, the reference), ``vector`` (gymnasium's AsyncVectorEnv), ``reactor`` (the reactor
runtime in `reactor_backend`, any executor), ``ray`` (Ray actors or a Ray Compiled Graph, with the helpers in
`ray_backend`). Each implements the contract in `backends.base`. To add a backend: a module here with a
`Backend` subclass, its line in ``BACKENDS``, and its config (a schema in `harness.config` and a preset in
``conf/backend/``). Imports are lazy so that a serial run never imports Ray or the reactor runtime.
"""
from __future__ import annotations

from typing import Any

from backends.base import Backend
from scenarios.base import load_target

#: backend name -> "module:Class"
BACKENDS: dict[str, str] = {
    "serial": "backends.serial:SerialBackend",
    "vector": "backends.vector:VectorBackend",
    "reactor": "backends.reactor:ReactorBackend",
    "ray": "backends.ray:RayBackend",
    "ale_vector": "backends.ale_vector:AleVectorBackend",
    "capacity": "backends.capacity:CapacityBackend",
}


def make_backend(config: Any, workers: int) -> Backend:
    return load_target(BACKENDS, config.name, "backend")(config, workers)
