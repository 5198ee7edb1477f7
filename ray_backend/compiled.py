"""The round as a Ray Compiled Graph: Ray's own fast path for a fixed communication pattern.

Two shapes, chosen from what the server scatters:

* broadcast: every actor binds the whole ``InputNode``, so the message is written once into one
  shared-memory channel that all actors read;
* per-worker: actor ``j`` binds ``InputNode[j]`` (its slice of the messages), one channel per actor.

Each actor's list of results goes to a ``MultiOutputNode``; the driver ``execute()``s once per round and
``ray.get``s with a timeout, then copies numpy results out of the channel buffers so the graph never stalls.
"""
from __future__ import annotations

from typing import Any, Sequence

import ray
from ray.dag import InputNode, MultiOutputNode

from ray_backend.actors import WarmUp, owned_copy


class CompiledRoundError(RuntimeError):
    """A compiled round failed: a timeout, a dead actor or a channel error (Ray's message included)."""


class CompiledRounds:
    """A compiled graph over ``actors`` in one of the two shapes; ``round`` runs one execution."""

    def __init__(self, actors: Sequence[Any], broadcast: bool, timeout_s: float):
        self.broadcast = broadcast
        self.timeout_s = float(timeout_s)
        with InputNode() as inp:
            if broadcast:
                outputs = [a.step_all.bind(inp) for a in actors]
            else:
                outputs = [a.step_each.bind(inp[j]) for j, a in enumerate(actors)]
            dag = MultiOutputNode(outputs)
        # one execution in flight at a time (a round waits for its results); submit waits like get does
        self.graph = dag.experimental_compile(_submit_timeout=self.timeout_s, _max_inflight_executions=1)
        self.num_actors = len(actors)
        self.rounds = 0

    def warm_up(self, timeout_s: float) -> None:
        """One execution that steps no role: pays Ray's first-execution set-up before the clock starts."""
        try:
            args = (WarmUp,) if self.broadcast else (WarmUp,) * self.num_actors
            ray.get(self.graph.execute(*args), timeout=timeout_s)
        except ray.exceptions.RayError as exc:
            raise CompiledRoundError(f"compiled graph warm-up failed: {type(exc).__name__}: {exc}") from exc

    def round(self, msgs: Any, index: int) -> list[list[Any]]:
        """Execute round ``index``: ``msgs`` is the broadcast value or one message list per actor."""
        self.rounds += 1
        try:
            ref = self.graph.execute(msgs) if self.broadcast else self.graph.execute(*msgs)
            out = ray.get(ref, timeout=self.timeout_s)
        except ray.exceptions.RayTaskError:
            raise  # the role raised: reported with its own message by the orchestration
        except ray.exceptions.RayCgraphCapacityExceeded as exc:
            raise CompiledRoundError(f"compiled graph round {index} (0-based) could not be submitted: {exc}") from exc
        except ray.exceptions.RayChannelTimeoutError as exc:
            raise CompiledRoundError(
                f"compiled graph round {index} (0-based) timed out after compiled_timeout_s={self.timeout_s:g}: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        except (ray.exceptions.RayChannelError, ray.exceptions.RayActorError) as exc:
            raise CompiledRoundError(
                f"compiled graph round {index} (0-based) failed (an actor died or a channel closed): "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        return owned_copy(out)

    def teardown(self, kill_actors: bool = False) -> None:
        """Stop the actors' execution loops and free the channels.

        Without ``kill_actors`` the actors stay alive (to close their workers, or to join a new graph);
        Ray then waits for each loop to exit, which a hung actor never does, so after a failure the
        orchestration kills the actors first and tears down with ``kill_actors=True``.
        """
        self.graph.teardown(kill_actors=kill_actors)
