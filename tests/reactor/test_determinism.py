"""Determinism: one program with banks, multiports, actions and delays gives the same observable
effects under every executor (compared with ``inline``) and on repeated runs."""
from __future__ import annotations

import hashlib

from reactor_backend import (Input, LogicalAction, Output, Reactor, Timer, msec, reaction, run, shutdown,
                             startup, usec)


def _mix(*xs) -> int:
    h = hashlib.blake2b(repr(xs).encode(), digest_size=8).digest()
    return int.from_bytes(h, "little")


class Env(Reactor):
    """A deterministic 'environment' bank member: state advances with each action received."""

    act = Input()
    obs = Output()
    retry = LogicalAction(min_delay=usec(300))

    def __init__(self, seed):
        super().__init__()
        self.seed = seed
        self.state = None

    @reaction(startup, effects=[obs])
    def reset(self):
        self.state = _mix(self.seed, self.bank_index)   # heavy state is built at startup
        self.obs.set((self.bank_index, self.state % 1000))

    @reaction(act, effects=[obs, retry])
    def step(self):
        self.state = _mix(self.state, self.act.value)
        if self.state % 5 == 0:
            self.retry.schedule(0, self.state)           # sometimes answer late
        else:
            self.obs.set((self.bank_index, self.state % 1000))

    @reaction(retry, effects=[obs])
    def late(self):
        self.obs.set((self.bank_index, -(self.retry.value % 1000)))


class Policy(Reactor):
    obs = Input(width="n")
    act = Output(width="n")

    def __init__(self, n, log):
        super().__init__()
        self.n = n
        self.log = log

    @reaction(obs, effects=[act])
    def decide(self):
        seen = [(i, p.value) for i, p in enumerate(self.obs) if p.is_present]
        self.log.append((self.elapsed, self.microstep, tuple(seen)))
        for i, v in seen:
            self.act[i].set(_mix(v, self.elapsed) % 7)

    @reaction(shutdown)
    def done(self):
        self.log.append(("end", self.elapsed, self.microstep))


class Pulse(Reactor):
    out = Output()
    t = Timer(offset=msec(1), period=msec(1))

    @reaction(t, effects=[out])
    def p(self):
        self.out.set(self.elapsed)


class Watch(Reactor):
    pulse = Input(width="n")

    def __init__(self, n, log):
        super().__init__()
        self.n = n
        self.log = log

    @reaction(pulse)
    def w(self):
        self.log.append(("pulse", self.elapsed, self.microstep, tuple(p.value for p in self.pulse)))


class Rl(Reactor):
    def __init__(self, n=6, seed=7):
        super().__init__()
        self.log = []
        self.envs = self.bank(Env, n, seed=seed)
        self.policy = Policy(n, self.log)
        self.pulse = Pulse()
        self.watch = Watch(n, self.log)
        self.connect(self.envs.obs, self.policy.obs)
        self.connect(self.policy.act, self.envs.act, after=usec(500))
        self.connect([self.pulse.out] * 2, self.watch.pulse, broadcast=True)   # a list of ports


def _observe(executor_name="inline", workers=1, spec=None):
    main = Rl()
    if spec is not None:
        spec.run(main, timeout=msec(6))
    else:
        run(main, timeout=msec(6), executor=executor_name, workers=workers)
    return main.log


def test_same_effects_as_inline(executor):
    ref = _observe()
    assert len(ref) > 20 and ref[-1][0] == "end"
    decided = [entry[2] for entry in ref if entry[0] not in ("end", "pulse")]
    assert any(obs[1] < 0 for seen in decided for _i, obs in seen)  # the late path was exercised
    assert any(entry[0] == "pulse" for entry in ref)
    for _ in range(2):
        assert _observe(spec=executor) == ref


def test_thread_counts_agree():
    ref = _observe()
    for w in (1, 2, 5):
        assert _observe("threads", w) == ref


def test_threads_with_locked_queues_agree():
    """The no-GIL code path (queues under a lock), exercised on this interpreter."""
    ref = _observe()
    main = Rl()
    run(main, timeout=msec(6), executor="threads", workers=3, lock=True)
    assert main.log == ref
