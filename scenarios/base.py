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
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np


@dataclass(frozen=True)
class Broadcast:
    """A scatter message that every worker receives unchanged (sent once where the transport allows)."""

    value: Any


@dataclass(frozen=True)
class WorkFacts:
    """What a scenario's work allows, declared once per scenario (`Scenario.facts`) for any backend to read.

    Each field is a fact about the roles and the round, never an instruction: a backend decides from them what
    it may do (docs/design.md, "Backend contract"). The defaults are the safe assumptions, so a scenario that
    declares nothing is run the most careful way.

    Attributes:
        incremental_gather: True when the server's ``gather`` may be called several times in a round with
            consecutive parts of the results, in worker-index order, to the same effect as one call with all of
            them (a streaming checksum), so results can be gathered as they arrive; False when it needs a
            round's results together.
        inputs_retained: True when a role keeps references to arrays it received past the round (a replay
            buffer does), so what it receives must stay valid after the round; False when every role is done
            with what it received within the round.
        side_effects: True when building or stepping a role acts outside the role (fault injection crashes or
            exits the process that runs it), so a role cannot be built and stepped just to measure it; False
            when a role can be built, stepped and dropped with no effect elsewhere.
    """

    incremental_gather: bool = False
    inputs_retained: bool = True
    side_effects: bool = False


class _Role:
    """What every role has: a reusable array to build the array it sends in (`result_buffer`)."""

    #: where `result_buffer` takes a new array from, ``(shape, dtype) -> writable array``; None: ``np.empty``.
    #: The scenario never sets it; a backend that owns the memory its values travel in may point it there
    #: for the roles it runs, and sets it back to None when it is done with them
    buffer_source: Callable[[tuple[int, ...], np.dtype], np.ndarray] | None = None
    _buffer: np.ndarray | None = None
    _buffer_from: Any = None

    def result_buffer(self, shape: int | tuple[int, ...], dtype: Any) -> np.ndarray:
        """A writable array to build this role's result in (a worker's ``step`` result, a server's
        `Broadcast` value), then return it.

        The same array on every call with the same shape and dtype (and `buffer_source`), holding what was
        written last, so a result that changes in part is rewritten in part. Use it only where every receiver
        is done with a result within its round (``facts.inputs_retained`` is False).

        Args:
            shape: the array's shape (an int for one dimension).
            dtype: anything ``np.dtype`` accepts.
        """
        out = self._buffer
        if out is not None and out.shape == shape and out.dtype == dtype and \
                self._buffer_from is self.buffer_source:
            return out
        shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(n) for n in shape)
        dtype = np.dtype(dtype)
        source = self.buffer_source
        if out is None or out.shape != shape or out.dtype != dtype or self._buffer_from is not source:
            out = self._buffer = np.empty(shape, dtype) if source is None else source(shape, dtype)
            self._buffer_from = source
        return out


class Worker(_Role, abc.ABC):
    """One worker role (an env, a rollout worker, an agent, a client). Built where it runs."""

    @abc.abstractmethod
    def step(self, msg: Any) -> Any:
        """Do this round's work for ``msg`` and return the result the server gathers.

        Args:
            msg: this worker's message of the round (the `Broadcast`'s value, or its own message).
        """

    def close(self) -> None:
        """Release resources (environments, files). Called once by the backend at teardown."""


class Server(_Role, abc.ABC):
    """The server role: produces each round's messages and consumes the gathered results."""

    @abc.abstractmethod
    def scatter(self) -> Broadcast | Sequence[Any]:
        """This round's messages: a `Broadcast` or one message per worker, in worker-index order."""

    @abc.abstractmethod
    def gather(self, results: Sequence[Any]) -> None:
        """Consume this round's results, one per worker, in worker-index order.

        Args:
            results: the workers' results (with ``facts.incremental_gather``, possibly a consecutive part
                of them, the rest following in later calls of the same round).
        """

    @abc.abstractmethod
    def checksum(self) -> str:
        """Stable hash of everything received so far; equal across backends for equal config and seed."""

    def worker_seconds(self) -> np.ndarray | None:
        """Per round since the previous ``metrics()`` call (which clears it), the seconds each worker's result
        says its own work took: an array (rounds x workers), or None when results carry no such time. The
        harness adds where the backend ran each worker (the backend's contract) to split the round's
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
    #: what the work allows a backend (`WorkFacts`: streaming gather, retained inputs, side effects)
    facts: WorkFacts = WorkFacts()

    def __init__(self, config: Any, seed: int):
        """Args:
            config: the scenario's config dataclass (`scenarios.configs`).
            seed: the seed every role derives its randomness from.
        """
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
        """Build worker ``index`` (in the process, thread or actor that will run it).

        Args:
            index: the worker's position in the bank, ``0 <= index < num_workers``.
        """

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
    """The relay part of a round where the relay runs in the calling process (serial, inline backends).

    Args:
        server: the round's server, after its ``gather``.
        relay: the relay role, or None for a scenario without one (nothing to do).
    """
    if relay is not None:
        server.relay_result(relay.step(server.relay_message()))


def load_target(registry: dict[str, str], name: str, kind: str) -> Any:
    """The class that ``registry[name]`` ("module:Class") names, imported on first use.

    Args:
        registry: name -> ``"module:Class"``.
        name: the entry to load.
        kind: what the entries are (``"scenario"``), for the error message.

    Raises:
        ValueError: ``name`` is not in ``registry`` (the message lists the known names).
    """
    import importlib

    try:
        module, cls = registry[name].split(":")
    except KeyError:
        raise ValueError(f"unknown {kind} {name!r}; known: {sorted(registry)}") from None
    return getattr(importlib.import_module(module), cls)
