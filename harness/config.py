"""Structured configs for the Hydra app, registered in Hydra's ConfigStore.

Every group option in ``conf/`` names one of these schemas in its defaults list, so a misspelled key, an
unknown option or a value of the wrong type fails at composition time, before anything runs, with Hydra's
message naming the key.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any, Optional

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING, OmegaConf

from scenarios.configs import (
    ActorsConfig,
    AtariConfig,
    DqnConfig,
    FaultConfig,
    GymConfig,
    MarlConfig,
    ObjectSizeConfig,
    OverheadConfig,
)

SCENARIO_SCHEMAS = {
    "gym": GymConfig,
    "atari": AtariConfig,
    "dqn": DqnConfig,
    "marl": MarlConfig,
    "actors": ActorsConfig,
    "object_size": ObjectSizeConfig,
    "overhead": OverheadConfig,
    "fault": FaultConfig,
}


@dataclass
class BackendConfig:
    name: str = "?"


@dataclass
class SerialConfig(BackendConfig):
    """No framework: every role in the measuring process, one after another (the reference)."""

    name: str = "serial"


class Executor(str, Enum):
    inline = "inline"
    threads = "threads"
    processes = "processes"


class Placement(str, Enum):
    cost = "cost"
    even = "even"


@dataclass
class ReactorConfig(BackendConfig):
    """The reactor runtime: a server reactor and a bank of worker reactors, multiport connections."""

    name: str = "reactor"
    executor: Executor = Executor.processes
    #: processes executor: record where each worker process's time goes per round (role work,
    #: transport, waiting, other) in the rows' ``extra`` (``bd_w<rank>_<part>_us``); a few clock reads
    #: per level and tag
    breakdown: bool = True
    #: processes executor: ``even``: contiguous even parts; ``cost``: fewer bank members on process 0, which
    #: also runs the server, by the server's measured cost per round in members' steps (throwaway roles, at
    #: start-up). ``even`` is the default: in a round the server's scatter and gather never overlap the
    #: steps, so the round is fastest when the largest share of members is smallest (docs/processes.md)
    placement: Placement = Placement.even


class RayMode(str, Enum):
    actors = "actors"
    compiled = "compiled"


@dataclass
class RayConfig(BackendConfig):
    """Ray: one actor per role (``actors``) or the same rounds as a Compiled Graph (``compiled``)."""

    name: str = "ray"
    mode: RayMode = RayMode.actors
    #: roles packed into one actor: 1 = the paper's one actor per role; ``auto`` = ceil(roles / workers),
    #: one actor per worker; any integer >= 1 (a string so that ``auto`` fits; checked by
    #: `ray_backend.actors.parse_envs_per_actor` before the job starts)
    envs_per_actor: str = "1"
    #: None starts a local instance for the job; ``auto`` or ``host:port`` joins an existing cluster
    address: Optional[str] = None
    #: seconds a compiled graph waits for a result before it reports a timeout
    compiled_timeout_s: float = 60.0
    #: actors mode: a broadcast known to be smaller than this is passed inline in each call (as Ray does
    #: for small arguments); anything else is ``ray.put`` once per round. 0 = always ``ray.put``
    broadcast_inline_max_bytes: int = 102400
    #: bytes of shared memory for a local instance's object store; None = Ray's default (30% of RAM)
    object_store_memory: Optional[int] = None


@dataclass
class VectorConfig(BackendConfig):
    """gymnasium's AsyncVectorEnv: one process per env, shared-memory observations."""

    name: str = "vector"


@dataclass
class AleVectorConfig(BackendConfig):
    """ale-py's AtariVectorEnv: the emulators stepped by C++ threads, the env's own settings."""

    name: str = "ale_vector"


@dataclass
class CapacityConfig(BackendConfig):
    """The machine's ceiling: ``workers`` uncoordinated copies of the serial loop, one process each."""

    name: str = "capacity"


BACKEND_SCHEMAS = {
    "serial": SerialConfig,
    "reactor": ReactorConfig,
    "ray": RayConfig,
    "vector": VectorConfig,
    "ale_vector": AleVectorConfig,
    "capacity": CapacityConfig,
}


@dataclass
class BudgetConfig:
    """How much work one job does: rounds per repetition, untimed warm-up rounds, repetitions, timeout."""

    name: str = MISSING
    rounds: int = MISSING
    warmup_rounds: int = MISSING
    repetitions: int = MISSING
    #: hard wall-clock limit for the whole measurement (start-up included); the child is killed past it
    timeout_s: float = MISSING


@dataclass
class RunConfig:
    """One job: a scenario on a backend under a budget, with the parallelism and the seed."""

    scenario: Any = MISSING
    backend: Any = MISSING
    budget: BudgetConfig = MISSING
    #: parallelism: worker processes, threads or Ray CPUs
    workers: int = 2
    seed: int = 0
    #: BLAS / torch threads per worker process (recorded in every row)
    threads_per_worker: int = 1
    #: no progress bars
    quiet: bool = False


def register_configs() -> None:
    """Register the schemas; ``conf/<group>/<option>.yaml`` files extend ``<option>_schema`` entries."""
    cs = ConfigStore.instance()
    cs.store(name="run_schema", node=RunConfig)
    for name, schema in SCENARIO_SCHEMAS.items():
        cs.store(group="scenario", name=f"{name}_schema", node=schema)
    for name, schema in BACKEND_SCHEMAS.items():
        cs.store(group="backend", name=f"{name}_schema", node=schema)
    cs.store(group="budget", name="budget_schema", node=BudgetConfig)


def config_object(schema: type, values: dict[str, Any]) -> Any:
    """A typed dataclass instance of ``schema`` from plain values (enums restored), as roles and backends
    expect: what the measuring child and ``python -m harness graph`` build from a composed config."""
    return OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(schema), values))
