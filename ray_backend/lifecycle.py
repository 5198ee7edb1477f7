"""Ray's lifecycle for one job: start (or join) an instance, size actors to fit, and leave nothing behind.

A job either starts its own local instance (the default: ``num_cpus=workers``, no dashboard, no usage
stats, worker logs not forwarded to the driver) and owns it, or joins an existing cluster by address and
must leave that cluster running. Ownership decides what ``shutdown`` may do.
"""
from __future__ import annotations

import logging
import math
import os
import socket
import sys
import time
from pathlib import Path
from typing import Any, Optional

import psutil

#: thread-count variables every actor process inherits from the measuring process
THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
#: a process whose name or command line contains one of these is a Ray process (daemons, their Python
#: agents such as dashboard/agent.py and log_monitor.py, and workers, whose title is ``ray::...``)
RAY_PROCESS_MARKERS = ("raylet", "gcs_server", "ray::", "/site-packages/ray/")
#: seconds to wait for a TCP connection to a cluster's GCS before giving up on joining it
JOIN_CONNECT_TIMEOUT_S = 10.0
#: the logger of Ray's notice that a new local instance enables token authentication by default (Ray 2.5x: "Token
#: authentication is enabled for this Ray cluster. Set RAY_AUTH_MODE=disabled to opt out."), printed by every job that
#: starts its own instance; held to errors while one starts (authentication stays as Ray sets it)
AUTH_NOTICE_LOGGER = "ray._private.authentication.authentication_token_setup"
#: Ray's settings (``RAY_<name>`` in the environment of every Ray process) for an instance that a paired job parks
#: between its blocks (every process stopped, then continued: `harness.resident.Resident.park`): a stopped raylet or
#: GCS answers no health check and no RPC, so the checks and reconnection waits are raised far beyond a job's
#: pauses (defaults: a health check every 3 s, 10 s timeout, dead after 5 failures; 60 s to reconnect to the GCS)
PARKED_SETTINGS = {
    "RAY_health_check_initial_delay_ms": "60000",
    "RAY_health_check_period_ms": "600000",
    "RAY_health_check_timeout_ms": "600000",
    "RAY_health_check_failure_threshold": "100",
    "RAY_gcs_rpc_server_reconnect_timeout_s": "3600",
}
#: Ray accepts fractional resources in steps of 1e-4
_RESOURCE_STEP = 10_000
_REPO_ROOT = str(Path(__file__).resolve().parents[1])


class RayStartError(RuntimeError):
    """Ray could not be started or joined (the message carries Ray's own)."""


def actor_num_cpus(num_actors: int, cpus: float) -> float:
    """CPUs each actor reserves so that all ``num_actors`` fit on ``cpus`` CPUs at once.

    One CPU per actor while they fit (Ray's default for a busy actor); otherwise an equal fraction,
    rounded down to Ray's resource step, so 15 actors on 2 CPUs reserve 0.1333 CPU each and are all
    scheduled. Actors are CPU-bound in turn within a round, so oversubscription is what the OS scheduler
    resolves, as it does for every other backend with more roles than cores.
    """
    if num_actors < 1 or cpus <= 0:
        raise ValueError("need at least one actor and a positive CPU count")
    share = min(1.0, cpus / num_actors)
    return math.floor(share * _RESOURCE_STEP) / _RESOURCE_STEP


def thread_env() -> dict[str, str]:
    """The thread pinning of this process (set by the harness), to reproduce in every actor process."""
    threads = os.environ.get("OMP_NUM_THREADS", "1")
    return {var: os.environ.get(var, threads) for var in THREAD_VARS}


def ray_processes(session_id: Optional[int] = None) -> list[psutil.Process]:
    """Ray processes that are ours: descendants of this process, plus members of session ``session_id``.

    Raylet, GCS and their agents are started by the driver and workers by the raylet, so a local
    instance lives under the measuring process while it runs. A worker orphaned by a dying raylet is
    re-parented away but stays in the driver's session, hence the optional session filter (the harness
    runs every measurement in a session of its own).
    """
    me = psutil.Process()
    try:
        candidates = me.children(recursive=True)
    except psutil.Error:
        candidates = []
    if session_id is not None:
        for proc in psutil.process_iter():
            try:
                if proc.pid != me.pid and os.getsid(proc.pid) == session_id:
                    candidates.append(proc)
            except (OSError, psutil.Error):
                continue
    found: dict[int, psutil.Process] = {}
    for proc in candidates:
        try:
            text = proc.name() + " " + " ".join(proc.cmdline())
        except psutil.Error:
            continue
        if any(marker in text for marker in RAY_PROCESS_MARKERS):
            found[proc.pid] = proc
    return list(found.values())


def check_reachable(address: str, timeout_s: float = JOIN_CONNECT_TIMEOUT_S) -> None:
    """Fail fast when ``host:port`` accepts no TCP connection (``auto`` is resolved by Ray itself)."""
    if address == "auto" or address.startswith(("ray://", "local")) or ":" not in address:
        return
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout_s):
            pass
    except (OSError, ValueError) as exc:
        raise ConnectionError(f"no Ray GCS answers at {address}: {exc}") from exc


class RayInstance:
    """A connection to Ray for one job; owns the instance only when it started it."""

    def __init__(self, address: Optional[str], num_cpus: int, object_store_memory: Optional[int] = None):
        self.address = address
        #: a paired job will stop this instance's processes between blocks: start it with `PARKED_SETTINGS`
        self.parked = False
        self.num_cpus = int(num_cpus)
        self.object_store_memory = object_store_memory
        self.owned = False
        self.connected = False
        self.init_seconds = 0.0

    def start(self) -> None:
        """Start a local instance (``address`` None) or join the cluster at ``address``."""
        import ray

        os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
        env_vars = {**thread_env(), "RAY_USAGE_STATS_ENABLED": "0"}
        if self.parked:
            if self.address is not None:
                raise RayStartError("a paired job parks its Ray instance between blocks (stops its processes): it "
                                    "must start its own, not join the cluster at " + repr(self.address))
            for name, value in PARKED_SETTINGS.items():  # read by the GCS, the raylet and every worker at start
                os.environ.setdefault(name, value)
                env_vars.setdefault(name, os.environ[name])
        # actors import ray_backend and scenarios by name: make the checkout importable in every worker
        pythonpath = os.pathsep.join(p for p in (_REPO_ROOT, os.environ.get("PYTHONPATH", "")) if p)
        env_vars["PYTHONPATH"] = pythonpath
        kwargs: dict[str, Any] = dict(
            include_dashboard=False,
            log_to_driver=False,
            logging_level=logging.WARNING,
            runtime_env={"env_vars": env_vars},
        )
        if ray.is_initialized():
            raise RayStartError("Ray is already initialized in this process; a job needs its own instance")
        t0 = time.perf_counter()
        try:
            if self.address is None:
                self.owned = True  # from here on, whatever was started is ours to stop
                if self.object_store_memory is not None:
                    kwargs["object_store_memory"] = int(self.object_store_memory)
                notice = logging.getLogger(AUTH_NOTICE_LOGGER)
                level = notice.level
                notice.setLevel(logging.ERROR)
                try:
                    ray.init(num_cpus=self.num_cpus, **kwargs)
                finally:
                    notice.setLevel(level)
            else:
                check_reachable(self.address)
                # Ray retries an unreachable GCS for minutes; a job should fail in seconds instead
                os.environ.setdefault("RAY_gcs_server_port_wait_time_s", str(int(JOIN_CONNECT_TIMEOUT_S)))
                ray.init(address=self.address, **kwargs)
        except Exception as exc:  # noqa: BLE001 - any start-up failure ends the job with Ray's message
            self.shutdown()
            what = "start a local Ray instance" if self.address is None else f"join the Ray cluster at {self.address!r}"
            root = exc
            while root.__cause__ is not None:  # Ray wraps the reason (say, an auth error) in a ConnectionError
                root = root.__cause__
            reason = f"{type(exc).__name__}: {exc}"
            if root is not exc:
                reason += f" (caused by {type(root).__name__}: {root})"
            raise RayStartError(f"could not {what}: {reason}") from exc
        self.connected = True
        self.init_seconds = time.perf_counter() - t0

    def cluster_cpus(self) -> float:
        """CPUs available to this job's actors: ``num_cpus`` locally, the cluster's total when joined."""
        if self.owned:
            return float(self.num_cpus)
        import ray

        return float(ray.cluster_resources().get("CPU", self.num_cpus))

    def shutdown(self, grace_s: float = 10.0) -> None:
        """Disconnect; when the instance is ours, stop it and make sure none of its processes remain.

        ``ray.shutdown()`` stops the raylet and GCS it started; worker processes exit when their raylet
        goes. Any Ray process of ours still alive after ``grace_s`` is killed, so a job never leaks one.
        A joined cluster is only disconnected from (our actors are not detached, so they end with us).
        """
        import ray

        # in the harness this process leads its own session: then orphaned workers are found too
        session = os.getsid(0) if os.getsid(0) == os.getpid() else None
        ours = ray_processes(session) if self.owned else []
        if ray.is_initialized():
            try:
                ray.shutdown()
            finally:
                self.connected = False
        if not self.owned:
            return
        ours = {p.pid: p for p in ours + ray_processes(session)}.values()
        _, alive = psutil.wait_procs(list(ours), timeout=grace_s)
        for proc in alive:
            try:
                proc.kill()
            except psutil.Error:
                pass
        psutil.wait_procs(alive, timeout=5)
        if alive:
            print(f"ray_backend: killed {len(alive)} Ray process(es) left after ray.shutdown()", file=sys.stderr)
