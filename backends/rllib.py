"""The RLlib backend: RLlib's own sampler over the gym and atari scenarios' envs, a labelled reference row.

What a Ray user who does reinforcement learning runs is not hand-written actors but RLlib. This backend
builds what an RLlib algorithm builds for sampling (RLlib's new API stack): an ``EnvRunnerGroup`` of
``workers`` remote ``SingleAgentEnvRunner`` actors, each stepping a gymnasium sync vector env of
``ceil(num_envs / workers)`` of the scenario's envs (RLlib has one ``num_envs_per_env_runner`` for every
runner, so 15 envs on 2 runners are 16 envs), and samples each round the way PPO's ``training_step`` does:
``synchronous_parallel_sample(max_env_steps=<the scenario's round>)`` with ``rollout_fragment_length=1``,
so every runner steps each of its envs once (more when an env reset takes a vector step) and returns its
episode chunks and metrics to the driver. A row's units are the env steps the runners actually sampled in
the timed window (``extra.copy_units``, one entry per runner).

**Not the same work as the other rows** (docs/report.md, "References"): actions come from RLlib's default
module for PPO (``actions=module``: its torch forward pass, exploration sampling from the action
distribution, the env-to-module and module-to-env connectors, episode bookkeeping and metrics are what an
RLlib user pays), or from RLlib's ``random_actions`` path (``actions=random``: the env's action space
sampled, no forward pass), never from the scenario's seeded RNG, and no server gathers the observations.
So rows carry the checksum `NOT_EQUAL_WORK` and ``extra.equal_work_promised = false``: the report leaves
them out of validity and verdicts and shows them as a labelled reference.

The envs are the scenario's: `scenarios.gym.make_env` (the same ids, TimeLimit and, for ALE, the env's own
frameskip and sticky actions, no preprocessing wrapper), env ``i`` seeded with ``seed + seed_index(i)``
(each runner's vector env is reset with its envs' seeds). RLlib has no default CNN for 210x160 frames:
image observations get `CONV_FILTERS` (RLlib's own Atari examples' stack) and a connector that turns the
uint8 frames into floats in [0, 1], as RLlib's Atari wrapper does. torch runs on ``threads_per_worker``
threads in every runner (set after the runners are built; rows record ``torch_threads_observed``).

Start-up (``ray.init``, building the runners with their envs, modules and connectors) happens before
``clock.begin()``; its parts are in ``startup_breakdown``. RLlib's dependencies are the ``rllib`` extra
(``pip install -e '.[rllib]'``); without them the backend refuses to start, naming the extra.
"""
from __future__ import annotations

import importlib.util
import math
import time
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Optional

from backends.base import Backend, BackendConfig, Clock
from ray_backend.lifecycle import RayInstance, actor_num_cpus, thread_env
from scenarios.base import Scenario, Server

NAME = "rllib"

#: the scenarios whose workers are gymnasium envs (the ones RLlib's sampler can step)
SUPPORTED = ("gym", "atari")
#: what the rows carry instead of a checksum: RLlib's actions are not the scenario's (module docstring)
NOT_EQUAL_WORK = "rllib:not-equal-work"
#: the report's label for these rows
REFERENCE_LABEL = "RLlib sampler, not equal work"
#: import name -> distribution, for what ``import ray.rllib`` needs beyond the default install (Ray 2.60's
#: ``ray[rllib]`` extra without its gymnasium pin); pyproject.toml's ``rllib`` extra installs them
RLLIB_MODULES = {"tree": "dm_tree", "lz4": "lz4", "ormsgpack": "ormsgpack", "pyarrow": "pyarrow"}
#: RLlib's default CNN for image observations with no preset of its own (its Atari examples' filters)
CONV_FILTERS = [[16, 4, 2], [32, 4, 2], [64, 4, 2], [128, 4, 2]]
#: the RLlib env name under which this backend registers the scenario's env creator
ENV_NAME = "reactorbench-env"


class RllibActions(str, Enum):
    """``module``: RLlib's default PPO module computes the actions (what a user pays while training);
    ``random``: RLlib's ``random_actions`` sampling path (the env's action space, no forward pass)."""

    module = "module"
    random = "random"


@dataclass
class RllibConfig(BackendConfig):
    """RLlib's EnvRunnerGroup sampling the scenario's envs (a reference row: not the same work)."""

    name: str = "rllib"
    actions: RllibActions = RllibActions.module
    #: None starts a local instance for the job; ``auto`` or ``host:port`` joins an existing cluster
    address: Optional[str] = None
    #: bytes of shared memory for a local instance's object store; None = Ray's default
    object_store_memory: Optional[int] = field(default=None, metadata={"range": {"ge": 75 * 1024 * 1024}})


def variant(config: dict[str, Any]) -> str:
    """The rows' variant: where the actions come from (``module`` or ``random``).

    Args:
        config: the backend's config as a dict.
    """
    return str(config.get("actions", "module"))


class RllibMissing(RuntimeError):
    """RLlib's dependencies are not installed (the message names the extra that brings them)."""


class RllibUnsupported(ValueError):
    """The scenario is not a bank of gymnasium envs, or asks for what RLlib's sampler cannot do."""


def missing_modules(modules: dict[str, str] = RLLIB_MODULES) -> list[str]:
    """The distributions (of ``modules``: import name -> distribution) that are not importable here."""
    out = []
    for module, dist in modules.items():
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            out.append(dist)
    return out


def check_installed(modules: dict[str, str] = RLLIB_MODULES) -> None:
    """Raise `RllibMissing` naming the ``rllib`` extra when any of RLlib's dependencies is absent."""
    missing = missing_modules(modules)
    if missing:
        raise RllibMissing(f"backend=rllib needs RLlib's dependencies, missing here: {', '.join(missing)}; "
                           f"install the extra: pip install -e '.[rllib]' (make install does)")


def split_envs(num_envs: int, runners: int) -> tuple[int, int]:
    """(envs per runner, envs in all): RLlib gives every runner the same ``num_envs_per_env_runner``."""
    if num_envs < 1 or runners < 1:
        raise ValueError("need at least one env and one runner")
    per = math.ceil(num_envs / runners)
    return per, per * runners


def make_env(env_config: Any) -> Any:
    """RLlib's env creator: the scenario's env (`scenarios.gym.make_env`) for ``env_config["env_id"]``."""
    from scenarios.gym import make_env as scenario_env

    return scenario_env(env_config["env_id"])


def frames_to_float(env: Any = None, spaces: Any = None, device: Any = None) -> list[Any]:
    """The env-to-module connector for image observations: uint8 frames -> float32 in [0, 1] (RLlib's
    default CNN takes floats; RLlib's Atari wrapper normalizes inside the env, this keeps the env as is)."""
    import gymnasium as gym
    import numpy as np
    from ray.rllib.connectors.env_to_module.observation_preprocessor import SingleAgentObservationPreprocessor

    class FloatFrames(SingleAgentObservationPreprocessor):
        def recompute_output_observation_space(self, input_observation_space: Any, input_action_space: Any) -> Any:
            return gym.spaces.Box(0.0, 1.0, input_observation_space.shape, np.float32)

        def preprocess(self, observation: Any, episode: Any) -> Any:
            return np.asarray(observation, dtype=np.float32) * np.float32(1 / 255)

    return [FloatFrames()]


def _set_threads(runner: Any, threads: int) -> int:
    """Inside a runner: pin torch to ``threads`` threads and report what torch then uses."""
    import torch

    torch.set_num_threads(threads)
    return int(torch.get_num_threads())


def _set_seeds(runner: Any, seeds: list[int]) -> int:
    """Inside a runner: the seeds of its vector env's first reset, one per env (RLlib's own would be
    ``config.seed + worker_index + k``, overlapping across runners)."""
    runner._seed = list(seeds)
    runner._needs_initial_reset = True
    return int(runner.num_envs)


class RllibBackend(Backend):
    """RLlib's EnvRunnerGroup: ``workers`` remote runners over the scenario's envs, sampled each round."""

    name = "rllib"

    #: Ray's daemons (GCS, raylet, agents) and the driver's core worker run timers whatever the workload: a paired
    #: job stops the whole tree between this backend's blocks (`backends.base.Backend.parkable`)
    parkable = True

    def prepare_to_park(self) -> None:
        self.instance.parked = True  # Ray's health checks raised beyond the pauses (`ray_backend.lifecycle`)
    #: the rows' checksum column (`harness.measure`): not a checksum, since the work differs
    checksum_marker = NOT_EQUAL_WORK

    def __init__(self, config: Any, workers: int):
        super().__init__(config, workers)
        check_installed()  # before Ray starts or anything is built
        self.actions = str(getattr(config.actions, "value", config.actions))
        if self.actions not in ("module", "random"):
            raise ValueError(f"unknown backend.actions {self.actions!r}; use module or random")
        self.variant = self.actions
        self.instance = RayInstance(config.address, self.workers, config.object_store_memory)
        self.group: Any = None
        self.round_steps = 0
        self._runner_steps: list[int] = []

    # ---------------------------------------------------------------- assembly (not timed)
    def start(self, scenario: Scenario, server: Server) -> None:
        if scenario.name not in SUPPORTED:
            raise RllibUnsupported(f"backend=rllib samples gymnasium envs with RLlib and supports only scenarios "
                                   f"{SUPPORTED}, not {scenario.name!r}")
        c = scenario.config
        if bool(getattr(c, "reset_every_step", False)):
            raise RllibUnsupported("backend=rllib cannot reset every env after every step "
                                   "(scenario.reset_every_step=true): RLlib resets an env only when its episode ends")
        self.server = server
        self.round_steps = scenario.units_per_round()
        per, total = split_envs(scenario.num_workers, self.workers)
        seed_index = scenario.seed_index  # type: ignore[attr-defined]
        seeds = [scenario.seed + seed_index(i) for i in range(total)]
        self.row_extra.update({"equal_work_promised": False, "reference": REFERENCE_LABEL, "runners": self.workers,
                               "envs_per_runner": per, "envs_total": total, "actions": self.actions})
        self.instance.start()
        self.startup_breakdown["ray_init_s"] = self.instance.init_seconds

        t0 = time.perf_counter()
        import ray
        from ray.rllib.algorithms.ppo import PPOConfig
        from ray.rllib.env.env_runner_group import EnvRunnerGroup
        from ray.tune.registry import register_env

        self.startup_breakdown["rllib_import_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        register_env(ENV_NAME, make_env)
        threads = int(thread_env()["OMP_NUM_THREADS"])
        image = self._image_observations(c.env_id)
        cfg = (PPOConfig()
               .framework("torch")
               .environment(env=ENV_NAME, env_config={"env_id": c.env_id})
               .env_runners(num_env_runners=self.workers, num_envs_per_env_runner=per,
                            rollout_fragment_length=1, create_local_env_runner=False,
                            num_cpus_per_env_runner=actor_num_cpus(self.workers, self.instance.cluster_cpus()),
                            sample_timeout_s=None,
                            **({"env_to_module_connector": frames_to_float} if image else {}))
               .fault_tolerance(restart_failed_env_runners=False, ignore_env_runner_failures=False)
               .debugging(seed=scenario.seed))
        if image:
            from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig

            cfg = cfg.rl_module(model_config=DefaultModelConfig(conv_filters=CONV_FILTERS))
        try:
            self.group = EnvRunnerGroup(config=cfg, local_env_runner=False)
        except Exception as exc:  # noqa: BLE001 - RLlib's own reason, without Ray's wrapping
            raise RuntimeError(f"RLlib could not build its env runners: {type(exc).__name__}: {exc}") from exc
        self.startup_breakdown["env_runners_s"] = time.perf_counter() - t0

        t0 = time.perf_counter()
        ids = self.group.healthy_env_runner_ids()
        observed = self.group.foreach_env_runner(lambda r: _set_threads(r, threads), local_env_runner=False)
        for j, rid in enumerate(ids):
            self.group.foreach_env_runner(lambda r, s=seeds[j * per:(j + 1) * per]: _set_seeds(r, s),
                                          local_env_runner=False, remote_worker_ids=[rid])
        module = self.group.foreach_env_runner(lambda r: type(r.module).__name__, local_env_runner=False)
        self.row_extra.update({"torch_threads_observed": max(observed), "rl_module": module[0],
                               "ray_version": ray.__version__})
        self.startup_breakdown["runner_setup_s"] = time.perf_counter() - t0

    @staticmethod
    def _image_observations(env_id: str) -> bool:
        """Whether the env emits image frames (3-D Box observations), which RLlib's default module needs
        conv filters and float inputs for."""
        env = make_env({"env_id": env_id})
        try:
            shape = getattr(env.observation_space, "shape", None)
            return shape is not None and len(shape) == 3
        finally:
            env.close()

    # ---------------------------------------------------------------- execution
    def run(self, rounds: int, clock: Clock) -> None:
        from ray.rllib.execution.rollout_ops import synchronous_parallel_sample

        group, steps, random_actions = self.group, self.round_steps, self.actions == "random"
        self._runner_steps = [0] * self.workers
        counts = self._runner_steps
        clock.begin()
        for _ in range(rounds):
            per_runner, _metrics = synchronous_parallel_sample(
                worker_set=group, max_env_steps=steps, concat=False, random_actions=random_actions,
                _uses_new_env_runners=True, _return_metrics=True)
            if len(per_runner) != self.workers:
                raise RuntimeError(f"RLlib returned samples of {len(per_runner)} of {self.workers} env runners")
            for j, episodes in enumerate(per_runner):
                counts[j] += sum(e.env_steps() for e in episodes)
            if clock.tick() is False:
                return

    def metrics(self) -> dict[str, Any]:
        """The env steps each runner sampled since the last call (``copy_units``: the row's units are
        their sum, since a round samples at least, not exactly, the scenario's round)."""
        counts = self._runner_steps
        out: dict[str, Any] = {"copy_units": list(counts)} if counts else {}
        for j in range(len(counts)):
            counts[j] = 0
        return out

    # ---------------------------------------------------------------- teardown
    def stop(self) -> None:
        """Stop the runners' envs, then Ray (if this job started it): no Ray process outlives the job."""
        try:
            if self.group is not None:
                try:
                    self.group.stop()
                except Exception:  # noqa: BLE001 - a dead runner cannot close its env; Ray's shutdown follows
                    pass
                self.group = None
        finally:
            import ray

            if ray.is_initialized() or self.instance.owned:
                self.instance.shutdown()


SCHEMA = RllibConfig
BACKEND = RllibBackend
