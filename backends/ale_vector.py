"""ale-py's own vector env (``ale_py.vector_env.AtariVectorEnv``): the emulators stepped by C++ threads,
what an Atari user picks for raw throughput, beside gymnasium's AsyncVectorEnv (`backends.vector`).

Equal settings: the env is configured from the gymnasium id's own spec (``gym.make(env_id)``): the game,
frameskip, sticky-action probability (``repeat_action_probability``), full or minimal action space and the
episode frame limit, with full RGB frames (210x160x3, no resize, grayscale, frame stacking, max-pooling,
no-op starts, fire reset, reward clipping or episodic life). Env ``i`` is reset with seed ``seed + seed_index(i)``;
actions come from the same seeded RNGs as `scenarios.gym.EnvWorker` (``action_count()`` or the action space),
the observation returned for a step is the one it produced (``final_obs`` at an episode's end), and with
``reset_every_step`` every env not already reset is reset after each step.

At its best, as ale-py's vector-environment guide advises for throughput, chosen per ``workers``: ``num_threads
= min(workers, num_envs)`` C++ threads (one per core the job is given; the guide: threads up to the number of
cores), ``batch_size = num_envs`` (every env in every step: the synchronous batch that equal rounds need; a smaller
batch is the asynchronous mode, not the same work), and thread affinity (``thread_affinity_offset``: thread ``k``
pinned to core ``offset + k``) where the threads fit on the cores the job may use and those are one contiguous
range (``backend.thread_affinity=auto``, the default; ``on`` / ``off`` force it; pinned threads stop migrating
between cores and keep their emulator's state in that core's cache). Rows record ``threads``, ``batch_size``
and ``thread_affinity_offset`` (-1: not pinned).

Equal work, and when it is not: ALE's sticky actions draw from an RNG inside the emulator, and the C++
vector env seeds it differently from the Python env (measured with all 6 Pong actions: with
``repeat_action_probability=0`` the frames are identical step for step; with ALE/Pong-v5's 0.25 they differ
from the second step). With sticky actions it therefore cannot promise the serial backend's trajectories,
and rows carry ``extra.equal_work_promised = false``: the report then trusts the checksum alone. Where it
still equals serial's (Pong with actions {0, 1}: NOOP and FIRE leave the paddle alone, so a repeated action
changes nothing) the rows are compared as usual; where it differs they are labelled "not the same work",
left out of the checksum comparison and out of every verdict (docs/report.md).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from backends.vector import CountingClock, CpuPerStep, _ActionSampler, vector_rounds
from backends.base import Backend, BackendConfig, Clock
from scenarios.base import Scenario, Server

NAME = "ale_vector"


@dataclass
class AleVectorConfig(BackendConfig):
    """ale-py's AtariVectorEnv: the emulators stepped by C++ threads, the env's own settings."""

    name: str = "ale_vector"
    #: pin the C++ threads to cores: ``auto`` (where they fit on one contiguous range of the job's cores), ``on``, ``off``
    thread_affinity: str = "auto"



class AleVectorUnsupported(ValueError):
    """The scenario is not ``atari``, or its env's settings cannot be given to AtariVectorEnv."""


def vector_settings(env_id: str) -> dict[str, Any]:
    """AtariVectorEnv keyword arguments that reproduce ``gym.make(env_id)``'s emulator settings."""
    from scenarios.gym import make_env

    env = make_env(env_id)
    try:
        ale_env = env.unwrapped
        kw = dict(env.spec.kwargs)
        frameskip = kw.get("frameskip", 4)
        if not isinstance(frameskip, int):
            raise AleVectorUnsupported(
                f"{env_id} draws its frameskip from {frameskip}: AtariVectorEnv has a fixed frameskip only")
        if kw.get("obs_type", "rgb") != "rgb":
            raise AleVectorUnsupported(f"{env_id}: obs_type {kw.get('obs_type')!r}; only rgb is supported")
        height, width, _ = ale_env.observation_space.shape
        return {
            "game": kw["game"],
            "frameskip": int(frameskip),
            "repeat_action_probability": float(kw.get("repeat_action_probability", 0.25)),
            "full_action_space": bool(kw.get("full_action_space", False)),
            "max_num_frames_per_episode": int(kw.get("max_num_frames_per_episode", 108_000)),
            "img_height": int(height), "img_width": int(width), "grayscale": False, "stack_num": 1,
            "maxpool": False, "noop_max": 0, "use_fire_reset": False, "reward_clipping": False,
            "episodic_life": False,
        }
    finally:
        env.close()


AFFINITY = ("auto", "on", "off")


def variant(config: dict[str, Any]) -> str:
    """The row's variant: ``-`` (a bad ``thread_affinity`` is refused before the job starts)."""
    if config.get("thread_affinity", "auto") not in AFFINITY:
        raise ValueError(f"backend.thread_affinity={config.get('thread_affinity')!r}: one of {AFFINITY}")
    return "-"


def thread_options(workers: int, num_envs: int, affinity: str = "auto",
                   cpus: set[int] | None = None) -> dict[str, int]:
    """AtariVectorEnv's ``num_threads``, ``batch_size`` and ``thread_affinity_offset`` for ``workers`` on the
    CPUs the job may use (``cpus``, default: this process's affinity)."""
    if affinity not in AFFINITY:
        raise AleVectorUnsupported(f"backend.thread_affinity={affinity!r}: one of {AFFINITY}")
    cpus = sorted(os.sched_getaffinity(0) if cpus is None else cpus)
    threads = max(1, min(workers, num_envs))
    contiguous = cpus == list(range(cpus[0], cpus[0] + len(cpus)))
    fits = threads <= len(cpus) and contiguous
    if affinity == "on" and not contiguous:
        raise AleVectorUnsupported(f"backend.thread_affinity=on: this job's CPUs {cpus} are not one contiguous "
                                   f"range, and AtariVectorEnv pins thread k to core offset + k")
    pin = affinity == "on" or (affinity == "auto" and fits)
    return {"num_threads": threads, "batch_size": num_envs, "thread_affinity_offset": cpus[0] if pin else -1}


class AleVectorBackend(Backend):
    name = "ale_vector"
    variant = "-"

    def start(self, scenario: Scenario, server: Server) -> None:
        if scenario.name != "atari":
            raise AleVectorUnsupported(f"backend=ale_vector runs ALE emulators and supports only scenario atari, "
                                       f"not {scenario.name!r}")
        from ale_py.vector_env import AtariVectorEnv

        c = scenario.config
        self.server = server
        self.n = scenario.num_workers
        self.reset_every_step = bool(getattr(c, "reset_every_step", False))
        settings = vector_settings(c.env_id)
        # sticky actions draw from the emulator's RNG, seeded differently in the C++ env: only the checksum
        # can tell whether the work was equal
        promised = settings["repeat_action_probability"] == 0.0
        options = thread_options(self.workers, self.n, str(getattr(self.config, "thread_affinity", "auto")))
        self.row_extra.update({"equal_work_promised": promised, "threads": options["num_threads"],
                               "batch_size": options["batch_size"],
                               "thread_affinity_offset": options["thread_affinity_offset"]})
        self.envs = AtariVectorEnv(num_envs=self.n, autoreset_mode="SameStep", **options, **settings)
        space = self.envs.single_action_space
        num_actions = scenario.action_count()  # type: ignore[attr-defined]
        seed_index = scenario.seed_index  # type: ignore[attr-defined]
        self.samplers = [_ActionSampler(space, scenario.seed, seed_index(i), num_actions) for i in range(self.n)]
        self.frame_shape = (settings["img_height"], settings["img_width"], 3)
        self.envs.reset(seed=np.asarray([scenario.seed + seed_index(i) for i in range(self.n)], dtype=np.int64))
        self.process_of_worker = [1] * self.n  # one process beside the server's, threads inside it
        self.cpu = CpuPerStep([])  # the C++ threads run in this process

    def metrics(self) -> dict[str, float]:
        cpu = getattr(self, "cpu", None)
        return {} if cpu is None else cpu.reading()

    def run(self, rounds: int, clock: Clock) -> None:
        n, shape = self.n, self.frame_shape

        def split(obs: Any) -> list[Any]:
            frames = obs.reshape((n, *shape))
            return [frames[i] for i in range(n)]

        vector_rounds(self.envs, self.server, self.samplers, rounds, CountingClock(clock, self.cpu, n),
                      batch=lambda actions: np.asarray(actions, dtype=np.int64), split=split,
                      final=lambda obs: np.asarray(obs).reshape(shape), reset_every_step=self.reset_every_step)

    def stop(self) -> None:
        envs = getattr(self, "envs", None)
        if envs is not None:
            envs.close()
            self.envs = None


SCHEMA = AleVectorConfig
BACKEND = AleVectorBackend
