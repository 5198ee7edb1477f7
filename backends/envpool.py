"""EnvPool (``envpool``, C++ thread pool): the Atari bar of the EnvPool paper, stepped synchronously as one batch.

``envpool.make("<Game>-v5", env_type="gymnasium", num_envs=N, batch_size=N, num_threads=min(workers, N))``:
every env in every step (the synchronous mode; a smaller ``batch_size`` is EnvPool's asynchronous mode, not the
same rounds), threads pinned to cores as EnvPool's documentation advises (``thread_affinity_offset``, where the
threads fit on one contiguous range of the job's cores: `backends.ale_vector.thread_options`), the emulator set
up from the gymnasium id's own spec as `backends.ale_vector` does (game, frameskip, sticky-action probability,
full or minimal action space, episode frame limit), full RGB frames (210x160, no grayscale, resize or frame
stacking), no episodic life, no reward clipping, no fire reset; env ``i`` seeded with ``seed + seed_index(i)``
(``env_seed``) and stepped with the actions of `scenarios.gym.EnvWorker`'s seeded RNG.

Not the same work, and labelled so (``extra.equal_work_promised = false``: the report trusts the checksum alone,
which differs, so the rows are a labelled reference beside the verdicts, like RLlib's): EnvPool returns each
frame max-pooled over the last two emulator frames and channel-first (3x210x160, passed to the server as it
comes), draws its sticky actions and its reset no-op (at most one) from its own RNG, and resets an env on the
step after its episode ended (that step ignores its action; counted in ``extra.reset_steps``) where the serial
backend resets within the step. ``reset_every_step`` is refused.

envpool 1.2.5 is the last release with a wheel for Python 3.11 (none for 3.12): ``make install-envpool``
installs it (with its asset packages, about 600 MB); without it the job is refused before it starts.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from backends.ale_vector import AFFINITY, thread_options, vector_settings
from backends.base import Backend, BackendConfig, Clock
from backends.vector import CpuPerStep, _ActionSampler
from scenarios.base import Scenario, Server

NAME = "envpool"


@dataclass
class EnvPoolConfig(BackendConfig):
    """EnvPool's Atari envs: a C++ thread pool, one synchronous batch of all envs per step."""

    name: str = "envpool"
    #: pin the pool's threads to cores: ``auto`` (where they fit on one contiguous range of the job's cores), ``on``, ``off``
    thread_affinity: str = "auto"


class EnvPoolUnsupported(ValueError):
    """A configuration the EnvPool backend cannot run (not atari, reset_every_step, envpool missing)."""


def variant(config: dict[str, Any]) -> str:
    if config.get("thread_affinity", "auto") not in AFFINITY:
        raise ValueError(f"backend.thread_affinity={config.get('thread_affinity')!r}: one of {AFFINITY}")
    return "-"


def job_errors(job: dict[str, Any]) -> list[str]:
    """Refusals before anything runs: only atari, no reset_every_step, envpool importable."""
    import importlib.util

    scenario = job.get("scenario") or {}
    if scenario.get("name") != "atari":
        return [f"backend=envpool runs EnvPool's Atari envs and supports only scenario atari, not "
                f"{scenario.get('name')!r}"]
    errors = []
    if scenario.get("reset_every_step"):
        errors.append("scenario.reset_every_step=true: EnvPool resets an env only after its episode ends")
    if importlib.util.find_spec("envpool") is None:
        errors.append("backend=envpool: the envpool package is not installed (make install-envpool; envpool 1.2.5 "
                      "has wheels up to Python 3.11)")
    return errors


def task_id(game: str) -> str:
    """EnvPool's task id for an ALE game name (``space_invaders`` -> ``SpaceInvaders-v5``)."""
    return "".join(part.capitalize() for part in game.split("_")) + "-v5"


class EnvPoolBackend(Backend):
    name = "envpool"
    variant = "-"

    def start(self, scenario: Scenario, server: Server) -> None:
        c = scenario.config
        errors = job_errors({"scenario": {"name": scenario.name,
                                          "reset_every_step": bool(getattr(c, "reset_every_step", False))}})
        if errors:
            raise EnvPoolUnsupported("; ".join(errors))
        import envpool

        self.server = server
        self.n = n = scenario.num_workers
        settings = vector_settings(c.env_id)
        options = thread_options(self.workers, n, str(self.config.thread_affinity))
        seed_index = scenario.seed_index  # type: ignore[attr-defined]
        self.envs = envpool.make(
            task_id(settings["game"]), env_type="gymnasium", num_envs=n, batch_size=n,
            num_threads=options["num_threads"], thread_affinity_offset=options["thread_affinity_offset"],
            seed=scenario.seed, env_seed=[scenario.seed + seed_index(i) for i in range(n)],
            frame_skip=settings["frameskip"], repeat_action_probability=settings["repeat_action_probability"],
            full_action_space=settings["full_action_space"],
            max_episode_steps=settings["max_num_frames_per_episode"] // settings["frameskip"],
            img_height=settings["img_height"], img_width=settings["img_width"], gray_scale=False, stack_num=1,
            noop_max=1, episodic_life=False, reward_clip=False, use_fire_reset=False,
            zero_discount_on_life_loss=False)
        space = self.envs.action_space
        num_actions = scenario.action_count()  # type: ignore[attr-defined]
        self.samplers = [_ActionSampler(space, scenario.seed, seed_index(i), num_actions) for i in range(n)]
        self.envs.reset()
        self.process_of_worker = [0] * n  # threads inside the server's process
        self.reset_steps = 0
        self.cpu = CpuPerStep([])  # the pool's threads run in this process
        self.row_extra.update({"equal_work_promised": False, "threads": options["num_threads"],
                               "batch_size": n, "thread_affinity_offset": options["thread_affinity_offset"],
                               "envpool": envpool.__version__})

    def metrics(self) -> dict[str, float]:
        if getattr(self, "cpu", None) is None:
            return {}
        steps, self.reset_steps = self.reset_steps, 0
        return {"reset_steps": steps, **self.cpu.reading()}

    def run(self, rounds: int, clock: Clock) -> None:
        envs, server, samplers, n = self.envs, self.server, self.samplers, self.n
        pending = np.zeros(n, dtype=np.bool_)  # envs whose next step is EnvPool's reset step
        clock.begin()
        for _ in range(rounds):
            server.scatter()
            actions = np.asarray([draw() for draw in samplers], dtype=np.int32)
            obs, rewards, terminated, truncated, _ = envs.step(actions)
            self.reset_steps += int(pending.sum())
            done = terminated | truncated
            pending = done
            server.gather([(obs[i], float(rewards[i]), bool(done[i])) for i in range(n)])
            self.cpu.count(n)
            if clock.tick() is False:
                return

    def stop(self) -> None:
        envs = getattr(self, "envs", None)
        if envs is not None:
            envs.close()
            self.envs = None


SCHEMA = EnvPoolConfig
BACKEND = EnvPoolBackend
