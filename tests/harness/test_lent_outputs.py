"""Zero-copy output for roles: ``result_buffer`` keeps one array per shape and dtype, and the reactor
backend lends its transport's buffer there (the role's ``buffer_source``), so the actors round's broadcast
and a remote client's copy are built in shared memory, with the serial checksum."""
from __future__ import annotations

import mmap

import numpy as np
import pytest

from backends.reactor import Executor, ReactorBackend, ReactorConfig
from scenarios import make_scenario
from scenarios.configs import ActorsConfig
from scenarios.micro import CopyClient
from tests.conftest import TickClock, run_rounds


def in_shared_memory(a: np.ndarray) -> bool:
    """Whether ``a``'s memory is a mapping (a slot's segment), following views down to their owner."""
    b = a
    while isinstance(b, np.ndarray) and b.base is not None:
        b = b.base
    if isinstance(b, memoryview):
        b = b.obj
    return isinstance(b, mmap.mmap)


def test_result_buffer_is_kept_per_shape_and_dtype_and_lent_when_a_backend_lends():
    role = CopyClient("spin", 0)
    a = role.result_buffer((3,), np.uint8)
    assert role.result_buffer((3,), np.dtype("uint8")) is a and role.result_buffer(3, "uint8") is a
    assert role.result_buffer((4,), np.uint8).shape == (4,) and role.result_buffer((3,), np.int16) is not a
    asked = []

    def lender(shape, dtype):
        asked.append((shape, dtype))
        return np.zeros(shape, dtype)

    role.buffer_source = lender
    b = role.result_buffer((2, 2), np.float32)
    assert role.result_buffer((2, 2), np.float32) is b and asked == [((2, 2), np.dtype(np.float32))]
    role.buffer_source = None
    assert role.result_buffer((2, 2), np.float32) is not b and len(asked) == 1


def test_copy_client_returns_an_exact_copy_in_its_result_buffer():
    role = CopyClient("spin", 0)
    msg = np.arange(10, dtype=np.uint8)
    out = role.step(msg)
    assert out is role.result_buffer(msg.shape, msg.dtype) and np.array_equal(out, msg)
    assert not np.shares_memory(out, msg)


@pytest.mark.parametrize("executor,shared", [(Executor.processes, True), (Executor.inline, False)])
def test_the_actors_round_sends_from_lent_buffers_with_the_serial_checksum(executor, shared):
    scenario = make_scenario(ActorsConfig(num_clients=2, payload_bytes=50_000), seed=4)
    rounds = 30
    serial, _ = run_rounds(scenario, rounds)
    backend = ReactorBackend(ReactorConfig(executor=executor, breakdown=False), 2)
    server = scenario.make_server()
    backend.start(scenario, server)
    backend.run(rounds, TickClock())
    assert server.round == rounds and server.checksum() == serial.checksum()
    # the broadcast was stamped in place in the slot of the server's port (processes), else in its own array
    assert in_shared_memory(server.payload) is shared
    # the backend takes its lender back after the run: the server's next output array is its own again
    assert not in_shared_memory(server.result_buffer(server.payload.shape, server.payload.dtype))
