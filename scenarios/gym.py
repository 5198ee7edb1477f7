"""Gym simulation throughput (the paper's experiment 1): a bank of gymnasium envs, one step each per round.

Worker ``i`` owns env ``i`` seeded with ``seed + i`` and an action RNG seeded from ``(seed, i)``; each
round it draws one action, steps, resets on termination or truncation and returns the observation, reward,
done flag and their checksum encoding (`scenarios.checksum.digest`, computed where the step ran); the server
receives all four and folds the encodings into the checksum in bank order (the same value as encoding every
observation itself: a vectorizer that hands the server plain ``(obs, reward, done)`` triples gets it too).
With ``seeding=same`` every worker seeds as worker 0 does (the authors seed every env and RNG with 1: identical trajectories).
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from scenarios.base import Broadcast, Scenario, Server, Worker, WorkFacts
from scenarios.checksum import RunningChecksum, digest


def make_env(env_id: str) -> Any:
    """A gymnasium env by id; ALE ids are registered on demand."""
    import gymnasium as gym

    if env_id.startswith("ALE/") or env_id.endswith(("-v4", "NoFrameskip-v4")):
        import ale_py

        gym.register_envs(ale_py)
    return gym.make(env_id)


#: what the env server scatters every round (each worker draws its own action): one immutable message
_NO_MESSAGE = Broadcast(None)


class EnvWorker(Worker):
    """One environment stepped with actions from its own seeded RNG."""

    def __init__(self, env_id: str, seed: int, index: int, reset_every_step: bool = False,
                 num_actions: int | None = None):
        """``index`` here is the worker's seed index (`GymScenario.seed_index`), not necessarily its position."""
        self.env = make_env(env_id)
        self.seed = seed + index
        self.rng = np.random.default_rng([seed, index])
        self.reset_every_step = reset_every_step
        self.num_actions = num_actions
        self.env.action_space.seed(self.seed)
        self.obs, _ = self.env.reset(seed=self.seed)

    def _action(self) -> Any:
        space = self.env.action_space
        if self.num_actions is not None:
            return int(self.rng.integers(self.num_actions))
        if hasattr(space, "n"):
            return int(self.rng.integers(space.n))
        low, high = space.low, space.high
        return self.rng.uniform(low, high).astype(space.dtype)

    def step(self, msg: Any) -> tuple[Any, float, bool, np.ndarray]:
        obs, reward, terminated, truncated, _ = self.env.step(self._action())
        done = bool(terminated or truncated)
        reward = float(reward)
        if done or self.reset_every_step:
            self.env.reset()
        return obs, reward, done, digest(obs, reward, done)

    def close(self) -> None:
        self.env.close()


class EnvServer(Server):
    """Receives every env's observation, reward and done flag each round, with their checksum encoding where the
    worker computed it (`EnvWorker.step`); a plain ``(obs, reward, done)`` triple (a vectorizer's) is encoded
    here, to the same bytes."""

    def __init__(self) -> None:
        self._sum = RunningChecksum()

    def scatter(self) -> Broadcast:
        return _NO_MESSAGE

    def gather(self, results: Sequence[tuple]) -> None:
        # the same bytes as update(obs), update(reward), update(done) per result, in one call
        self._sum.update_attached(results, 4)

    def checksum(self) -> str:
        return self._sum.hexdigest()


class GymScenario(Scenario):
    name = "gym"
    unit = "env_steps"
    #: the server's gather is one streaming BLAKE2b over the results in worker order; roles read received
    #: arrays within the round only
    facts = WorkFacts(incremental_gather=True, inputs_retained=False)

    @property
    def num_workers(self) -> int:
        return int(self.config.num_envs)

    def make_server(self) -> Server:
        return EnvServer()

    def seed_index(self, index: int) -> int:
        """The index worker ``index`` seeds its env and RNG from: itself, or 0 under ``seeding=same``."""
        return 0 if str(getattr(self.config.seeding, "value", self.config.seeding)) == "same" else index

    def action_count(self) -> int | None:
        """Draw actions from ``range(action_count())``; None: from the env's whole action space."""
        return None

    def make_worker(self, index: int) -> Worker:
        return EnvWorker(self.config.env_id, self.seed, self.seed_index(index))

    def units_per_round(self) -> int:
        return self.num_workers
