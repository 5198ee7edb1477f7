"""Atari simulation throughput (the paper's experiment 1 on ALE): a bank of emulators, full frames every round.

Worker ``i`` owns one ALE environment (default ``ALE/Pong-v5``) seeded with ``seed + i`` and an action RNG
seeded from ``(seed, i)`` that draws uniformly from {0, 1} (``actions=binary``, the authors' Ray Pong and
SpaceInvaders) or from the env's whole action space (``actions=full``, every LF program of the authors).
Each round it steps once and returns the full RGB observation (210x160x3 uint8, about 100 KB), the reward
and the done flag; the server folds every byte of every frame into the checksum (CRC-32). With
``reset_every_step`` the env is reset after every step, reproducing the paper's code (old gym API,
``if done or info:`` with a non-empty info dict), which makes each round much slower (a reset costs far more
than a step).
"""
from __future__ import annotations

from typing import Any

from scenarios.base import Worker
from scenarios.gym import EnvWorker, GymScenario


class AtariScenario(GymScenario):
    """The Gym scenario on ALE: same server and round; workers draw from ``actions`` and may reset."""

    name = "atari"

    def action_count(self) -> int | None:
        return None if str(getattr(self.config.actions, "value", self.config.actions)) == "full" else 2

    def make_worker(self, index: int) -> Worker:
        c = self.config
        return EnvWorker(c.env_id, self.seed, self.seed_index(index), reset_every_step=bool(c.reset_every_step),
                         num_actions=self.action_count())

    def row_fields(self) -> dict[str, Any]:
        # the report must say which rows used the paper's reset-every-step quirk: mark it in env_id too
        env_id = self.config.env_id + ("+reset_every_step" if self.config.reset_every_step else "")
        return {"num_envs": self.num_workers, "env_id": env_id}
