"""ALE environments stepped in several threads at once give serial's observations (``make test-ft`` runs this on
the free-threaded interpreter, where ale-py is built from its sdist by ``make install-ft``; it runs on the
default interpreter too).

Why it can be safe without the GIL: each ``ALEInterface`` owns its emulator, ROM copy, RNG and screen buffers,
and ale-py's module declares ``Py_MOD_GIL_NOT_USED`` (nanobind's ``FREE_THREADED``): importing it leaves the
GIL off, which the tests check.
"""
from __future__ import annotations

import hashlib
import sys
import sysconfig
import threading

import numpy as np
import pytest

ale_py = pytest.importorskip("ale_py", reason="no ale-py in this interpreter (.venv-ft: make install-ft)")
import gymnasium as gym  # noqa: E402

from reactor_backend import run  # noqa: E402

gym.register_envs(ale_py)

FREE_THREADED = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))
ENVS = 6
STEPS = 80


def play(i: int) -> str:
    """Env ``i`` of Pong: built, reset with seed 100 + i and stepped with actions drawn from its own RNG; the
    digest of every observation, reward and end flag."""
    env = gym.make("ALE/Pong-v5")
    try:
        obs, _ = env.reset(seed=100 + i)
        digest = hashlib.sha256(obs.tobytes())
        rng = np.random.default_rng(i)
        for _ in range(STEPS):
            obs, reward, terminated, truncated, _ = env.step(int(rng.integers(6)))
            digest.update(obs.tobytes())
            digest.update(np.array([reward, terminated, truncated], dtype=np.float64).tobytes())
            if terminated or truncated:
                obs, _ = env.reset(seed=100 + i)
        return digest.hexdigest()
    finally:
        env.close()


def play_in_threads() -> list[str]:
    """Every env in a thread of its own, all built and stepped at once."""
    barrier = threading.Barrier(ENVS)
    out: list[str | None] = [None] * ENVS
    errors: list[BaseException] = []

    def one(i: int) -> None:
        try:
            barrier.wait()
            out[i] = play(i)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(ENVS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return out  # type: ignore[return-value]


def test_ale_envs_stepped_in_threads_at_once_match_serial():
    serial = [play(i) for i in range(ENVS)]
    assert len(set(serial)) == ENVS  # different seeds, different games
    for _ in range(3):
        assert play_in_threads() == serial
    if FREE_THREADED:
        assert not sys._is_gil_enabled()  # ale-py and gymnasium left the GIL off


@pytest.mark.skipif(not FREE_THREADED, reason="needs a free-threaded interpreter (make install-ft; make test-ft)")
def test_importing_ale_py_leaves_the_gil_off():
    import ale_py._ale_py  # noqa: F401

    assert not sys._is_gil_enabled()


@pytest.mark.parametrize("workers", [2, 4])
def test_pong_bank_on_the_threads_executor_matches_inline(workers):
    from tests.reactor.test_processes_atari import STEPS as BANK_STEPS, PongBank

    ref = PongBank()
    run(ref, executor="inline")
    main = PongBank()
    run(main, executor="threads", workers=workers)
    assert main.driver.step_no == ref.driver.step_no == BANK_STEPS + 1
    assert main.driver.digest.hexdigest() == ref.driver.digest.hexdigest()
    assert main.driver.rewards == ref.driver.rewards
    if FREE_THREADED:
        assert not sys._is_gil_enabled()
