"""Backend registry: a backend config's ``name`` (and variant) -> the orchestration class.

Imports are lazy so that a serial run never imports Ray or the reactor runtime.
"""
from __future__ import annotations

import importlib
from typing import Any

from scenarios.base import Backend

#: backend name -> "module:Class"
BACKENDS: dict[str, str] = {
    "serial": "harness.backends.serial:SerialBackend",
    "reactor": "reactor_backend.orchestration:ReactorBackend",
    "ray": "ray_backend.orchestration:RayBackend",
    "vector": "harness.backends.vector:VectorBackend",
}


def make_backend(config: Any, workers: int) -> Backend:
    try:
        target = BACKENDS[config.name]
    except KeyError:
        raise ValueError(f"unknown backend {config.name!r}; known: {sorted(BACKENDS)}") from None
    module, cls = target.split(":")
    return getattr(importlib.import_module(module), cls)(config, workers)
