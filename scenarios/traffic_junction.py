"""TrafficJunction, the paper's multi-agent environment, re-implemented from ma-gym's documented rules.

ma-gym (the authors' ``ma_gym:TrafficJunction4-v1`` / ``TrafficJunction10-v1``) needs the old gym package
and cannot be installed beside gymnasium, so this module writes the same rules anew, with the PettingZoo
parallel API and a seeded numpy RNG instead of Python's global ``random``:

* grid: ``grid_size`` x ``grid_size`` (14), every cell a wall except two road rows (``g//2 - 1``, ``g//2``)
  and two road columns, crossing in a 2x2 junction; cars keep to the right-hand lane.
* gates and routes: four entry gates, one per direction -- (g//2, 0) heading east, (g-1, g//2) heading
  north, (g//2-1, g-1) heading west, (0, g//2-1) heading south -- and each car draws one of three routes
  (1 straight, 2 right turn, 3 left turn), turning at its route's cell of the junction; a car that reaches
  a destination cell on the grid's edge leaves the road and is done.
* arrivals: on reset up to four cars (one per gate, gates shuffled) enter; the rest wait. After every step,
  with probability ``arrive_prob`` (0.5) the first waiting car enters at a random free gate. At most
  ``n`` cars (the agents) ever exist in an episode.
* actions: ``Discrete(2)``: 0 gas (advance one cell along the route), 1 brake (stay).
* collisions: a car whose next cell holds another car collides: reward ``collision_reward`` (-10) and it
  does not move; the simulation is otherwise unaffected. Every car on the road also gets
  ``step_cost * tau`` (-0.01 tau) per step, tau = steps since it entered.
* episode: ``max_steps`` (100) steps, then every agent is truncated.
* observation: per car, a 3x3 view around it; each cell holding a car carries that car's one-hot id (n),
  its normalized position (2) and one-hot route (3): 9 (n + 5) values. ``full_observable`` (ma-gym's
  ``-v1``, the authors' choice) gives every agent all agents' views concatenated: n * 9 (n + 5) values.

Deliberate simplifications of ma-gym's incidental behaviour (documented in docs/scenarios.md): a waiting
car has no position and an all-zero view (ma-gym parks it at cell (0, 0) and writes its id there), and a
car without a route has an all-zero route vector.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo.utils.env import ParallelEnv

GAS, BRAKE = 0, 1
STRAIGHT, RIGHT, LEFT = 1, 2, 3


class TrafficJunctionEnv(ParallelEnv):
    """ma-gym's TrafficJunction rules with the PettingZoo parallel API (agents ``car_0`` ... ``car_{n-1}``)."""

    metadata = {"name": "traffic_junction_v0", "render_modes": []}

    def __init__(self, n_agents: int = 4, grid_size: int = 14, arrive_prob: float = 0.5, max_steps: int = 100,
                 step_cost: float = -0.01, collision_reward: float = -10.0, full_observable: bool = True):
        if not 1 <= n_agents <= 10:
            raise ValueError(f"n_agents must be in [1, 10] (ma-gym's n_max), not {n_agents}")
        if grid_size < 4 or grid_size % 2:
            raise ValueError(f"grid_size must be an even number >= 4, not {grid_size}")
        self.n, self.g = int(n_agents), int(grid_size)
        self.arrive_prob, self.max_steps = float(arrive_prob), int(max_steps)
        self.step_cost, self.collision_reward = float(step_cost), float(collision_reward)
        self.full_observable = bool(full_observable)
        self.possible_agents = [f"car_{i}" for i in range(self.n)]
        self.agents: list[str] = []
        g, h = self.g, self.g // 2
        #: gate -> heading (row delta, col delta)
        self.gates = {(h, 0): (0, 1), (g - 1, h): (-1, 0), (h - 1, g - 1): (0, -1), (0, h - 1): (1, 0)}
        self.destinations = {(h, g - 1), (0, h), (h - 1, 0), (g - 1, h - 1)}
        #: heading -> (cell where a right turn happens, cell where a left turn happens)
        self.turns = {(0, 1): ((h, h - 1), (h, h)), (-1, 0): ((h, h), (h - 1, h)),
                      (1, 0): ((h - 1, h - 1), (h, h - 1)), (0, -1): ((h - 1, h), (h - 1, h - 1))}
        self.road = np.zeros((g, g), dtype=bool)
        self.road[h - 1:h + 1, :] = True
        self.road[:, h - 1:h + 1] = True
        self.features = self.n + 5
        view = 9 * self.features
        self.obs_dim = view * self.n if self.full_observable else view
        self._obs_space = spaces.Box(0.0, 1.0, (self.obs_dim,), dtype=np.float32)
        self._act_space = spaces.Discrete(2)
        self.rng = np.random.default_rng()

    def observation_space(self, agent: str) -> spaces.Box:
        return self._obs_space

    def action_space(self, agent: str) -> spaces.Discrete:
        return self._act_space

    # ---- state ----------------------------------------------------------------------------------------

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        n = self.n
        self.t = 0
        self.pos: list[tuple[int, int] | None] = [None] * n   # None: waiting to enter
        self.heading: list[tuple[int, int]] = [(0, 0)] * n
        self.route = [0] * n                                    # 0: no route yet
        self.turned = [False] * n
        self.entered = [False] * n
        self.done = [False] * n
        self.age = [0] * n
        self.cell: dict[tuple[int, int], int] = {}              # occupied cell -> car
        gates = list(self.gates)
        for car, k in enumerate(self.rng.permutation(len(gates))[:n]):
            self._enter(car, gates[int(k)])
        self.agents = list(self.possible_agents)
        return self._observe(), {a: {} for a in self.agents}

    def _enter(self, car: int, gate: tuple[int, int]) -> None:
        self.pos[car], self.heading[car] = gate, self.gates[gate]
        self.route[car] = int(self.rng.integers(1, 4))
        self.turned[car], self.entered[car] = False, True
        self.cell[gate] = car

    def _next_cell(self, car: int) -> tuple[int, int]:
        """Where gas takes the car: along its heading, turning once at its route's junction cell."""
        (r, c), d, route = self.pos[car], self.heading[car], self.route[car]
        if route != STRAIGHT and not self.turned[car] and (r, c) == self.turns[d][route - RIGHT]:
            # a right turn rotates the heading clockwise, a left turn counter-clockwise
            d = (d[1], -d[0]) if route == RIGHT else (-d[1], d[0])
            self.heading[car], self.turned[car] = d, True
        return r + d[0], c + d[1]

    def step(self, actions: dict[str, int]) -> tuple[dict, dict, dict, dict, dict]:
        self.t += 1
        n = self.n
        rewards = [0.0] * n
        collisions = 0
        for car in range(n):
            if self.done[car] or not self.entered[car]:
                continue
            self.age[car] += 1
            if int(actions.get(self.possible_agents[car], BRAKE)) == GAS:
                nxt = self._next_cell(car)
                if nxt in self.cell:
                    rewards[car] += self.collision_reward
                    collisions += 1
                elif 0 <= nxt[0] < self.g and 0 <= nxt[1] < self.g and self.road[nxt]:
                    del self.cell[self.pos[car]]
                    self.pos[car] = nxt
                    self.cell[nxt] = car
            rewards[car] += self.step_cost * self.age[car]
            if self.pos[car] in self.destinations:
                self.done[car] = True
                del self.cell[self.pos[car]]
        if self.rng.random() < self.arrive_prob:
            free = [gate for gate in self.gates if gate not in self.cell]
            waiting = [car for car in range(n) if not self.entered[car]]
            if waiting and free:
                self._enter(waiting[0], free[int(self.rng.integers(len(free)))])
        truncated = self.t >= self.max_steps
        live = list(self.agents)
        obs = self._observe()
        rew = {a: rewards[i] for i, a in enumerate(self.possible_agents) if a in live}
        terms = {a: self.done[i] for i, a in enumerate(self.possible_agents) if a in live}
        truncs = {a: truncated for a in live}
        infos = {a: {"step_collisions": collisions} for a in live}
        self.agents = [a for a in live if not (terms[a] or truncs[a])]
        return {a: obs[a] for a in live}, rew, terms, truncs, infos

    # ---- observation ----------------------------------------------------------------------------------

    def car_features(self, car: int) -> np.ndarray:
        f = np.zeros(self.features, dtype=np.float32)
        f[car] = 1.0
        r, c = self.pos[car]
        f[self.n:self.n + 2] = (r / (self.g - 1), c / (self.g - 1))
        if self.route[car]:
            f[self.n + 1 + self.route[car]] = 1.0
        return f

    def views(self) -> np.ndarray:
        """Every car's 3x3 view, ``(n, 9 * (n + 5))``: zeros for waiting cars and empty cells."""
        out = np.zeros((self.n, 3, 3, self.features), dtype=np.float32)
        for car in range(self.n):
            if self.pos[car] is None:
                continue
            r0, c0 = self.pos[car]
            for r in range(max(0, r0 - 1), min(r0 + 2, self.g)):
                for c in range(max(0, c0 - 1), min(c0 + 2, self.g)):
                    other = self.cell.get((r, c))
                    if other is not None:
                        out[car, r - r0 + 1, c - c0 + 1] = self.car_features(other)
        return out.reshape(self.n, -1)

    def _observe(self) -> dict[str, np.ndarray]:
        views = self.views()
        if self.full_observable:
            joint = views.reshape(-1)
            return {a: joint.copy() for a in self.possible_agents}
        return {a: views[i] for i, a in enumerate(self.possible_agents)}

    def close(self) -> None:
        pass
