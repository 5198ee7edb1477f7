"""The Ray backend: the scenario's roles as Ray actors, driven round by round from the measuring process.

``mode=actors`` is what a Ray user writes: each round the driver scatters, calls every actor with
``.remote(...)`` and ``ray.get``s the list. A broadcast is ``ray.put`` once per round and passed by
reference, unless it is known to be small (``broadcast_inline_max_bytes``, Ray's own inlining limit by
default): then it is passed inline, because a put plus a reference per call costs more than a tiny copy.
``mode=compiled`` runs the same round as a Ray Compiled Graph. In both modes the
server stays in the driver, the actors hold ``envs_per_actor`` consecutive workers each, and results are
gathered in worker-index order, so the checksum equals the serial backend's. ``envs_per_actor=1`` is the
paper's layout (variant ``actors`` / ``compiled``); ``auto`` packs ceil(roles / workers) roles per actor, one
actor per worker, what a Ray user tuning for throughput writes (variant ``actors_packed`` /
``compiled_packed``; any integer above 1 is labelled packed too). Rows record the resolved
``envs_per_actor`` and the number of actors in ``extra``.

Start-up (``ray.init``, actor creation, graph compilation) happens before ``clock.begin()`` and is never
counted in throughput; its parts are kept in ``startup_breakdown``.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Optional

from backends.base import Backend, BackendConfig, Clock, split_messages
from scenarios.threads import observed
from ray_backend.actors import RoleActor, actor_slices, is_packed, known_small, parse_envs_per_actor, resolve_envs_per_actor
from ray_backend.lifecycle import RayInstance, actor_num_cpus
from ray_backend.relay import start_relay
from scenarios.base import Broadcast, Scenario, Server

NAME = "ray"


class RayMode(str, Enum):
    actors = "actors"
    compiled = "compiled"


@dataclass
class RayConfig(BackendConfig):
    """Ray: one actor per role (``actors``) or the same rounds as a Compiled Graph (``compiled``)."""

    name: str = "ray"
    mode: RayMode = RayMode.actors
    #: roles packed into one actor: 1 = the paper's one actor per role; ``auto`` = ceil(roles / workers),
    #: one actor per worker; any integer >= 1 (a string so that ``auto`` fits; checked by
    #: `ray_backend.actors.parse_envs_per_actor` before the job starts)
    envs_per_actor: str = "1"
    #: None starts a local instance for the job; ``auto`` or ``host:port`` joins an existing cluster
    address: Optional[str] = None
    #: seconds a compiled graph waits for a result before it reports a timeout
    compiled_timeout_s: float = field(default=60.0, metadata={"range": {"gt": 0}})
    #: actors mode: a broadcast known to be smaller than this is passed inline in each call (as Ray does
    #: for small arguments); anything else is ``ray.put`` once per round. 0 = always ``ray.put``
    broadcast_inline_max_bytes: int = field(default=102400, metadata={"range": {"ge": 0}})
    #: bytes of shared memory for a local instance's object store; None = Ray's default (30% of RAM). Ray
    #: refuses a local object store under 75 MiB (ray_constants.OBJECT_STORE_MINIMUM_MEMORY_BYTES)
    object_store_memory: Optional[int] = field(default=None, metadata={"range": {"ge": 75 * 1024 * 1024}})


def variant(config: dict[str, Any]) -> str:
    """The results row's variant: the mode, ``_packed`` when roles are packed into fewer actors than roles
    (`ray_backend.actors.is_packed`, which raises ValueError on a bad ``envs_per_actor``).

    Args:
        config: the backend's config as a dict (``mode``, optional ``envs_per_actor``).
    """
    return str(config["mode"]) + ("_packed" if is_packed(config.get("envs_per_actor", "1")) else "")


#: the compiled graph's warm-up execution may import torch in every actor at once: give it room
WARMUP_TIMEOUT_S = 300.0


class RayRoleError(RuntimeError):
    """A worker role raised inside a Ray actor; the message is the role's own exception."""


class RayBackend(Backend):
    """Ray actors (``mode=actors``) or a Ray Compiled Graph (``mode=compiled``) over the scenario's roles."""

    name = "ray"

    #: Ray's daemons (GCS, raylet, agents) and the driver's core worker run timers whatever the workload: a paired
    #: job stops the whole tree between this backend's blocks (`backends.base.Backend.parkable`)
    parkable = True

    def prepare_to_park(self) -> None:
        self.instance.parked = True  # Ray's health checks raised beyond the pauses (`ray_backend.lifecycle`)

    def __init__(self, config: Any, workers: int):
        super().__init__(config, workers)
        self.mode = str(getattr(config.mode, "value", config.mode))
        if self.mode not in ("actors", "compiled"):
            raise ValueError(f"unknown Ray mode {self.mode!r}; use actors or compiled")
        #: the paper's layout (one actor per role) is ``actors``/``compiled``; any packing adds ``_packed``
        self.variant = self.mode + ("_packed" if is_packed(config.envs_per_actor) else "")
        self.envs_per_actor_setting = parse_envs_per_actor(config.envs_per_actor)
        self.envs_per_actor = 0  # resolved in start(), when the number of roles is known
        self.timeout_s = float(config.compiled_timeout_s)
        self.broadcast_inline_max_bytes = int(config.broadcast_inline_max_bytes)
        self.instance = RayInstance(config.address, self.workers, config.object_store_memory)
        self.actors: list[Any] = []
        self.relay: Any = None  # the scenario's relay role as its own actor, if it has one
        self.slices: list[range] = []
        self.graph: Optional[Any] = None  # CompiledRounds, built at the first round
        self.failed = False
        self.actor_info: list[dict[str, Any]] = []  # per actor: pid, workers, thread pinning
        self._bd = [0, 0, 0]  # actors mode: driver role work ns, driver call ns, rounds (see metrics)
        self._bd_prev: tuple = (0, 0, 0, [])

    # ---------------------------------------------------------------- assembly (not timed)
    def start(self, scenario: Scenario, server: Server) -> None:
        import ray

        self.server = server
        self.num_workers = scenario.num_workers
        self.envs_per_actor = resolve_envs_per_actor(self.envs_per_actor_setting, self.num_workers, self.workers)
        self.slices = actor_slices(self.num_workers, self.envs_per_actor)
        self.row_extra.update({"envs_per_actor": self.envs_per_actor, "actors": len(self.slices)})
        self.instance.start()
        self.startup_breakdown["ray_init_s"] = self.instance.init_seconds

        t0 = time.perf_counter()
        cpus = actor_num_cpus(len(self.slices), self.instance.cluster_cpus())
        threads = self.threads_per_worker
        remote_cls = ray.remote(RoleActor).options(num_cpus=cpus, max_restarts=0, max_task_retries=0)
        self.actors = [remote_cls.remote(scenario, list(s), threads) for s in self.slices]
        self.actor_info = self._get(ray, [a.ready.remote() for a in self.actors], "creating the actors")
        self.relay = start_relay(ray, scenario, threads)
        # actor j is one process (numbered j + 1; the driver holding the server is 0)
        self.process_of_worker = [j + 1 for j, s in enumerate(self.slices) for _ in s]
        self.startup_breakdown["actor_creation_s"] = time.perf_counter() - t0

    def torch_threads_observed(self) -> int | list[int] | None:
        """What each actor's torch said once its roles were built (``ready``)."""
        return observed(info["torch_threads"] for info in self.actor_info)

    # ---------------------------------------------------------------- execution
    def run(self, rounds: int, clock: Clock) -> None:
        if rounds < 1:
            return
        try:
            if self.mode == "compiled":
                self._run_compiled(rounds, clock)
            else:
                self._run_actors(rounds, clock)
        except BaseException:
            # an actor may be dead or stuck: stop() must not wait for it. Where the clock ended the rounds (a
            # paired job's resident leaves its rounds so) run returned: the actors are idle, and stop() closes
            # their roles and tears the graph down in order
            self.failed = True
            raise

    def _run_actors(self, rounds: int, clock: Clock) -> None:
        import ray

        server, actors, slices, n = self.server, self.actors, self.slices, self.num_workers
        put, get, inline_max = ray.put, ray.get, self.broadcast_inline_max_bytes
        clock.begin()
        pc = time.perf_counter_ns
        for r in range(rounds):
            t0 = pc()
            msgs = server.scatter()
            t1 = pc()
            if isinstance(msgs, Broadcast):
                value = msgs.value
                # a large broadcast goes into the object store once and every call passes the reference;
                # a small one travels inline in each call, where Ray would put it anyway
                arg = value if known_small(value, inline_max) else put(value)
                refs = [a.step_all.remote(arg) for a in actors]
            else:
                msgs = split_messages(msgs, n)
                refs = [a.step_each.remote(msgs[s.start:s.stop]) for a, s in zip(actors, slices)]
            try:
                chunks = get(refs)
            except Exception as exc:  # noqa: BLE001 - translated to a clear error, Ray's kept as cause
                self.failed = True
                raise self._explain(exc, f"round {r} (0-based)") from exc
            t2 = pc()
            server.gather([res for chunk in chunks for res in chunk])
            self._relay(r)
            t3 = pc()
            self._bd[0] += (t1 - t0) + (t3 - t2)
            self._bd[1] += t2 - t1
            self._bd[2] += 1
            if clock.tick() is False:
                return

    def _relay(self, r: int) -> None:
        """The relay part of round ``r``: driver -> relay actor -> driver (no-op without a relay)."""
        if self.relay is None:
            return
        import ray

        try:
            reply = ray.get(self.relay.step.remote(self.server.relay_message()))
        except Exception as exc:  # noqa: BLE001
            self.failed = True
            raise self._explain(exc, f"round {r} (0-based) of the relay role") from exc
        self.server.relay_result(reply)

    def metrics(self) -> dict[str, float]:
        """Actors mode, per round since the last call: the driver's role work (scatter, gather with
        its checksum), the driver's calls (submitting the steps and waiting for their results:
        transport, scheduling and the actors' work together), and the mean and largest time an
        actor spent inside its roles' ``step`` (``bd_ray_*_us``)."""
        if self.mode != "actors" or not self.actors or self.failed:
            return {}
        import ray

        work, calls, rounds = self._bd
        busy = ray.get([a.busy_ns.remote() for a in self.actors], timeout=60)
        prev = self._bd_prev
        self._bd_prev = (work, calls, rounds, busy)
        n = rounds - prev[2]
        if n <= 0:
            return {}
        steps = [(b - (prev[3][i] if i < len(prev[3]) else 0)) / n / 1e3 for i, b in enumerate(busy)]
        return {"bd_ray_driver_work_us": (work - prev[0]) / n / 1e3, "bd_ray_driver_calls_us": (calls - prev[1]) / n / 1e3,
                "bd_ray_actor_step_mean_us": sum(steps) / len(steps), "bd_ray_actor_step_max_us": max(steps)}

    def _run_compiled(self, rounds: int, clock: Clock) -> None:
        server, slices, n = self.server, self.slices, self.num_workers
        first = server.scatter()  # its shape (broadcast or not) decides the graph's shape
        t0 = time.perf_counter()
        self.graph = self._compile(isinstance(first, Broadcast))
        self.startup_breakdown["compile_s"] = time.perf_counter() - t0
        clock.begin()
        msgs = first
        for r in range(rounds):
            if r:
                msgs = server.scatter()
            graph = self.graph
            if isinstance(msgs, Broadcast) and graph.broadcast:
                arg: Any = msgs.value
            else:
                if graph.broadcast:  # a per-worker round after broadcast rounds: recompile once
                    graph.teardown()
                    self.graph = graph = self._compile(False)
                per = split_messages(msgs, n)
                arg = [per[s.start:s.stop] for s in slices]
            try:
                chunks = graph.round(arg, r)
            except Exception as exc:  # noqa: BLE001
                self.failed = True
                raise self._explain(exc, f"round {r} (0-based) of the compiled graph") from exc
            server.gather([res for chunk in chunks for res in chunk])
            self._relay(r)
            if clock.tick() is False:
                return

    def _compile(self, broadcast: bool) -> Any:
        from ray_backend.compiled import CompiledRounds

        try:
            graph = CompiledRounds(self.actors, broadcast, self.timeout_s)
        except Exception as exc:  # noqa: BLE001
            self.failed = True
            raise self._explain(exc, "compiling the graph") from exc
        self.graph = graph
        try:
            graph.warm_up(max(self.timeout_s, WARMUP_TIMEOUT_S))
        except Exception:
            self.failed = True
            raise
        return graph

    # ---------------------------------------------------------------- teardown
    def stop(self) -> None:
        """Tear the graph down, kill the actors, stop Ray if this job started it (never hangs on a dead actor).

        Raises:
            RayRoleError: a role raised in its ``close`` (after everything is torn down: the job must not end
                "ok" when a role failed at its end, as under every other backend).
        """
        import ray

        close_error: BaseException | None = None
        try:
            if self.failed:  # a hung or dead actor must not make teardown wait: kill first
                self._kill_actors(ray)
            if self.graph is not None:
                try:
                    self.graph.teardown(kill_actors=self.failed)
                except Exception:  # noqa: BLE001 - teardown after a failure may find channels closed
                    pass
                self.graph = None
            if not self.failed and self.actors and ray.is_initialized():
                try:
                    ray.get([a.close.remote() for a in self.actors], timeout=10)
                except ray.exceptions.RayTaskError as exc:  # a role's own exception in close: reported below
                    close_error = self._explain(exc, "close")
                except Exception:  # noqa: BLE001 - a hung or dead actor: it is killed next
                    pass
            self._kill_actors(ray)
        finally:
            if ray.is_initialized() or self.instance.owned:
                self.instance.shutdown()
        if close_error is not None:
            raise close_error

    def _kill_actors(self, ray: Any) -> None:
        if ray.is_initialized():
            for a in [*self.actors, *([self.relay] if self.relay is not None else [])]:
                try:
                    ray.kill(a, no_restart=True)
                except Exception:  # noqa: BLE001 - already dead
                    pass
        self.actors = []
        self.relay = None

    # ---------------------------------------------------------------- errors
    def _get(self, ray: Any, refs: list[Any], what: str) -> list[Any]:
        try:
            return ray.get(refs)
        except Exception as exc:  # noqa: BLE001
            self.failed = True
            raise self._explain(exc, what) from exc

    @staticmethod
    def _explain(exc: BaseException, what: str) -> BaseException:
        """A short error for the results row: the role's own exception, or Ray's message on a crash."""
        import ray

        if isinstance(exc, ray.exceptions.RayTaskError):
            cause = exc.cause if exc.cause is not None else exc
            if isinstance(cause, ray.exceptions.RayActorError):
                return RuntimeError(f"a Ray actor died during {what}: {type(cause).__name__}: {cause}")
            return RayRoleError(f"{type(cause).__name__}: {cause} (raised in a Ray actor during {what})")
        if isinstance(exc, ray.exceptions.RayActorError):
            return RuntimeError(f"a Ray actor died during {what}: {type(exc).__name__}: {exc}")
        return exc if not isinstance(exc, ray.exceptions.RayError) else RuntimeError(
            f"Ray failed during {what}: {type(exc).__name__}: {exc}")


SCHEMA = RayConfig
BACKEND = RayBackend
