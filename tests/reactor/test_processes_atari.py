"""The issue's end-to-end check: a bank of 4 reactors stepping ``ALE/Pong-v5`` on 2 worker processes
produces exactly the observations of the inline executor (same checksum)."""
from __future__ import annotations

import glob
import hashlib
import os

import ale_py  # required dependencies (pyproject.toml): a broken install must fail here, not skip
import gymnasium as gym
import numpy as np
import psutil

from reactor_backend import Input, LogicalAction, Output, Reactor, reaction, run, startup

gym.register_envs(ale_py)

STEPS = 25


class PongEnv(Reactor):
    """One environment; built in its startup reaction, i.e. in the worker process that owns it."""

    action = Input()
    obs = Output()

    def __init__(self):
        super().__init__()
        self.env = None
        self.pid = None

    @reaction(startup)
    def build(self):
        self.env = gym.make("ALE/Pong-v5")
        self.first, _ = self.env.reset(seed=100 + self.bank_index)
        self.pid = os.getpid()

    @reaction(action, effects=[obs])
    def step(self):
        if self.action.value is None:  # the first round sends the reset observation
            self.obs.set((self.first, 0.0, os.getpid()))
            return
        o, r, term, trunc, _ = self.env.step(self.action.value)
        if term or trunc:
            o, _ = self.env.reset(seed=100 + self.bank_index)
        self.obs.set((o, float(r), os.getpid()))


class Driver(Reactor):
    """Sends each env an action, gathers all observations, hashes them, schedules the next step."""

    obs = Input(width=4)
    actions = Output(width=4)
    again = LogicalAction()

    def __init__(self):
        super().__init__()
        self.step_no = 0
        self.digest = hashlib.sha256()
        self.pids = set()
        self.rewards = 0.0

    @reaction(startup, again, effects=[actions])
    def act(self):
        for i, p in enumerate(self.actions):
            p.set(None if self.step_no == 0 else (self.step_no * (i + 1)) % 6)

    @reaction(obs, effects=[again])
    def gather(self):
        for p in self.obs:
            o, r, pid = p.value
            assert o.shape == (210, 160, 3) and o.dtype == np.uint8
            self.digest.update(np.ascontiguousarray(o).tobytes())
            self.rewards += r
            self.pids.add(pid)
        self.step_no += 1
        if self.step_no <= STEPS:
            self.again.schedule(0)


class PongBank(Reactor):
    def __init__(self):
        super().__init__()
        self.driver = Driver()
        self.envs = self.bank(PongEnv, 4)
        self.connect(self.driver.actions, self.envs.action)
        self.connect(self.envs.obs, self.driver.obs)


def test_pong_bank_on_two_workers_matches_inline():
    ref = PongBank()
    run(ref, executor="inline")
    main = PongBank()
    run(main, executor="processes", workers=2)
    assert main.driver.step_no == ref.driver.step_no == STEPS + 1
    assert main.driver.digest.hexdigest() == ref.driver.digest.hexdigest()
    assert main.driver.rewards == ref.driver.rewards
    assert len(main.driver.pids) == 2  # envs 0-1 stepped in the caller, envs 2-3 in the worker
    assert psutil.Process().children(recursive=True) == []
    assert glob.glob(f"/dev/shm/rb-{os.getpid()}-*") == []
