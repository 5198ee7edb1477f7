"""PufferLib's ``Multiprocessing`` vectorizer (``pufferlib-core``): what RL practitioners reach for when env
stepping is the bottleneck, set up as its users do.

``pufferlib.vector.make(creator, backend=Multiprocessing, num_envs=N, num_workers=workers, batch_size=N,
zero_copy=True)``: ``workers`` processes, each stepping ``N / workers`` envs (PufferLib's ``Serial`` inside the
process), observations, actions, rewards and flags in one shared ``RawArray``, and a synchronous batch of all
envs (``batch_size = num_envs``: PufferLib's "zero-copy synchronized for all workers" path). Its workers
busy-wait on a one-byte flag per worker and sleep (10 ms at a time) only after 0.5 s without work; the parent
busy-waits in ``recv`` too. That waiting costs CPU by design, so the backend is measured in standalone jobs
only (a paired job refuses it: it would take cores during the other backends' blocks) and every row reports
the CPU its processes used per env step (``extra.cpu_ms_per_env_step``, split into ``cpu_parent_ms_per_env_step``
and ``cpu_workers_ms_per_env_step``, and ``cpu_cores_busy``: CPU seconds per wall second), read with psutil.

Equal work with the serial backend, as `backends.vector` does it (same seeds, actions, checksum):

  * each env is a gymnasium env (``scenarios.gym.make_env``) in PufferLib's own gymnasium emulation
    (``pufferlib.emulation.GymnasiumPufferEnv``), subclassed in two ways only: env ``i`` seeds its first reset
    with ``seed + seed_index(i)`` (PufferLib would give env ``j`` of worker ``w`` ``seed + w + j``), and an
    episode's end resets the env within the same step, as the serial backend's env workers (and PufferLib's
    native envs) do, where the emulation would spend the next step on the reset; the step's terminal
    observation stays in the shared buffer. ``reset_every_step`` resets after every step. Per-step infos are
    dropped in the worker (the server receives none; PufferLib's own env wrappers return them at episode
    ends only), so no pipe traffic per step;
  * actions come from ``np.random.default_rng([seed, seed_index(i)])`` in the parent, drawn as
    `scenarios.gym.EnvWorker` draws them, and written into the shared action array by ``send``.

What PufferLib cannot express is refused before anything runs (`job_errors`, called by the harness's
pre-flight check): ``scenario.num_envs`` not divisible by ``workers`` (it gives every worker process the same
number of envs), and more workers than physical cores unless ``backend.overwork=true`` (PufferLib's own
``overwork`` flag, which only lifts that check). A non-Box observation space (Blackjack's Tuple) is refused
when the job starts: PufferLib's emulation flattens it into a struct, so the server would receive other
objects than serial's. Rewards pass through PufferLib's float32 buffer: integral rewards (CartPole, Atari)
are exact, others (Pendulum) are rounded, so rows carry ``extra.equal_work_promised = false`` and the
report trusts the checksum alone (equal to serial's where rewards are exact).

``puffer_async`` (a batch smaller than the envs, EnvPool style) is left out: each round would step only the
envs that happen to be ready, so rounds are not the scenario's rounds and the checksum cannot match
(docs/harness.md, "PufferLib").
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from backends.base import Backend, BackendConfig, Clock
from backends.vector import CpuPerStep, _ActionSampler
from scenarios.base import Scenario, Server

NAME = "puffer"

#: scenarios whose workers are gymnasium envs stepped with seeded random actions
SUPPORTED = ("gym", "atari")


@dataclass
class PufferConfig(BackendConfig):
    """PufferLib's Multiprocessing vectorizer: ``workers`` processes, a synchronous zero-copy batch of all envs."""

    name: str = "puffer"
    #: PufferLib's ``overwork``: allow more worker processes than physical cores (it refuses them otherwise)
    overwork: bool = False


class PufferUnsupported(ValueError):
    """A configuration PufferLib's Multiprocessing vectorizer cannot run as the scenario defines it."""


def physical_cores() -> int:
    """The physical cores PufferLib counts (``psutil.cpu_count(logical=False)``)."""
    import psutil

    return int(psutil.cpu_count(logical=False) or psutil.cpu_count() or 1)


def job_errors(job: dict[str, Any]) -> list[str]:
    """What of a composed job (``scenario``, ``backend``, ``workers``) PufferLib cannot run, as messages that
    name the key; empty when it can. Called before anything runs (`harness.resource_checks.fit_errors`)."""
    scenario = job.get("scenario") or {}
    backend = job.get("backend") or {}
    name = scenario.get("name")
    if name not in SUPPORTED:
        return [f"backend=puffer runs gymnasium envs in PufferLib's vectorizer and supports only scenarios "
                f"{SUPPORTED}, not {name!r}"]
    errors = []
    workers = int(job.get("workers") or 1)
    num_envs = int(scenario.get("num_envs") or 0)
    if num_envs % workers:
        errors.append(
            f"scenario.num_envs={num_envs} is not divisible by workers={workers}: PufferLib's Multiprocessing "
            f"gives every worker process the same number of envs (num_envs / num_workers); choose num_envs as a "
            f"multiple of workers (e.g. scenario.num_envs={num_envs + workers - num_envs % workers})")
    import psutil

    if psutil.cpu_count(logical=False) is None:  # PufferLib compares num_workers with it: a TypeError inside
        errors.append("PufferLib counts physical cores with psutil.cpu_count(logical=False), which cannot tell on "
                      "this machine (None): PufferLib's Multiprocessing cannot start here")
        return errors
    cores = physical_cores()
    if workers > cores and not backend.get("overwork", False):
        errors.append(
            f"workers={workers} is more than this machine's {cores} physical cores: PufferLib refuses more worker "
            f"processes than hardware cores unless overwork is set (backend.overwork=true)")
    return errors


def make_puffer_env(env_id: str, env_seed: int, reset_every_step: bool, threads: int, buf: Any = None,
                    seed: int = 0) -> Any:
    """Env creator given to PufferLib (called in each worker process, and once in the parent for the spaces)."""
    from pufferlib.emulation import GymnasiumPufferEnv

    from scenarios.gym import make_env
    from scenarios.threads import apply_threads

    class SameStepPufferEnv(GymnasiumPufferEnv):
        """PufferLib's gymnasium emulation, seeded per env and reset within the step that ends an episode."""

        def __init__(self) -> None:
            super().__init__(env=make_env(env_id), buf=buf, seed=seed)
            self.first_reset = True

        def reset(self, seed: int | None = None, options: Any = None) -> Any:
            if self.first_reset:  # env i's own seed, as the serial backend seeds it
                seed, self.first_reset = env_seed, False
            else:
                seed = None
            obs, _ = super().reset(seed=seed)
            return obs, {}

        def step(self, action: Any) -> Any:
            obs, reward, terminated, truncated, _ = super().step(action)
            if self.done or reset_every_step:  # the step's observation stays in the shared buffer
                self.env.reset()
                self.done = False
            return obs, reward, terminated, truncated, {}

    env = SameStepPufferEnv()
    if buf is not None:  # a worker's env (the parent's driver env has no buffer and applies nothing)
        apply_threads(threads)
    return env


class PufferBackend(Backend):
    name = "puffer"
    variant = "-"

    def start(self, scenario: Scenario, server: Server) -> None:
        if scenario.name not in SUPPORTED:
            raise PufferUnsupported(
                f"backend=puffer runs gymnasium envs in PufferLib's vectorizer and supports only scenarios "
                f"{SUPPORTED}, not {scenario.name!r}")
        import pufferlib.vector
        from gymnasium import spaces

        from scenarios.gym import make_env

        c = scenario.config
        self.server = server
        self.n = n = scenario.num_workers
        job = {"scenario": {"name": scenario.name, "num_envs": n},
               "backend": {"overwork": bool(self.config.overwork)}, "workers": self.workers}
        errors = job_errors(job)
        if errors:
            raise PufferUnsupported("backend=puffer: " + "; ".join(errors))
        probe = make_env(c.env_id)
        try:
            obs_space, act_space = probe.observation_space, probe.action_space
        finally:
            probe.close()
        if not isinstance(obs_space, spaces.Box):
            raise PufferUnsupported(
                f"backend=puffer: {c.env_id}'s observation space {obs_space} is not a Box: PufferLib's emulation "
                f"flattens it into a struct, so the server would receive other objects than the serial backend's")
        reset_every_step = bool(getattr(c, "reset_every_step", False))
        seed_index = scenario.seed_index  # type: ignore[attr-defined]
        env_args = [(c.env_id, scenario.seed + seed_index(i), reset_every_step, self.threads_per_worker)
                    for i in range(n)]
        self.envs = pufferlib.vector.make(
            [make_puffer_env] * n, env_args=env_args, env_kwargs=[{}] * n,
            backend=pufferlib.vector.Multiprocessing, num_envs=n, num_workers=self.workers, batch_size=n,
            zero_copy=True, overwork=bool(self.config.overwork), seed=scenario.seed)
        num_actions = scenario.action_count()  # type: ignore[attr-defined]
        self.samplers = [_ActionSampler(act_space, scenario.seed, seed_index(i), num_actions) for i in range(n)]
        if isinstance(act_space, spaces.Discrete):
            self.batch = lambda actions: np.asarray(actions, dtype=np.int32)
        else:
            self.batch = np.stack
        self.envs.reset(seed=scenario.seed)
        per_worker = n // self.workers
        self.process_of_worker = [1 + i // per_worker for i in range(n)]
        self.row_extra.update({"equal_work_promised": False, "puffer_workers": self.workers,
                               "envs_per_worker": per_worker, "batch_size": n, "zero_copy": True,
                               "overwork": bool(self.config.overwork), "physical_cores": physical_cores()})
        self.cpu = CpuPerStep([p.pid for p in self.envs.processes])

    def metrics(self) -> dict[str, float]:
        cpu = getattr(self, "cpu", None)
        return {} if cpu is None else cpu.reading()

    def run(self, rounds: int, clock: Clock) -> None:
        envs, server, samplers, batch, n = self.envs, self.server, self.samplers, self.batch, self.n
        clock.begin()
        for _ in range(rounds):
            server.scatter()  # a Broadcast(None): env workers need no message
            obs, rewards, terminals, truncations, _ = envs.step(batch([draw() for draw in samplers]))
            done = terminals | truncations
            server.gather([(obs[i], float(rewards[i]), bool(done[i])) for i in range(n)])
            self.cpu.count(n)
            if clock.tick() is False:
                return

    def stop(self) -> None:
        envs = getattr(self, "envs", None)
        if envs is None:
            return
        self.envs = None
        try:
            envs.close()  # terminates the worker processes
        finally:
            for p in envs.processes:
                p.join(timeout=5)
                if p.is_alive():
                    p.kill()
                    p.join(timeout=5)


SCHEMA = PufferConfig
BACKEND = PufferBackend
