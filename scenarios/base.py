"""The backend-neutral shape of every workload: a server role, a bank of worker roles, and rounds.

Every workload of the paper has the same round structure, so every backend orchestrates it the same way:

    each round:  msgs = server.scatter()          # one message per worker (or one `Broadcast`)
                 results[i] = workers[i].step(msgs[i])   # independent: may run in parallel
                 server.gather(results)           # in worker-index order
                 clock.tick()                     # the round is done

A scenario knows no framework. It owns the RL compute (environments, policies, learners) as plain classes
with plain methods, seeded from the config, and a checksum of everything the server received. A backend owns
orchestration only: where roles live (thread, process, actor), how messages move, how rounds synchronize.

The contract a backend keeps (where roles are built, who calls the clock) is in `backends.base`.

An optional third role, the relay, sits between the bank and the next round (DQN's replay buffer, which the
paper's programs run as its own actor / reactor). When ``scenario.has_relay()``, a backend (see `backends.base`) builds
``scenario.make_relay()`` where it runs the relay (its own actor or reactor where it can) and extends the
round after ``server.gather``::

                 reply = relay.step(server.relay_message())   # e.g. all transitions in, a minibatch out
                 server.relay_result(reply)                   # the round ends here (then clock.tick())
"""
from __future__ import annotations

import abc
import hashlib
import struct
import zlib
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from scenarios import _checksum


@dataclass(frozen=True)
class Broadcast:
    """A scatter message that every worker receives unchanged (sent once where the transport allows)."""

    value: Any


class _Role:
    """What every role has: a reusable array to build the array it sends in (`output_array`)."""

    #: where `output_array` takes a new array from, ``(shape, dtype) -> array`` (None: ``np.empty``). The
    #: scenario never sets it; a backend may, on the roles it runs (the reactor backend: the port's buffer)
    output_source: Callable[[tuple[int, ...], np.dtype], np.ndarray] | None = None
    _output: np.ndarray | None = None
    _output_from: Any = None

    def output_array(self, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
        """A writable array to build this role's result in (a worker's ``step`` result, a server's
        `Broadcast` value), then return it. The same array on every call with the same shape and dtype,
        holding what was written last, so a result that changes in part is rewritten in part. Use it only
        where every receiver is done with a result within its round (the scenario's ``inputs_retained`` is
        False). Called every round, so the array of the last call is kept and returned again while shape,
        dtype and `output_source` stay the same."""
        out = self._output
        if out is not None and out.shape == shape and out.dtype == dtype and \
                self._output_from is self.output_source:
            return out
        shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(n) for n in shape)
        dtype = np.dtype(dtype)
        source = self.output_source
        if out is None or out.shape != shape or out.dtype != dtype or self._output_from is not source:
            out = self._output = np.empty(shape, dtype) if source is None else source(shape, dtype)
            self._output_from = source
        return out


class Worker(_Role, abc.ABC):
    """One worker role (an env, a rollout worker, an agent, a client). Built where it runs."""

    @abc.abstractmethod
    def step(self, msg: Any) -> Any:
        """Do this round's work for ``msg`` and return the result the server gathers."""

    def close(self) -> None:
        """Release resources (environments, files). Called once by the backend at teardown."""


class Server(_Role, abc.ABC):
    """The server role: produces each round's messages and consumes the gathered results."""

    #: what the server's gather is: True when ``gather`` may be called several times in a round with
    #: consecutive parts of the results, in worker-index order, to the same effect as one call with all of
    #: them (a streaming checksum); False when it needs a round's results together
    incremental_gather: bool = False

    @abc.abstractmethod
    def scatter(self) -> Broadcast | Sequence[Any]:
        """This round's messages: a `Broadcast` or one message per worker, in worker-index order."""

    @abc.abstractmethod
    def gather(self, results: Sequence[Any]) -> None:
        """Consume this round's results, one per worker, in worker-index order."""

    @abc.abstractmethod
    def checksum(self) -> str:
        """Stable hash of everything received so far; equal across backends for equal config and seed."""

    def worker_seconds(self) -> np.ndarray | None:
        """Per round since the previous ``metrics()`` call (which clears it), the seconds each worker's result
        says its own work took: an array (rounds x workers), or None when results carry no such time. The
        harness adds the backend's layout (`backends.base.Backend.process_of_worker`) to split the round's
        wall time by critical path (`harness.phases`): where roles run is the backend's fact, not the
        scenario's. Optional."""
        return None

    def metrics(self) -> dict[str, float]:
        """Extra per-repetition numbers for the results row (for example a time breakdown). Optional."""
        return {}

    def final_metrics(self) -> dict[str, float]:
        """Numbers computed once after the last round, outside timing (for example an evaluation return)."""
        return {}

    def relay_message(self) -> Any:
        """After ``gather``: what the scenario's relay role receives this round (only with a relay)."""
        raise NotImplementedError(f"{type(self).__name__} has no relay role")

    def relay_result(self, reply: Any) -> None:
        """The relay role's reply to this round's ``relay_message()``; the round ends after this call."""
        raise NotImplementedError(f"{type(self).__name__} has no relay role")

    def close(self) -> None:
        """Release resources held by the server."""


class Scenario(abc.ABC):
    """A workload: its roles, its unit of work and the knobs that define it.

    Instances are small, picklable descriptions (configuration plus seed); heavy state is created by
    `make_server` and `make_worker` in the process that runs the role.
    """

    #: short name used in configs and results rows (``gym``, ``atari``, ...)
    name: str = ""
    #: the unit of work counted per round (``env_steps``, ``rounds``, ``inferences``)
    unit: str = "env_steps"
    #: ``star``: the server scatters to every worker and gathers from all (every workload of the paper);
    #: ``chain``: the server's single message passes through worker 0, 1, ..., n-1 and back to the server
    topology: str = "star"
    #: whether a role keeps its inputs: True when a role keeps references to received arrays past the round
    #: (a replay buffer does); False when every role is done with what it received within the round
    inputs_retained: bool = True
    #: True when building or stepping a role acts outside the role (fault injection crashes or exits the
    #: process that runs it); False when a role can be built, stepped and dropped with no effect elsewhere
    side_effects: bool = False

    def __init__(self, config: Any, seed: int):
        self.config = config
        self.seed = int(seed)

    @property
    @abc.abstractmethod
    def num_workers(self) -> int:
        """Number of worker roles (the bank width), independent of how many processes run them."""

    @abc.abstractmethod
    def make_server(self) -> Server:
        """Build the server role (in the process that drives the rounds)."""

    @abc.abstractmethod
    def make_worker(self, index: int) -> Worker:
        """Build worker ``index`` (in the process, thread or actor that will run it)."""

    @abc.abstractmethod
    def units_per_round(self) -> int:
        """Units of work done by one round (e.g. ``num_envs`` env steps)."""

    def row_fields(self) -> dict[str, Any]:
        """`num_envs` and `env_id` for the results row; scenarios override when the names differ."""
        return {"num_envs": self.num_workers, "env_id": getattr(self.config, "env_id", "-")}

    def round_work_seconds(self) -> float | None:
        """Known fixed work per round, if any (microbenchmarks), so overhead = round time - work."""
        return None

    def has_relay(self) -> bool:
        """True when rounds pass through a relay role after ``gather`` (see the module docstring)."""
        return False

    def make_relay(self) -> Worker:
        """Build the relay role (in the process, thread or actor that will run it)."""
        raise NotImplementedError(f"scenario {self.name!r} has no relay role")


def finish_round(server: Server, relay: Worker | None) -> None:
    """The relay part of a round where the relay runs in the calling process (serial, inline backends)."""
    if relay is not None:
        server.relay_result(relay.step(server.relay_message()))


def load_target(registry: dict[str, str], name: str, kind: str) -> Any:
    """The class that ``registry[name]`` ("module:Class") names, imported on first use."""
    import importlib

    try:
        module, cls = registry[name].split(":")
    except KeyError:
        raise ValueError(f"unknown {kind} {name!r}; known: {sorted(registry)}") from None
    return getattr(importlib.import_module(module), cls)


class RunningChecksum:
    """Incremental, order-sensitive hash of values (arrays, numbers, tuples) received by a server.

    Arrays are folded through CRC-32 of their bytes (about 30 us per Atari frame) plus dtype and shape, and
    every piece feeds a BLAKE2b state, so the digest is cheap per round yet covers every byte.

    The digest is BLAKE2b (16-byte digest) of the concatenated encodings of every value in order; the
    encoding of one value (the definition of every checksum in the results, so it never changes):

    ===================================  ====================================================================
    value                                bytes
    ===================================  ====================================================================
    ``np.ndarray``                       ``f"{dtype.str}{shape}"`` (e.g. ``|u1(210, 160, 3)``), then the
                                         CRC-32 of its C-order bytes as ``<I`` (of ``b""`` when empty); a
                                         0-d array counts as shape ``(1,)``
    ``bool``, ``np.bool_``               ``?1`` or ``?0``
    ``int``, ``np.integer``              ``i`` + 16 bytes little-endian two's complement
    ``float``, ``np.floating``           ``f`` + the float64 as ``<d``
    ``tuple``, ``list``                  ``(`` + the length in decimal, then each item
    ``dict``                             ``{`` + the length in decimal, then for each key in sorted order
                                         ``str(key)`` then its value
    ``str`` (UTF-8), ``bytes``           ``s`` + the byte length in decimal + ``:`` + the bytes
    ``None``                             ``N``
    ===================================  ====================================================================

    Why the encoder looks the way it does: the server's checksum runs on the critical path of every round in
    the process that also gathers, and a generic ``isinstance`` chain per value cost more than a CartPole
    step. ``update`` therefore encodes values with the compiled encoder (`scenarios._checksum`: exact-type
    checks, C packing, one buffer; 0.4 us instead of 2.4 us to encode a CartPole result), which hands
    subclasses (numpy scalars, ``np.bool_``), dicts and rare types to the Python encoder below (`_encode`:
    one dictionary lookup per exact type, then ordered ``isinstance`` checks), and feeds BLAKE2b once per
    call (a stream: the digest does not depend on how the bytes are split).
    ``tests/scenarios/test_checksum_encoder.py`` checks both encoders against hashlib over the layout above,
    written out byte by byte.
    """

    def __init__(self) -> None:
        self._h = hashlib.blake2b(digest_size=16)

    def update(self, value: Any) -> None:
        self._h.update(_checksum.encode(value))

    def update_many(self, values: Sequence[Any]) -> None:
        """``update`` each of ``values`` in order (one BLAKE2b call for all of them)."""
        self._h.update(_checksum.encode_many(values))

    def hexdigest(self) -> str:
        return self._h.hexdigest()


_crc32 = zlib.crc32
_pack_d = struct.Struct("<d").pack
_pack_I = struct.Struct("<I").pack
_ARRAY_HEADERS: dict[tuple, bytes] = {}


def _enc_array(value: np.ndarray, out: list) -> None:
    arr = value if value.flags.c_contiguous and value.ndim else np.ascontiguousarray(value)
    key = (arr.dtype, arr.shape)
    head = _ARRAY_HEADERS.get(key)
    if head is None:
        if len(_ARRAY_HEADERS) > 4096:
            _ARRAY_HEADERS.clear()
        head = _ARRAY_HEADERS[key] = f"{arr.dtype.str}{arr.shape}".encode()
    out.append(head)
    out.append(_pack_I(_crc32(arr.data if arr.size else b"")))


def _enc_bool(value: bool, out: list) -> None:
    out.append(b"?1" if value else b"?0")


def _enc_int(value: int, out: list) -> None:
    out.append(b"i" + int(value).to_bytes(16, "little", signed=True))


def _enc_float(value: float, out: list) -> None:
    out.append(b"f" + _pack_d(value))


def _enc_seq(value: tuple | list, out: list) -> None:
    out.append(b"(%d" % len(value))
    get = _ENCODERS.get
    for item in value:
        f = get(type(item))
        if f is None:
            _encode(item, out)
        else:
            f(item, out)


def _enc_none(value: None, out: list) -> None:
    out.append(b"N")


def _enc_str(value: str, out: list) -> None:
    data = value.encode()
    out.append(b"s%d:" % len(data) + data)


def _enc_bytes(value: bytes, out: list) -> None:
    out.append(b"s%d:" % len(value) + value)


def _enc_dict(value: dict, out: list) -> None:
    out.append(b"{%d" % len(value))
    for key in sorted(value):
        _encode(str(key), out)
        _encode(value[key], out)


_ENCODERS = {np.ndarray: _enc_array, bool: _enc_bool, int: _enc_int, float: _enc_float, tuple: _enc_seq,
             list: _enc_seq, type(None): _enc_none, str: _enc_str, bytes: _enc_bytes, dict: _enc_dict}


def _encode(value: Any, out: list) -> None:
    """Append the checksum's byte pieces for ``value`` (the layout in `RunningChecksum`'s docstring)."""
    f = _ENCODERS.get(type(value))
    if f is not None:
        f(value, out)
    elif isinstance(value, np.ndarray):
        _enc_array(value, out)
    elif isinstance(value, (bool, np.bool_)):
        _enc_bool(value, out)
    elif isinstance(value, (int, np.integer)):
        _enc_int(value, out)
    elif isinstance(value, (float, np.floating)):
        out.append(b"f" + _pack_d(float(value)))
    elif isinstance(value, (tuple, list)):
        _enc_seq(value, out)
    elif isinstance(value, dict):
        _enc_dict(value, out)
    elif isinstance(value, str):
        _enc_str(value, out)
    elif isinstance(value, bytes):
        _enc_bytes(value, out)
    else:
        raise TypeError(f"cannot checksum a {type(value).__name__}")


def encode_python(values: Sequence[Any]) -> bytes:
    """The checksum bytes of ``values`` by the Python encoder alone (the reference the tests hold the compiled
    encoder to)."""
    out: list[bytes] = []
    for v in values:
        _encode(v, out)
    return b"".join(out)


_checksum.set_fallback(_encode)

