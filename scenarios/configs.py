"""Typed configuration of every scenario (Hydra structured configs; registered by `harness.config`).

Kept free of heavy imports so that validating a config never loads gymnasium, ALE, torch or Ray.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


@dataclass
class ScenarioConfig:
    """Fields every scenario has."""

    name: str = "?"


class Seeding(str, Enum):
    """``distinct``: worker ``i`` seeds its env and RNG from ``(seed, i)``; ``same``: every worker from
    ``(seed, 0)``, as the authors' code seeds every env and RNG with 1 (identical trajectories)."""

    distinct = "distinct"
    same = "same"


class ActionSet(str, Enum):
    """``full``: uniform over the env's action space (the authors' LF programs, their Ray MsPacman);
    ``binary``: uniform over {0, 1} (the authors' Ray Pong and SpaceInvaders)."""

    full = "full"
    binary = "binary"


@dataclass
class GymConfig(ScenarioConfig):
    """The paper's experiment 1: a bank of gymnasium environments stepped once per round."""

    name: str = "gym"
    env_id: str = "CartPole-v1"
    num_envs: int = 15
    seeding: Seeding = Seeding.distinct


@dataclass
class AtariConfig(ScenarioConfig):
    """Experiment 1 on ALE: full RGB frames delivered to the server every round."""

    name: str = "atari"
    env_id: str = "ALE/Pong-v5"
    num_envs: int = 15
    #: the paper's code reset every env after every step (old gym API quirk); on under budget=paper
    reset_every_step: bool = False
    #: which actions the random policy draws from (see `ActionSet`)
    actions: ActionSet = ActionSet.binary
    seeding: Seeding = Seeding.distinct


class MinibatchRule(str, Enum):
    uniform = "uniform"
    first = "first"


class ReplayPlacement(str, Enum):
    """``server``: the replay buffer lives in the learner; ``role``: it is its own relay role (actor /
    reactor), and every round's transitions travel server -> buffer -> minibatch -> server, as theirs."""

    server = "server"
    role = "role"


class WeightsMessage(str, Enum):
    arrays = "arrays"
    state_dict = "state_dict"


@dataclass
class DqnConfig(ScenarioConfig):
    """Synchronized parallel Q-learning on Blackjack-v1 (experiment 2)."""

    name: str = "dqn"
    env_id: str = "Blackjack-v1"
    num_rollouts: int = 16
    steps_per_round: int = 100
    epsilon: float = 0.1
    hidden: int = 32
    buffer_capacity: int = 20_000
    minibatch: int = 500
    lr: float = 0.01
    gamma: float = 0.99
    target_sync_every: int = 10
    #: greedy episodes of the final evaluation (``eval_return`` in the last repetition's row)
    eval_episodes: int = 200
    #: ``uniform``: minibatch drawn with replacement from the buffer; ``first``: its oldest ``minibatch``
    #: entries, as the authors' replay buffer returns ``list(experiences)[:N]``
    minibatch_rule: MinibatchRule = MinibatchRule.uniform
    #: ``arrays``: weights broadcast as a list of numpy arrays; ``state_dict``: the Q-network's full
    #: ``state_dict`` (an ordered dict of torch tensors) every round, as the authors' learner sends
    weights_message: WeightsMessage = WeightsMessage.arrays
    replay: ReplayPlacement = ReplayPlacement.server
    seeding: Seeding = Seeding.distinct


class MarlEnv(str, Enum):
    simple_spread_v3 = "simple_spread_v3"
    synthetic = "synthetic"
    #: the paper's env (ma-gym's TrafficJunction{4,10}-v1), re-implemented in `scenarios.traffic_junction`
    traffic_junction = "traffic_junction"


class PolicyWeights(str, Enum):
    """``seeded``: initial weights from ``(seed, agent)``; ``trained``: the committed weights that
    scripts/train_traffic_junction.py produced (traffic_junction with 4 or 10 agents only)."""

    seeded = "seeded"
    trained = "trained"


@dataclass
class MarlConfig(ScenarioConfig):
    """Multi-agent inference (experiment 3): one torch policy per agent, joint env on the server."""

    name: str = "marl"
    env: MarlEnv = MarlEnv.simple_spread_v3
    num_agents: int = 10
    hidden: int = 64
    #: observation and action sizes for the synthetic env (simple_spread derives its own)
    synthetic_obs_dim: int = 18
    synthetic_num_actions: int = 5
    #: simple_spread episode length (every agent truncates together, then the server resets the env)
    max_cycles: int = 25
    policy: PolicyWeights = PolicyWeights.seeded


class WorkKind(str, Enum):
    busy = "busy"
    sleep = "sleep"


@dataclass
class ActorsConfig(ScenarioConfig):
    """Microbenchmark "number of actors": broadcast an array to N clients, each works, copies and returns it."""

    name: str = "actors"
    num_clients: int = 2
    #: size of the uint8 array broadcast to every client and copied back (0: an empty array)
    payload_bytes: int = 0
    #: each client's work per round: spin on perf_counter (``busy``) or ``sleep`` for ``work_us``
    work: WorkKind = WorkKind.busy
    work_us: float = 0.0


@dataclass
class ObjectSizeConfig(ActorsConfig):
    """Microbenchmark "object size": the actors round with 16 clients and a large payload."""

    name: str = "object_size"
    num_clients: int = 16
    payload_bytes: int = 100_000


class OverheadShape(str, Enum):
    chain = "chain"
    fan = "fan"


@dataclass
class OverheadConfig(ScenarioConfig):
    """The reactor runtime's own overhead: a pass-through chain or a 1-to-N-to-1 fan of trivial reactions."""

    name: str = "overhead"
    shape: OverheadShape = OverheadShape.chain
    size: int = 1000


class FaultKind(str, Enum):
    error = "error"
    exit = "exit"
    hang = "hang"
    close = "close"


@dataclass
class FaultConfig(ScenarioConfig):
    """A scenario that fails on purpose (tests of every backend's error, crash and timeout paths)."""

    name: str = "fault"
    num_workers: int = 2
    #: the round (0-based, warm-up included) at which worker ``fail_worker`` fails
    fail_at_round: int = 3
    fail_worker: int = 1
    #: raise an exception, kill its own process (``os._exit``) or hang forever at ``fail_at_round``; or (``close``)
    #: run every round and raise when the backend closes the role at teardown
    kind: FaultKind = FaultKind.error
