"""The authors' benchmark settings, as data, and the differences of a run's resolved config from them.

One record per scenario of the paper, read from the authors' public benchmark code (GitHub repository
jackyk02/parallel_rl_benchmarks; every setting names the file it comes from). The report compares each
row's resolved config (its scenario parameters, its timed rounds and bank width) against these records,
so a changed option shows up as a listed difference without anyone editing prose. What no option of
ours can change (their 32-core node, their interpreter, the gym API of the time) is declared once here as
a fixed difference, also with its source. docs/scenarios.md explains each setting.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

#: the repository every ``source`` below is a path in
AUTHORS_REPOSITORY = "github.com/jackyk02/parallel_rl_benchmarks"


@dataclass(frozen=True)
class Setting:
    """One setting of the authors' code: the row field it maps to and the values their code uses."""

    #: ``scenario.<option>`` (a scenario parameter of the row) or ``budget.rounds`` (timed rounds per repetition)
    key: str
    #: the authors' value(s); a row matches when its value equals one of them
    values: tuple[Any, ...]
    #: file(s) in the authors' repository the value is read from
    source: str
    note: str = ""


@dataclass(frozen=True)
class Fixed:
    """A difference no option removes (hardware, interpreter, library API), with why and where."""

    what: str
    source: str


@dataclass(frozen=True)
class AuthorsRecord:
    scenario: str
    settings: tuple[Setting, ...]
    fixed: tuple[Fixed, ...] = ()


#: the hardware and runtime of the paper's measurements, different for every scenario here
COMMON_FIXED = (
    Fixed("paper: one 32-core node, Lingua Franca's Python target on a no-GIL CPython fork (reactions as threads of "
          "one process); here: this machine's cores, the reactor runtime's worker processes on stock CPython",
          "paper, evaluation section; */lf_src_file/*.lf (target Python, single-threaded: false)"),
)

_GYM = "3.Gym_Environments"
_ATARI = "4.Atari_Environments"
_DQN = "5.Parallel_Q_learning"
_MARL = "6.Multi_Agent_Inference"
_DQN_PY = f"{_DQN}/sample_*/blackjack_dqn_train_deterministic.py"

AUTHORS: dict[str, AuthorsRecord] = {r.scenario: r for r in (
    AuthorsRecord("gym", (
        Setting("scenario.env_id", ("CartPole-v1", "Blackjack-v1", "Pendulum-v1"),
                f"{_GYM}/cartpole_ray.py, blackjack_ray.py, pendulum_ray.py (gym.make)",
                "their Pendulum-v0 is Pendulum-v1 here (see the fixed differences)"),
        Setting("scenario.num_envs", (15,), f"{_GYM}/*_ray.py NUM_ENVS, lf_src_file/sample_efficiency.lf"),
        Setting("budget.rounds", (10000,), f"{_GYM}/*_ray.py NUM_STEPS"),
        Setting("scenario.seeding", ("same",), f"{_GYM}/*_ray.py: env.seed(SEED), np.random.RandomState(SEED), SEED = 1"),
    ), (
        Fixed("gym 0.2x's 4-tuple step API is gymnasium's 5-tuple: an env resets when terminated or truncated, "
              "which is their `result[2] or result[3]` for these envs (their info dicts are empty)",
              f"{_GYM}/*_ray.py RolloutWorker.step"),
        Fixed("Pendulum-v0 no longer exists: Pendulum-v1 (same dynamics, 200-step limit), actions still uniform in "
              "[-2, 2]", f"{_GYM}/pendulum_ray.py"),
        Fixed("their server prints every observation each round; here it folds them into a checksum",
              f"{_GYM}/*_ray.py main loop"),
    )),
    AuthorsRecord("atari", (
        Setting("scenario.env_id", ("Pong-v4", "MsPacman-v4", "SpaceInvaders-v4"),
                f"{_ATARI}/pong_ray.py, pacman_ray.py, spaceinvader_ray.py (gym.make)"),
        Setting("scenario.num_envs", (15,), f"{_ATARI}/*_ray.py NUM_ENVS"),
        Setting("budget.rounds", (10000,), f"{_ATARI}/*_ray.py and sample_efficiency/*_lf.py NUM_STEPS"),
        Setting("scenario.reset_every_step", (True,),
                f"{_ATARI}/*_ray.py: `if result[2] or result[3]: env.reset()` on the 4-tuple (info never empty)"),
        Setting("scenario.actions", ("full",),
                f"{_ATARI}/sample_efficiency/*_lf.py: rng.choice(env.action_space.n)",
                "their Ray Pong and SpaceInvaders drew from {0, 1} (rng.randint(0, 2)), their Ray MsPacman from "
                "the full space: the LF side's choice is the record"),
        Setting("scenario.seeding", ("same",), f"{_ATARI}/*_ray.py: env.seed(SEED), RandomState(SEED), SEED = 1"),
    ), (
        Fixed("ALE through ale-py's gymnasium registration of the same v4 ids (no sticky actions, frameskip 2-4) "
              "instead of gym[atari]; the reset-every-step quirk is an explicit option, not an API accident",
              f"{_ATARI}/*_ray.py"),
        Fixed("their Ray Pong and SpaceInvaders drew actions from {0, 1} while their LF programs drew from the full "
              "action space: their two sides did not step the same games", f"{_ATARI}/pong_ray.py vs sample_efficiency/pong_lf.py"),
    )),
    AuthorsRecord("dqn", (
        Setting("scenario.env_id", ("Blackjack-v1",), _DQN_PY),
        Setting("scenario.num_rollouts", (16,), f"{_DQN_PY} num_actors"),
        Setting("scenario.steps_per_round", (100,), f"{_DQN_PY}: RolloutActor.rollout range(100)"),
        Setting("scenario.epsilon", (0.1,), f"{_DQN_PY}: rollout(epsilon=0.1)"),
        Setting("scenario.hidden", (32,), f"{_DQN_PY}: QNetwork(3, 32, 2)"),
        Setting("scenario.buffer_capacity", (20000,), f"{_DQN_PY}: deque(maxlen=20000)"),
        Setting("scenario.minibatch", (250, 500, 1000, 2000), f"{_DQN}/sample_250, sample_500, sample_1000, sample_2000"),
        Setting("scenario.minibatch_rule", ("first",), f"{_DQN_PY}: list(self.experiences)[:min(N, len)]"),
        Setting("scenario.lr", (0.01,), f"{_DQN_PY}: optim.Adam(lr=0.01)"),
        Setting("scenario.gamma", (0.99,), f"{_DQN_PY}: update_q_network(gamma=0.99)"),
        Setting("scenario.target_sync_every", (10,), f"{_DQN_PY}: `if round % 10 == 0`"),
        Setting("scenario.weights_message", ("state_dict",), f"{_DQN_PY}: rollout.remote(q_net_state)"),
        Setting("scenario.replay", ("role",), f"{_DQN_PY}: ReplayBufferActor (driver -> buffer -> driver); "
                f"{_DQN}/lf_src_file/DQN_deterministic.lf: ReplayBufferReactor"),
        Setting("scenario.seeding", ("same",), f"{_DQN_PY}: env.seed(1), RandomState(1) in every actor"),
        Setting("budget.rounds", (1000,), f"{_DQN_PY}: `for round in range(1000)`"),
    ), (
        Fixed("experiences travel as one float32 array (rollout -> server: one per rollout; server -> replay "
              "role: one per round; minibatch back: one) instead of lists of (tensor, action, reward, tensor, "
              "done) tuples; their LF program sends rollouts straight to the buffer reactor, ours (as their "
              "Ray program) through the server", f"{_DQN_PY} RolloutActor.rollout, ReplayBufferActor"),
        Fixed("their target network is synced after rounds 0, 10, 20, ... (`round % 10 == 0` after the update); "
              "here after updates 10, 20, ...", f"{_DQN_PY} training loop"),
    )),
    AuthorsRecord("marl", (
        Setting("scenario.env", ("traffic_junction",), f"{_MARL}/marl_*_agents/ray/traffic_infer.py: "
                "gym.make('ma_gym:TrafficJunction{4,10}-v1')"),
        Setting("scenario.num_agents", (4, 10), f"{_MARL}/marl_4_agents, marl_10_agents"),
        Setting("scenario.hidden", (64,), f"{_MARL}/marl_*_agents/ray/traffic_infer.py: nn.Linear(obs_space, 64)"),
        Setting("scenario.policy", ("trained",), f"{_MARL}/marl_*_agents/ray/traffic_infer.py: load_policy "
                "(policy_agent_i.pth written by traffic_train.py)"),
        Setting("budget.rounds", (100000,), f"{_MARL}/marl_*_agents/ray/traffic_infer.py: episode = 100000"),
    ), (
        Fixed("ma-gym cannot be installed beside gymnasium: TrafficJunction is re-implemented here from ma-gym's "
              "documented rules (scenarios/traffic_junction.py), and its policies are trained by this repository's "
              "scripts/train_traffic_junction.py, not by their traffic_train.py", f"{_MARL}/marl_*_agents/ray/traffic_train.py"),
    )),
)}


def _norm(value: Any) -> Any:
    """Comparable form: enum members by value, numbers as floats, everything else as text."""
    value = getattr(value, "value", value)
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        low = value.strip().lower()
        if low in ("true", "false"):
            return low
        try:
            return float(value)
        except ValueError:
            return value
    return str(value)


def row_value(key: str, params: Mapping[str, Any], rounds: Any) -> Any:
    """The value a row's resolved config has for a record key (None when the row does not record it)."""
    group, _, name = key.partition(".")
    if group == "budget" and name == "rounds":
        return None if rounds is None or (isinstance(rounds, float) and math.isnan(rounds)) else rounds
    return params.get(name)


def setting_differs(setting: Setting, value: Any) -> bool:
    return value is None or _norm(value) not in {_norm(v) for v in setting.values}


def _fmt(value: Any) -> str:
    """As a command-line override would spell it (``true``, ``10000``, ``full``)."""
    value = getattr(value, "value", value)
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def differences(scenario: str, configs: Iterable[tuple[Mapping[str, Any], Any]]) -> list[str]:
    """Every setting where some of ``configs`` ((params, timed rounds) per row) differ from the authors,
    then the fixed differences; one line each, with the authors' value and its source file."""
    record = AUTHORS.get(scenario)
    if record is None:
        return []
    configs = list(configs)
    out = []
    for s in record.settings:
        seen = sorted({_fmt(row_value(s.key, p, r)) if row_value(s.key, p, r) is not None else "not recorded"
                       for p, r in configs if setting_differs(s, row_value(s.key, p, r))})
        if seen:
            theirs = " or ".join(_fmt(v) for v in s.values)
            out.append(f"{s.key}={', '.join(seen)} (authors: {theirs}; {s.source})")
    out += [f"{f.what} ({f.source})" for f in (*record.fixed, *COMMON_FIXED)]
    return out
