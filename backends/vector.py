"""The vector backend: gymnasium's ``AsyncVectorEnv``, the reference point a gym user would pick first.

One process per env, observations written to shared memory (``shared_memory=True``), its standard use.
Only the env-bank scenarios (``gym``, ``atari``) fit this shape. To produce the same seeds, actions and
checksum as the serial backend (and so every other backend), the driver replays exactly what
`scenarios.gym.EnvWorker` does per env:

  * env ``i`` is reset once with seed ``seed + seed_index(i)``; later resets are unseeded (the env's own RNG goes on);
  * actions come from ``np.random.default_rng([seed, seed_index(i)])``, drawn in the same way (``action_count``, a
    discrete space's ``n``, or a uniform draw in a Box);
  * the observation returned for a step is the one the step produced, also when the episode ended (with
    ``SAME_STEP`` autoreset the terminal observation arrives in ``info["final_obs"]`` while the env has
    already been reset, unseeded, in its process);
  * with ``reset_every_step`` every env not already reset by autoreset is reset after each step.

The server (the scenario's, in this process) receives per-env ``(obs, reward, done)`` in env order. Rows report
the CPU the backend's processes used per env step (`CpuPerStep`, shared with the other vectorizers).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from backends.base import Backend, BackendConfig, Clock
from scenarios.base import Scenario, Server
from scenarios.threads import observed

NAME = "vector"


@dataclass
class VectorConfig(BackendConfig):
    """gymnasium's AsyncVectorEnv: one process per env, shared-memory observations."""

    name: str = "vector"


#: scenarios whose workers are gymnasium envs stepped with seeded random actions
SUPPORTED = ("gym", "atari")


class VectorBackendUnsupported(ValueError):
    """The scenario is not a bank of gymnasium envs (only ``gym`` and ``atari`` are)."""


def _env_fn(env_id: str, threads: int) -> Callable[[], Any]:
    def make() -> Any:
        import gymnasium

        from scenarios.gym import make_env
        from scenarios.threads import apply_threads, torch_threads

        class Threads(gymnasium.Wrapper):
            """The env, and what torch says in its process (``AsyncVectorEnv.call("torch_threads")``)."""

            def torch_threads(self) -> int | None:
                return torch_threads()

        env = Threads(make_env(env_id))
        apply_threads(threads)  # the env process's role is built
        return env

    return make


class _ActionSampler:
    """The actions `scenarios.gym.EnvWorker._action` draws for env ``index`` (same RNG, same calls)."""

    def __init__(self, space: Any, seed: int, index: int, num_actions: int | None):
        self.rng = np.random.default_rng([seed, index])
        self.space = space
        self.num_actions = num_actions

    def __call__(self) -> Any:
        space = self.space
        if self.num_actions is not None:
            return int(self.rng.integers(self.num_actions))
        if hasattr(space, "n"):
            return int(self.rng.integers(space.n))
        return self.rng.uniform(space.low, space.high).astype(space.dtype)


def unbatch(space: Any, batched: Any, i: int) -> Any:
    """Env ``i``'s observation from a batched one (``gymnasium.vector.utils.iterate`` refuses Discrete
    members of a Tuple, as in Blackjack); arrays stay arrays, Tuple/Dict spaces become tuples/dicts."""
    from gymnasium import spaces

    if isinstance(space, spaces.Tuple):
        return tuple(unbatch(sub, batched[j], i) for j, sub in enumerate(space.spaces))
    if isinstance(space, spaces.Dict):
        return {key: unbatch(sub, batched[key], i) for key, sub in space.spaces.items()}
    return batched[i]


def vector_rounds(envs: Any, server: Server, samplers: list[_ActionSampler], rounds: int, clock: Clock, *,
                  batch: Callable[[list[Any]], Any], split: Callable[[Any], list[Any]],
                  final: Callable[[Any], Any], reset_every_step: bool) -> None:
    """The rounds of a vector env (``SAME_STEP`` autoreset) as the serial backend's env workers would run
    them, shared by this backend and `backends.ale_vector`: draw each env's action, step all envs at once,
    give the server each env's ``(obs, reward, done)`` in env order, where ``obs`` is the observation the step
    produced (``final(infos["final_obs"][i])`` when the episode ended, the env having been reset already),
    and with ``reset_every_step`` reset every env that autoreset did not. ``batch`` turns the actions into
    the env's action batch; ``split`` a batched observation into per-env ones."""
    n = len(samplers)
    everyone = np.ones(n, dtype=np.bool_)
    clock.begin()
    for _ in range(rounds):
        server.scatter()  # a Broadcast(None): env workers need no message
        obs, rewards, terminated, truncated, infos = envs.step(batch([draw() for draw in samplers]))
        done = terminated | truncated
        per_env = split(obs)
        if done.any():
            final_obs = infos["final_obs"]
            for i in np.flatnonzero(done):
                per_env[i] = final(final_obs[i])
        if reset_every_step:
            mask = everyone & ~done
            if mask.any():
                envs.reset(options={"reset_mask": mask})
        server.gather([(per_env[i], float(rewards[i]), bool(done[i])) for i in range(n)])
        if clock.tick() is False:
            return


class CpuPerStep:
    """The CPU a vectorizer's processes used per env step since the previous reading (psutil: this process, which
    holds any C++ threads, and the backend's worker processes), for each row's ``extra``: what a round costs the
    machine, beside what it takes in wall time (busy-waiting, copies, pipes). ``count(steps)`` before the clock's
    tick; ``reading()`` from the backend's ``metrics`` (called at a repetition's end, and at the warm-up's end to
    drop the warm-up)."""

    def __init__(self, worker_pids: list[int]):
        import psutil

        self.procs = [psutil.Process()] + [psutil.Process(pid) for pid in worker_pids]
        self.split = bool(worker_pids)
        self.steps = 0
        self.mark = self._now()

    def _now(self) -> tuple[float, float, float, int]:
        import psutil

        parent = workers = 0.0
        for i, proc in enumerate(self.procs):
            try:
                t = proc.cpu_times()
            except psutil.NoSuchProcess:
                continue
            if i == 0:
                parent = t.user + t.system
            else:
                workers += t.user + t.system
        return parent, workers, time.perf_counter(), self.steps

    def count(self, steps: int) -> None:
        self.steps += steps

    def reading(self) -> dict[str, float]:
        now = self._now()
        parent, workers, wall, steps = (a - b for a, b in zip(now, self.mark))
        self.mark = now
        if steps <= 0 or wall <= 0:
            return {}
        out = {"cpu_ms_per_env_step": 1e3 * (parent + workers) / steps, "cpu_cores_busy": (parent + workers) / wall}
        if self.split:
            out.update({"cpu_parent_ms_per_env_step": 1e3 * parent / steps,
                        "cpu_workers_ms_per_env_step": 1e3 * workers / steps})
        return out


class CountingClock:
    """The round clock, counting each round's env steps into a `CpuPerStep` before the tick."""

    def __init__(self, clock: Clock, cpu: CpuPerStep, steps_per_round: int):
        self.clock, self.cpu, self.steps = clock, cpu, steps_per_round

    def begin(self) -> None:
        self.clock.begin()

    def tick(self) -> bool | None:
        self.cpu.count(self.steps)
        return self.clock.tick()


class VectorBackend(Backend):
    name = "vector"
    variant = "-"
    _torch_threads: list = []  # each env process's, read once its env is built

    def start(self, scenario: Scenario, server: Server) -> None:
        if scenario.name not in SUPPORTED:
            raise VectorBackendUnsupported(
                f"backend=vector runs gymnasium's AsyncVectorEnv and supports only scenarios {SUPPORTED}, "
                f"not {scenario.name!r}: use backend=serial, reactor or ray")
        from gymnasium.vector import AsyncVectorEnv, AutoresetMode

        c = scenario.config
        self.server = server
        self.n = scenario.num_workers
        self.reset_every_step = bool(getattr(c, "reset_every_step", False))
        num_actions = scenario.action_count()  # type: ignore[attr-defined]
        seed_index = scenario.seed_index  # type: ignore[attr-defined]
        self.envs = AsyncVectorEnv([_env_fn(c.env_id, self.threads_per_worker) for _ in range(self.n)],
                                   shared_memory=True, copy=True,
                                   autoreset_mode=AutoresetMode.SAME_STEP)
        space = self.envs.single_action_space
        self.samplers = [_ActionSampler(space, scenario.seed, seed_index(i), num_actions) for i in range(self.n)]
        self.envs.reset(seed=[scenario.seed + seed_index(i) for i in range(self.n)])
        self.process_of_worker = [i + 1 for i in range(self.n)]  # one subprocess per env
        self._torch_threads = list(self.envs.call("torch_threads"))
        self.cpu = CpuPerStep([proc.pid for proc in self.envs.processes])

    def metrics(self) -> dict[str, float]:
        cpu = getattr(self, "cpu", None)
        return {} if cpu is None else cpu.reading()

    def _split(self, obs: Any) -> list[Any]:
        return [unbatch(self.envs.single_observation_space, obs, i) for i in range(self.n)]

    def run(self, rounds: int, clock: Clock) -> None:
        space = self.envs.single_action_space
        is_box = hasattr(space, "shape") and not hasattr(space, "n")
        batch = np.stack if is_box else (lambda actions: np.asarray(actions, dtype=np.int64))
        vector_rounds(self.envs, self.server, self.samplers, rounds, CountingClock(clock, self.cpu, self.n),
                      batch=batch, split=self._split, final=lambda obs: obs, reset_every_step=self.reset_every_step)

    def torch_threads_observed(self) -> int | list[int] | None:
        return observed(self._torch_threads)

    def stop(self) -> None:
        envs = getattr(self, "envs", None)
        if envs is not None:
            envs.close(terminate=True)
            self.envs = None


SCHEMA = VectorConfig
BACKEND = VectorBackend
