"""Multi-agent inference (the paper's experiment 3): N agents, each its own torch policy, one joint env.

Each round (one env step):
  * scatter: the server broadcasts the joint observation, a float32 array ``(num_agents, obs_dim)``;
  * worker ``i`` (agent ``i``) runs its policy Linear(obs_dim, hidden)-ReLU-Linear(hidden, actions) on row
    ``i`` (weights seeded from ``(seed, i)``, one torch thread) and returns the argmax action;
  * gather: the server steps the joint environment with the joint action and resets it when every agent
    is done or truncated.

Environments: ``traffic_junction`` (the paper's: ma-gym's TrafficJunction rules, fully observable as the
authors' ``-v1``, `scenarios.traffic_junction`; policies end in a softmax as theirs, and ``policy=trained``
loads the weights scripts/train_traffic_junction.py committed), ``simple_spread_v3`` (PettingZoo parallel
API from the ``mpe2`` package, N agents, seeded) or ``synthetic``: fresh standard-normal observations from
the server's seeded RNG, no simulation, which isolates inference plus orchestration. The checksum covers every joint action, observation and reward.
``final_metrics()`` measures, serially and after the run, the server's per-step env time and one agent's
inference time, the two terms that bound any speedup on this workload.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from scenarios.base import Broadcast, Scenario, Server, Worker, WorkFacts
from scenarios.checksum import RunningChecksum
from scenarios.nets import seeded_mlp
from scenarios.threads import import_torch

#: simple_spread's discrete actions: no-op, left, right, down, up
SPREAD_ACTIONS = 5
#: where scripts/train_traffic_junction.py writes the trained policies (one file per agent count)
TRAINED_DIR = Path(__file__).resolve().parent / "data"


def trained_weights_path(num_agents: int) -> Path:
    """Where the committed trained TrafficJunction policies for ``num_agents`` agents are (4 or 10)."""
    return TRAINED_DIR / f"traffic_junction_{num_agents}_agents.npz"




def env_name(config: Any) -> str:
    """The config's ``env`` as a plain string (``synthetic``, ``simple_spread_v3``, ``traffic_junction``)."""
    return str(getattr(config.env, "value", config.env))


def dims(config: Any) -> tuple[int, int]:
    """(obs_dim, num_actions) of one agent, known without building the env.

    simple_spread's observation is own velocity and position (4), landmark offsets (2N), other agents'
    offsets and communication (4(N-1)): 6N values; the server checks this against the real env.
    """
    if env_name(config) == "synthetic":
        return int(config.synthetic_obs_dim), int(config.synthetic_num_actions)
    if env_name(config) == "traffic_junction":
        n = int(config.num_agents)
        return n * 9 * (n + 5), 2  # every agent's 3x3 view of (id, position, route): ma-gym's -v1
    return 6 * int(config.num_agents), SPREAD_ACTIONS


def make_policy(obs_dim: int, hidden: int, num_actions: int, seed: int, index: int) -> Any:
    """Agent ``index``'s policy with initial weights that depend only on ``(seed, index)``.

    Args:
        obs_dim: one agent's observation size.
        hidden: the hidden layer's width.
        num_actions: one agent's actions.
        seed: the scenario's seed.
        index: the agent.
    """
    import_torch()
    return seeded_mlp([obs_dim, hidden, num_actions], [seed, index])


def load_trained(policy: Any, num_agents: int, index: int) -> None:
    """Overwrite ``policy`` with agent ``index``'s committed trained weights (float16 on disk).

    Args:
        policy: the agent's policy, as `make_policy` built it.
        num_agents: the trained set to read (4 or 10 agents).
        index: the agent.

    Raises:
        FileNotFoundError: no trained set for ``num_agents``.
    """
    torch = import_torch()
    path = trained_weights_path(num_agents)
    if not path.exists():
        raise FileNotFoundError(f"no trained TrafficJunction policies for {num_agents} agents at {path}: "
                                f"scenario.policy=trained needs num_agents 4 or 10 (scripts/train_traffic_junction.py)")
    with np.load(path) as data:
        state = {key.split("/", 1)[1]: torch.from_numpy(data[key].astype(np.float32))
                 for key in data.files if key.startswith(f"{index}/")}
    policy.load_state_dict(state)


def agent_policy(config: Any, seed: int, index: int) -> Any:
    """The policy agent ``index`` runs: the authors' Linear-ReLU-Linear(-softmax on TrafficJunction).

    Args:
        config: the scenario's `MarlConfig`.
        seed: the scenario's seed.
        index: the agent.
    """
    torch = import_torch()
    obs_dim, num_actions = dims(config)
    policy = make_policy(obs_dim, int(config.hidden), num_actions, seed, index)
    if str(getattr(config.policy, "value", config.policy)) == "trained":
        load_trained(policy, int(config.num_agents), index)
    if env_name(config) == "traffic_junction":
        policy.append(torch.nn.Softmax(dim=-1))  # argmax is unchanged; the cost is theirs
    return policy


class AgentWorker(Worker):
    """Agent ``index``: reads its row of the joint observation, returns its greedy action."""

    def __init__(self, config: Any, seed: int, index: int):
        self.torch = import_torch()
        self.index = index
        self.policy = agent_policy(config, seed, index)

    def step(self, msg: np.ndarray) -> int:
        torch = self.torch
        row = np.array(msg[self.index], dtype=np.float32)  # own copy: the broadcast may be read-only shared memory
        with torch.no_grad():
            return int(self.policy(torch.from_numpy(row)).argmax().item())


class SpreadEnv:
    """The joint environment behind the server: simple_spread_v3 as arrays in agent order."""

    def __init__(self, config: Any, seed: int):
        from mpe2 import simple_spread_v3

        self.n = int(config.num_agents)
        self.env = simple_spread_v3.parallel_env(N=self.n, max_cycles=int(config.max_cycles),
                                                 continuous_actions=False)
        self.agents = list(self.env.possible_agents)
        obs_dim, num_actions = dims(config)
        space = self.env.observation_space(self.agents[0])
        if space.shape != (obs_dim,) or self.env.action_space(self.agents[0]).n != num_actions:
            raise RuntimeError(f"simple_spread_v3 spaces {space.shape}/{self.env.action_space(self.agents[0])} "
                               f"differ from the expected ({obs_dim},)/{num_actions}")
        self.obs_dim = obs_dim
        obs, _ = self.env.reset(seed=seed)
        self.joint = self._stack(obs)

    def _stack(self, obs: dict[str, np.ndarray]) -> np.ndarray:
        out = np.zeros((self.n, self.obs_dim), dtype=np.float32)
        for i, agent in enumerate(self.agents):
            if agent in obs:
                out[i] = obs[agent]
        return out

    def step(self, actions: Sequence[int]) -> tuple[np.ndarray, np.ndarray, bool]:
        """Step with the joint action; returns (joint obs after the step, rewards, reset happened)."""
        live = set(self.env.agents)
        obs, rewards, terms, truncs, _ = self.env.step(
            {a: int(act) for a, act in zip(self.agents, actions) if a in live})
        joint = self._stack(obs)
        rew = np.array([float(rewards.get(a, 0.0)) for a in self.agents], dtype=np.float64)
        done = not self.env.agents or all(terms.get(a, True) or truncs.get(a, True) for a in self.agents)
        if done:
            reset_obs, _ = self.env.reset()
            self.joint = self._stack(reset_obs)
        else:
            self.joint = joint
        return joint, rew, done

    def close(self) -> None:
        self.env.close()


class SyntheticEnv:
    """Fixed-shape random observations from a seeded RNG: no simulation at all."""

    def __init__(self, config: Any, seed: int):
        self.n = int(config.num_agents)
        self.obs_dim = dims(config)[0]
        self.rng = np.random.default_rng([seed, 7])
        self.joint = self._draw()

    def _draw(self) -> np.ndarray:
        return self.rng.standard_normal((self.n, self.obs_dim), dtype=np.float32)

    def step(self, actions: Sequence[int]) -> tuple[np.ndarray, np.ndarray, bool]:
        self.joint = self._draw()
        return self.joint, np.zeros(self.n), False

    def close(self) -> None:
        pass


class TrafficEnv(SpreadEnv):
    """The joint environment behind the server: TrafficJunction (fully observable) as arrays in agent order."""

    def __init__(self, config: Any, seed: int):
        from scenarios.traffic_junction import TrafficJunctionEnv

        self.n = int(config.num_agents)
        self.env = TrafficJunctionEnv(self.n)
        self.agents = list(self.env.possible_agents)
        self.obs_dim = dims(config)[0]
        obs, _ = self.env.reset(seed=seed)
        self.joint = self._stack(obs)


def make_joint_env(config: Any, seed: int) -> SpreadEnv | SyntheticEnv:
    """The joint env the server steps for all agents, as the config's ``env`` names it, seeded from ``seed``."""
    name = env_name(config)
    if name == "synthetic":
        return SyntheticEnv(config, seed)
    return TrafficEnv(config, seed) if name == "traffic_junction" else SpreadEnv(config, seed)


class JointEnvServer(Server):
    """Holds the joint env: broadcasts the joint observation, steps with the gathered joint action."""

    def __init__(self, config: Any, seed: int):
        self.config = config
        self.seed = seed
        self.env = make_joint_env(config, seed)
        self._sum = RunningChecksum()

    def scatter(self) -> Broadcast:
        return Broadcast(self.env.joint)

    def gather(self, results: Sequence[int]) -> None:
        actions = np.asarray(results, dtype=np.int64)
        obs, rewards, done = self.env.step(actions)
        # the same bytes as one update per value, in one call (this gather is the round's serial part)
        if done:  # with the first observation of the next episode
            self._sum.update_many((actions, obs, rewards, done, self.env.joint))
        else:
            self._sum.update_many((actions, obs, rewards, done))

    def checksum(self) -> str:
        return self._sum.hexdigest()

    def final_metrics(self) -> dict[str, float]:
        """Serial per-step env time and per-agent inference time (ms), measured here after the run."""
        return measure_step_costs(self.config, self.seed)

    def close(self) -> None:
        self.env.close()


def measure_step_costs(config: Any, seed: int, steps: int = 300, inferences: int = 500) -> dict[str, float]:
    """Mean ms of one joint env step (resets amortized) and of one agent inference, on a fresh env/policy.

    Args:
        config: the scenario's `MarlConfig`.
        seed: the scenario's seed (the env and the policy derive theirs from it).
        steps: joint env steps to time.
        inferences: agent inferences to time.
    """
    env = make_joint_env(config, seed + 1)
    n, (obs_dim, num_actions) = int(config.num_agents), dims(config)
    rng = np.random.default_rng([seed, 11])
    actions = rng.integers(num_actions, size=(steps, n))
    try:
        env.step(actions[0])  # first step outside the timing (lazy initialization)
        t0 = time.perf_counter()
        for t in range(steps):
            env.step(actions[t])
        env_ms = (time.perf_counter() - t0) / steps * 1e3
    finally:
        env.close()
    agent = AgentWorker(config, seed, 0)
    joint = rng.standard_normal((n, obs_dim), dtype=np.float32)
    agent.step(joint)
    t0 = time.perf_counter()
    for _ in range(inferences):
        agent.step(joint)
    inference_ms = (time.perf_counter() - t0) / inferences * 1e3
    return {"env_step_ms": env_ms, "inference_ms": inference_ms}


class MarlScenario(Scenario):
    facts = WorkFacts(inputs_retained=False)  # roles read received arrays within the round only
    name = "marl"
    unit = "env_steps"

    @property
    def num_workers(self) -> int:
        return int(self.config.num_agents)

    def make_server(self) -> Server:
        return JointEnvServer(self.config, self.seed)

    def make_worker(self, index: int) -> Worker:
        return AgentWorker(self.config, self.seed, index)

    def units_per_round(self) -> int:
        return 1

    def row_fields(self) -> dict[str, Any]:
        return {"num_envs": self.num_workers, "env_id": env_name(self.config)}
