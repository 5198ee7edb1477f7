"""Every backend adapter, one module each, found by the registry here: adding a backend is one file here
and one preset in ``conf/backend/``.

``serial`` (no framework, the reference), ``vector`` (gymnasium's AsyncVectorEnv), ``ale_vector`` (ale-py's
vector env), ``capacity`` (the machine's measured ceiling), ``reactor`` (the reactor runtime in
`reactor_backend`, any executor), ``ray`` (Ray actors or a Ray Compiled Graph, with the helpers in
`ray_backend`). Each implements the contract in `backends.base`.

A backend module ``backends/<name>.py`` declares

* ``NAME = "<name>"`` (the module's own name: the registry finds a backend by its file, without importing
  the others);
* ``SCHEMA``: its config schema, a dataclass subclass of `backends.base.BackendConfig` whose ``name``
  defaults to ``NAME``; the harness registers it in Hydra's ConfigStore as ``<name>_schema``, which the
  presets in ``conf/backend/`` extend; numeric fields carry their ranges in their metadata;
* ``BACKEND``: its factory, ``BACKEND(config, workers) -> Backend`` (usually the `Backend` subclass);
* optionally ``variant(config: dict) -> str``: the results row's ``variant`` for a composed config
  (default ``-``); it may raise ValueError on a bad value, so the job fails before it starts.

Modules are discovered with `pkgutil` on this package's ``__path__`` (names starting with ``_`` and
``base`` are not backends) and imported only when asked for: the measuring child of a serial run imports
``backends.serial`` alone, never Ray or the reactor runtime. A module's top level should import no heavy
framework (Ray is imported inside `backends.ray`'s methods) because the harness's parent process imports
every backend module to register the schemas (the reactor runtime, imported by `backends.reactor`, is
loaded there anyway: the runner calls its clean-up).
"""
from __future__ import annotations

import dataclasses
import importlib
import pkgutil
from types import ModuleType
from typing import Any, Callable

from backends.base import Backend, BackendConfig

#: modules of this package that are not backends
NOT_BACKENDS = frozenset({"base"})


class BackendDeclarationError(TypeError):
    """A backend module lacks ``NAME``, ``SCHEMA`` or ``BACKEND``, or declares them wrongly."""


def backend_names() -> list[str]:
    """The name of every backend module on this package's path (found on disk; nothing is imported)."""
    return sorted(info.name for info in pkgutil.iter_modules(__path__)
                  if not info.name.startswith("_") and info.name not in NOT_BACKENDS)


def backend_module(name: str) -> ModuleType:
    """The module of backend ``name``, imported on first use and checked against the declaration rules."""
    names = backend_names()
    if name not in names:
        raise ValueError(f"unknown backend {name!r}; known: {names}")
    module = importlib.import_module(f"{__name__}.{name}")
    problems = declaration_problems(module, name)
    if problems:
        raise BackendDeclarationError(f"backends/{name}.py: " + "; ".join(problems))
    return module


def declaration_problems(module: ModuleType, name: str) -> list[str]:
    """What ``module`` declares wrongly for backend ``name`` (empty when it follows the rules above)."""
    problems = []
    if getattr(module, "NAME", None) != name:
        problems.append(f"NAME must be {name!r} (the module's name), not {getattr(module, 'NAME', None)!r}")
    schema = getattr(module, "SCHEMA", None)
    if not (isinstance(schema, type) and dataclasses.is_dataclass(schema) and issubclass(schema, BackendConfig)):
        problems.append("SCHEMA must be a dataclass subclass of backends.base.BackendConfig")
    elif schema().name != name:
        problems.append(f"SCHEMA's name must default to {name!r}, not {schema().name!r}")
    if not callable(getattr(module, "BACKEND", None)):
        problems.append("BACKEND must be a callable (config, workers) -> Backend")
    return problems


def backend_schema(name: str) -> type:
    """The config schema of backend ``name`` (imports its module only)."""
    return backend_module(name).SCHEMA


def backend_schemas() -> dict[str, type]:
    """Every backend's config schema by name (imports every backend module, no framework)."""
    return {name: backend_schema(name) for name in backend_names()}


def backend_variant(config: dict[str, Any]) -> str:
    """The results row's ``variant`` for a plain backend config (its module's ``variant``, or ``-``).

    Args:
        config: the backend's config as a dict; ``name`` names its module.
    """
    variant: Callable[[dict[str, Any]], str] | None = getattr(backend_module(config["name"]), "variant", None)
    return "-" if variant is None else str(variant(config))


def make_backend(config: Any, workers: int, threads_per_worker: int = 1) -> Backend:
    """The backend that ``config.name`` names, built from its typed config.

    Args:
        config: the backend's config (its module's ``SCHEMA``).
        workers: the job's parallelism.
        threads_per_worker: BLAS and torch threads per process that runs roles.
    """
    backend = backend_module(config.name).BACKEND(config, workers)
    backend.threads_per_worker = int(threads_per_worker)
    return backend
