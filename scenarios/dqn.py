"""Synchronized parallel Q-learning (the paper's experiment 2) on Blackjack-v1.

Each round:
  * scatter: the learner broadcasts its current Q-network weights (a list of numpy arrays);
  * worker ``i`` (a rollout worker) loads them and takes ``steps_per_round`` epsilon-greedy steps in its own
    Blackjack env (seeded ``seed + i``, exploration RNG seeded from ``(seed, i)``), returning the
    transitions as one float32 array ``(steps, 9)`` = obs(3), action, reward, next_obs(3), terminated,
    plus the seconds its rollout took (timing only, never checksummed);
  * gather: the server appends every transition to a replay buffer (ring, ``buffer_capacity``) and the
    learner takes one Adam step on a minibatch (MSE on the one-step TD target from a target network synced
    every ``target_sync_every`` rounds): ``minibatch_rule=uniform`` draws it with replacement from the
    server's seeded RNG; ``first`` takes the buffer's oldest ``minibatch`` entries, as the authors'
    replay buffer returns ``list(deque)[:N]`` (5.Parallel_Q_learning/sample_*/blackjack_dqn_train_deterministic.py).

``weights_message=state_dict`` broadcasts the Q-network's whole ``state_dict`` (torch tensors) each round
as the authors' learner does; ``arrays`` a list of numpy arrays. ``seeding=same`` seeds every rollout
worker as worker 0 (the authors seed every env and RNG with 1: sixteen identical rollouts).

The checksum covers every transition received and the learner's current weights, so equal checksums
across backends mean equal training. ``metrics()`` gives the learner's and the rounds' seconds and
``worker_seconds()`` each rollout's; the harness splits each round's wall time by critical path from them and
the backend's layout, with one definition for every backend (`harness.phases`, docs/report.md).
``final_metrics()`` evaluates the greedy policy on ``eval_episodes`` seeded episodes.
"""
from __future__ import annotations

import hashlib
import time
from typing import Any, Sequence

import numpy as np

from scenarios.base import Broadcast, Scenario, Server, Worker
from scenarios.checksum import RunningChecksum, digest
from scenarios.nets import seeded_mlp, tensor_of
from scenarios.threads import import_torch

OBS_DIM = 3
NUM_ACTIONS = 2
#: columns of one transition row: obs(3), action, reward, next_obs(3), terminated
TRANSITION_WIDTH = 2 * OBS_DIM + 3




def make_qnet(hidden: int, seed: int) -> Any:
    """The paper's Q-network Linear(3, hidden)-ReLU-Linear(hidden, 2), initialized from ``seed`` only."""
    import_torch()
    return seeded_mlp([OBS_DIM, hidden, NUM_ACTIONS], [seed, 5])


def get_weights(net: Any) -> list[np.ndarray]:
    """The parameters as fresh numpy arrays (picklable, safe to share while the net keeps training)."""
    return [p.detach().numpy().copy() for p in net.parameters()]


def set_weights(net: Any, weights: Sequence[np.ndarray] | dict[str, Any]) -> None:
    """Load a broadcast: a list of numpy arrays, or a ``state_dict`` (``weights_message=state_dict``)."""
    torch = import_torch()
    if isinstance(weights, dict):
        net.load_state_dict(weights)
        return
    with torch.no_grad():
        for p, w in zip(net.parameters(), weights, strict=True):
            p.copy_(tensor_of(np.asarray(w)))


def state_dict_copy(net: Any) -> dict[str, Any]:
    """The net's ``state_dict`` as fresh tensors (the learner keeps training while workers read it)."""
    return {key: t.detach().clone() for key, t in net.state_dict().items()}


def obs_vector(obs: tuple[int, int, int]) -> np.ndarray:
    """Blackjack's (player sum, dealer card, usable ace) as the network's float32 input."""
    return np.asarray(obs, dtype=np.float32)


def greedy_action(net: Any, obs: np.ndarray) -> int:
    """argmax_a Q(obs, a); call under ``torch.no_grad()``."""
    import torch

    return int(net(torch.from_numpy(obs)).argmax().item())


class RolloutWorker(Worker):
    """One Blackjack env stepped epsilon-greedily on the latest broadcast weights."""

    def __init__(self, env_id: str, seed: int, index: int, steps: int, epsilon: float, hidden: int):
        import gymnasium as gym

        self.torch = import_torch()
        self.env = gym.make(env_id)
        self.env.action_space.seed(seed + index)
        self.obs = obs_vector(self.env.reset(seed=seed + index)[0])
        self.rng = np.random.default_rng([seed, index])
        self.steps = steps
        self.epsilon = epsilon
        self.net = make_qnet(hidden, seed)  # overwritten by every round's broadcast

    def step(self, msg: Sequence[np.ndarray]) -> tuple[np.ndarray, float, np.ndarray]:
        """This round's transitions, the seconds the rollout took, and the transitions' checksum encoding
        (`scenarios.checksum.digest`, computed here rather than on the learner's critical path)."""
        t0 = time.perf_counter()
        set_weights(self.net, msg)
        out = np.empty((self.steps, TRANSITION_WIDTH), dtype=np.float32)
        with self.torch.no_grad():
            self.obs = self._rollout(out, self.obs)
        encoded = digest(out)
        return out, time.perf_counter() - t0, encoded

    def _rollout(self, out: np.ndarray, obs: np.ndarray) -> np.ndarray:
        env, rng, net, eps = self.env, self.rng, self.net, self.epsilon
        for t in range(self.steps):
            if rng.random() < eps:
                action = int(rng.integers(NUM_ACTIONS))
            else:
                action = greedy_action(net, obs)
            nxt, reward, terminated, truncated, _ = env.step(action)
            nxt = obs_vector(nxt)
            row = out[t]
            row[0:OBS_DIM] = obs
            row[OBS_DIM] = action
            row[OBS_DIM + 1] = reward
            row[OBS_DIM + 2:2 * OBS_DIM + 2] = nxt
            row[2 * OBS_DIM + 2] = float(terminated)
            obs = obs_vector(env.reset()[0]) if (terminated or truncated) else nxt
        return obs

    def close(self) -> None:
        self.env.close()


def _opt(value: Any) -> str:
    return str(getattr(value, "value", value))


class ReplayBuffer:
    """A ring of transitions and the minibatch rule; in the learner, or as its own role (``replay=role``).

    Its RNG is seeded from ``(seed, 2**31 - 1)`` wherever it lives, so both layouts draw the same
    minibatches and produce the same checksum.
    """

    def __init__(self, config: Any, seed: int):
        self.config = config
        self.buffer = np.zeros((config.buffer_capacity, TRANSITION_WIDTH), dtype=np.float32)
        self.size = 0
        self.pos = 0
        self.rng = np.random.default_rng([seed, 2**31 - 1])

    def store(self, batch: np.ndarray) -> None:
        n, cap = len(batch), self.config.buffer_capacity
        if n >= cap:
            batch, n = batch[-cap:], cap
        end = self.pos + n
        if end <= cap:
            self.buffer[self.pos:end] = batch
        else:
            first = cap - self.pos
            self.buffer[self.pos:] = batch[:first]
            self.buffer[:n - first] = batch[first:]
        self.pos = end % cap
        self.size = min(self.size + n, cap)

    def minibatch_indices(self) -> np.ndarray:
        """Buffer rows of this round's minibatch, by ``minibatch_rule``."""
        c = self.config
        if _opt(c.minibatch_rule) == "first":
            # the oldest min(N, size) entries, oldest first (a full ring's oldest entry is at ``pos``)
            start = self.pos if self.size == c.buffer_capacity else 0
            return (start + np.arange(min(int(c.minibatch), self.size))) % c.buffer_capacity
        return self.rng.integers(0, self.size, size=c.minibatch)

    def minibatch(self) -> np.ndarray:
        return self.buffer[self.minibatch_indices()]


class ReplayRole(Worker):
    """The replay buffer as its own role (``replay=role``): all of a round's transitions in, a minibatch out."""

    def __init__(self, config: Any, seed: int):
        self.replay = ReplayBuffer(config, seed)

    def step(self, msg: np.ndarray) -> np.ndarray:
        self.replay.store(np.asarray(msg, dtype=np.float32))
        return self.replay.minibatch()


class LearnerServer(Server):
    """Learner (plus the replay buffer unless ``replay=role``): one Adam step a round, broadcasts weights."""

    def __init__(self, config: Any, seed: int):
        self.torch = torch = import_torch()
        c = self.config = config
        self.seed = seed
        self.net = make_qnet(c.hidden, seed)
        self.target = make_qnet(c.hidden, seed)
        self.target.load_state_dict(self.net.state_dict())
        self.opt = torch.optim.Adam(self.net.parameters(), lr=c.lr)
        self.relayed = _opt(c.replay) == "role"
        self.replay = None if self.relayed else ReplayBuffer(c, seed)
        self._pending: list[np.ndarray] | None = None  # this round's transitions, for the relay
        self.rounds = 0
        self._sum = RunningChecksum()
        # time breakdown since the last metrics() call
        self._round_start: float | None = None
        self._training = self._total = 0.0
        self._measured = 0
        self._rollout_s: list[list[float]] = []  # per round, each rollout's seconds (worker_seconds())

    def worker_seconds(self) -> np.ndarray:
        """Each round's rollout seconds, one column per worker, since the previous ``metrics()`` call."""
        return np.asarray(self._rollout_s, dtype=float).reshape(len(self._rollout_s), self.config.num_rollouts)

    def scatter(self) -> Broadcast:
        if self._round_start is None:
            self._round_start = time.perf_counter()
        if _opt(self.config.weights_message) == "state_dict":
            return Broadcast(state_dict_copy(self.net))
        return Broadcast(get_weights(self.net))

    def _learn(self, batch: np.ndarray) -> None:
        torch, c = self.torch, self.config
        b = tensor_of(np.ascontiguousarray(batch, dtype=np.float32))
        obs, act = b[:, 0:OBS_DIM], b[:, OBS_DIM].long()
        rew, nxt, term = b[:, OBS_DIM + 1], b[:, OBS_DIM + 2:2 * OBS_DIM + 2], b[:, 2 * OBS_DIM + 2]
        q = self.net(obs).gather(1, act.unsqueeze(1)).squeeze(1)
        with torch.no_grad():
            target = rew + c.gamma * (1.0 - term) * self.target(nxt).max(dim=1).values
        loss = torch.nn.functional.mse_loss(q, target)
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        self.rounds += 1
        if self.rounds % c.target_sync_every == 0:
            self.target.load_state_dict(self.net.state_dict())

    def gather(self, results: Sequence[tuple[np.ndarray, float]]) -> None:
        if self._pending is not None:
            raise RuntimeError("dqn with replay=role: the backend gathered twice without running the replay "
                               "role (relay_message / relay_result); it does not support relay roles")
        times = []
        received = []
        encoded = []
        for result in results:  # (transitions, seconds, their encoding from the rollout worker)
            transitions = result[0]
            encoded.append(result[2] if len(result) == 3 else digest(transitions))
            received.append(np.asarray(transitions, dtype=np.float32))
            times.append(float(result[1]))
        self._sum.update_digests(encoded)  # the same value as update(transitions) for each, in order
        self._rollout_s.append(times)
        if self.relayed:
            self._pending = received
            return
        for batch in received:
            self.replay.store(batch)
        self._train(self.replay.minibatch())

    def relay_message(self) -> np.ndarray:
        """Every transition of this round, one float32 array, for the replay role."""
        pending, self._pending = self._pending, None
        if pending is None:
            raise RuntimeError("relay_message() before gather()")
        return np.concatenate(pending)

    def relay_result(self, reply: np.ndarray) -> None:
        """The replay role's minibatch: train on it; the round ends."""
        self._train(reply)

    def _train(self, batch: np.ndarray) -> None:
        t0 = time.perf_counter()
        self._learn(batch)
        now = time.perf_counter()
        self._training += now - t0
        self._total += now - (self._round_start if self._round_start is not None else t0)
        self._measured += 1
        self._round_start = now  # a round runs from the end of the previous round to the end of this one

    def checksum(self) -> str:
        h = hashlib.blake2b(digest_size=16)
        h.update(self._sum.hexdigest().encode())
        weights = RunningChecksum()
        weights.update(get_weights(self.net))
        h.update(weights.hexdigest().encode())
        return h.hexdigest()

    def metrics(self) -> dict[str, float]:
        """Seconds summed over the rounds since the previous call (the harness calls it once at the end of
        warm-up and discards the result, so each repetition's numbers cover its own rounds).

        ``rounds_s``: the rounds' wall time (a round runs from the end of the previous one to the end of its
        learner step); ``training_s``: the learner step; ``rollout_total_s``: the sum of all rollout times
        (CPU work); ``breakdown_rounds``: how many rounds the sums cover. Sampling and communication need the
        backend's layout: `harness.phases` adds them from ``worker_seconds()``, which this call clears.
        """
        out = {
            "rollout_total_s": float(np.sum(self._rollout_s)) if self._rollout_s else 0.0,
            "training_s": self._training,
            "rounds_s": self._total,
            "breakdown_rounds": float(self._measured),
        }
        self._training = self._total = 0.0
        self._rollout_s = []
        self._measured = 0
        self._round_start = time.perf_counter()  # the harness's own work between repetitions is not a round
        return out

    def final_metrics(self) -> dict[str, float]:
        """Average return of the greedy policy over ``eval_episodes`` episodes seeded from the run's seed."""
        return {"eval_return": evaluate(self.net, self.config.env_id, self.config.eval_episodes, self.seed)}


def evaluate(net: Any, env_id: str, episodes: int, seed: int) -> float:
    """Mean undiscounted return of the greedy policy; env seeded once so the episodes are fixed.

    Args:
        net: the Q-network.
        env_id: the gymnasium env to play.
        episodes: how many episodes to average.
        seed: the env's seed.
    """
    import gymnasium as gym

    import torch

    env = gym.make(env_id)
    total = 0.0
    try:
        obs, _ = env.reset(seed=10_000 + seed)
        for _ in range(episodes):
            done = False
            while not done:
                with torch.no_grad():
                    action = greedy_action(net, obs_vector(obs))
                obs, reward, terminated, truncated, _ = env.step(action)
                total += float(reward)
                done = terminated or truncated
            obs, _ = env.reset()
    finally:
        env.close()
    return total / max(1, episodes)


class DqnScenario(Scenario):
    name = "dqn"
    unit = "rounds"

    @property
    def num_workers(self) -> int:
        return int(self.config.num_rollouts)

    def make_server(self) -> Server:
        return LearnerServer(self.config, self.seed)

    def has_relay(self) -> bool:
        return _opt(self.config.replay) == "role"

    def make_relay(self) -> Worker:
        return ReplayRole(self.config, self.seed)

    def make_worker(self, index: int) -> Worker:
        c = self.config
        same = str(getattr(c.seeding, "value", c.seeding)) == "same"
        return RolloutWorker(c.env_id, self.seed, 0 if same else index, int(c.steps_per_round), float(c.epsilon),
                             int(c.hidden))

    def units_per_round(self) -> int:
        return 1

    def row_fields(self) -> dict[str, Any]:
        return {"num_envs": self.num_workers, "env_id": self.config.env_id}
