"""The Ray backend with real Ray: both modes equal serial, packing, teardown, and every failure path.

Ray start-up costs seconds per job on a 2-core machine, so the default set here starts Ray twice (one
in-process run, one failing CLI job; the CLI layouts against serial are checked in tests/test_cross_backend.py's
gym and object_size multiruns); the other failure paths and the cluster join are ``slow``.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import psutil
import pytest

from backends import make_backend
from backends.ray import RayConfig
from backends.serial import SerialConfig
from harness.config import config_object
from ray_backend.actors import (actor_slices, is_packed, known_small, owned_copy, parse_envs_per_actor,
                                resolve_envs_per_actor)
from ray_backend.lifecycle import RayStartError, actor_num_cpus, thread_env
from scenarios import make_scenario
from scenarios.base import Broadcast, Scenario, Server, Worker
from scenarios.checksum import RunningChecksum
from scenarios.configs import DqnConfig, FaultConfig, GymConfig
from tests.conftest import read_rows, run_cli

# Ray started in this test process lives in pytest's session, which `our_ray_processes` reads: under
# `make test`'s two xdist workers these modules share one worker, so no other test's Ray is ever seen
pytestmark = pytest.mark.xdist_group("ray_in_process")

MARKERS = ("raylet", "gcs_server", "ray::", "/site-packages/ray/")


def our_ray_processes() -> list[str]:
    """Ray processes among this test process's descendants or in its session (independent of the backend)."""
    me = psutil.Process()
    sid = os.getsid(0)
    procs = list(me.children(recursive=True))
    for proc in psutil.process_iter():
        try:
            if proc.pid != me.pid and os.getsid(proc.pid) == sid:
                procs.append(proc)
        except (OSError, psutil.Error):
            continue
    found = []
    for proc in procs:
        try:
            text = proc.name() + " " + " ".join(proc.cmdline())
        except psutil.Error:
            continue
        if any(m in text for m in MARKERS):
            found.append(f"{proc.pid} {text[:120]}")
    return found


class CountingClock:
    """The harness's clock contract, recorded: one ``begin`` then one ``tick`` per round."""

    def __init__(self) -> None:
        self.begins = 0
        self.ticks = 0

    def begin(self) -> None:
        self.begins += 1

    def tick(self) -> None:
        assert self.begins == 1, "tick() before begin()"
        self.ticks += 1


def run_in_process(backend_cfg: Any, scenario_cfg: Any, rounds: int, threads: int = 1) -> tuple[str, Any]:
    """start / run / stop a backend in this process (no harness kill_tree to hide leaks); its checksum."""
    return _start_run_stop(backend_cfg, make_scenario(scenario_cfg, 0), rounds, threads)


class EchoWorker(Worker):
    """Returns an array derived from its message, so message routing shows in the checksum."""

    def __init__(self, index: int):
        self.index = index
        self.round = 0

    def step(self, msg: Any) -> tuple[np.ndarray, int]:
        self.round += 1
        return np.asarray(msg, dtype=np.float64) * (self.index + 1) + self.round, self.index


class MixedServer(Server):
    """Broadcasts in rounds 0 and 1, then sends each worker its own array (the compiled graph recompiles)."""

    def __init__(self, n: int):
        self.n, self.round, self._sum = n, 0, RunningChecksum()
        self.kept: list[Any] = []  # holding gathered arrays must not stall a compiled graph

    def scatter(self) -> Any:
        self.round += 1
        if self.round <= 2:
            return Broadcast(np.full(3, float(self.round)))
        return [np.arange(3.0) + 10 * i + self.round for i in range(self.n)]

    def gather(self, results: Any) -> None:
        assert [idx for _, idx in results] == list(range(self.n))  # worker-index order
        self.kept.extend(results)
        self._sum.update(list(results))

    def checksum(self) -> str:
        return self._sum.hexdigest()


class MixedScenario(Scenario):
    name = "mixed"
    unit = "rounds"

    @property
    def num_workers(self) -> int:
        return 3

    def make_server(self) -> Server:
        return MixedServer(3)

    def make_worker(self, index: int) -> Worker:
        return EchoWorker(index)

    def units_per_round(self) -> int:
        return 1


def run_scenario_in_process(backend_cfg: Any, scenario: Scenario, rounds: int) -> str:
    return _start_run_stop(backend_cfg, scenario, rounds)[0]


def _start_run_stop(backend_cfg: Any, scenario: Scenario, rounds: int, threads: int = 1) -> tuple[str, Any]:
    """The backend's whole lifecycle on ``scenario``; checks the clock saw one begin and every tick."""
    server = scenario.make_server()
    backend = make_backend(backend_cfg, 2, threads_per_worker=threads)
    clock = CountingClock()
    try:
        backend.start(scenario, server)
        backend.run(rounds, clock)
    finally:
        backend.stop()
    assert (clock.begins, clock.ticks) == (1, rounds)
    return server.checksum(), backend


# ------------------------------------------------------------------ pure helpers (no Ray)
def test_actor_slices_pack_consecutive_indices_and_the_last_actor_may_hold_fewer():
    assert actor_slices(5, 2) == [range(0, 2), range(2, 4), range(4, 5)]
    assert actor_slices(3, 1) == [range(0, 1), range(1, 2), range(2, 3)]
    assert actor_slices(2, 8) == [range(0, 2)]
    with pytest.raises(ValueError):
        actor_slices(3, 0)


@pytest.mark.parametrize("roles,workers,expect", [
    (15, 1, 15), (15, 2, 8), (15, 3, 5), (15, 4, 4), (15, 15, 1), (15, 32, 1), (16, 2, 8), (10, 3, 4), (1, 2, 1)])
def test_envs_per_actor_auto_is_one_actor_per_worker(roles, workers, expect):
    k = resolve_envs_per_actor("auto", roles, workers)
    assert k == expect
    slices = actor_slices(roles, k)
    assert len(slices) <= workers and [i for s in slices for i in s] == list(range(roles))
    assert all(len(s) == k for s in slices[:-1])  # every actor but the last holds exactly k roles


def test_envs_per_actor_integer_form_is_kept_and_bad_values_name_the_key():
    assert resolve_envs_per_actor(5, 15, 2) == 5 and resolve_envs_per_actor("3", 15, 2) == 3
    assert parse_envs_per_actor(" AUTO ") == "auto"
    assert not is_packed(1) and not is_packed("1") and is_packed("auto") and is_packed(2)
    for bad in ("0", -1, "two", "1.5"):
        with pytest.raises(ValueError, match="backend.envs_per_actor"):
            parse_envs_per_actor(bad)


def test_a_bad_envs_per_actor_fails_before_the_job_starts(tmp_path):
    proc = run_cli("scenario=gym", "backend=ray", "backend.envs_per_actor=many", "budget=smoke", run_dir=tmp_path,
                   timeout=120)
    assert proc.returncode != 0 and "backend.envs_per_actor" in proc.stderr
    assert not (tmp_path / "results.csv").exists()


def test_actor_cpus_fit_every_actor_on_the_instance():
    assert actor_num_cpus(2, 2) == 1.0
    share = actor_num_cpus(15, 2)
    assert share == 0.1333 and 15 * share <= 2
    assert actor_num_cpus(16, 2) * 16 <= 2


def test_owned_copy_copies_read_only_arrays_only():
    ro = np.arange(4.0)
    ro.setflags(write=False)
    rw = np.arange(3)
    out = owned_copy([(ro, 1.0, True), {"a": rw}])
    assert out[0][0] is not ro and out[0][0].flags.writeable and np.array_equal(out[0][0], ro)
    assert out[1]["a"] is rw
    same = [(rw, 2)]
    assert owned_copy(same) is same


def test_known_small_sizes_without_serializing():
    assert known_small(None, 102400)
    assert known_small({"w": np.zeros(100, np.float32)}, 102400)
    assert not known_small(np.zeros(200_000, np.uint8), 102400)
    assert not known_small(object(), 10**9)  # unknown types go through the object store
    assert not known_small(None, 0)  # 0 = always ray.put


# ------------------------------------------------------------------ real Ray
# The CLI's Ray layouts (one actor per role, packed) against serial, with the layout each row records: in
# tests/test_cross_backend.py, whose [gym] multirun runs ray_packed beside every other backend and whose
# [object_size] runs ray (one actor per role; gym's own, 3 envs on 3 actors, is [gym-one-actor-per-role], slow). The
# compiled graph's packed layout: the in-process test below; ``auto``'s resolution is the same for both modes
# (test_envs_per_actor_auto_is_one_actor_per_worker).
def test_compiled_envs_per_actor_2_matches_serial_and_teardown_leaves_no_ray_process():
    assert our_ray_processes() == [], "a Ray process was already running in this session"
    scenario_cfg = config_object(GymConfig, {"num_envs": 3})  # actors hold workers [0, 1] and [2]
    reference, _ = run_in_process(config_object(SerialConfig, {}), scenario_cfg, 30)
    checksum, backend = run_in_process(
        config_object(RayConfig, {"mode": "compiled", "envs_per_actor": 2}), scenario_cfg, 30)
    assert checksum == reference
    assert [list(s) for s in backend.slices] == [[0, 1], [2]]
    assert [info["workers"] for info in backend.actor_info] == [[0, 1], [2]]
    pinned = thread_env()["OMP_NUM_THREADS"]
    assert all(info["omp_num_threads"] == pinned for info in backend.actor_info)
    assert len({info["pid"] for info in backend.actor_info} | {os.getpid()}) == 3  # roles built in the actors
    assert set(backend.startup_breakdown) == {"ray_init_s", "actor_creation_s", "compile_s"}
    import ray

    assert not ray.is_initialized()
    assert our_ray_processes() == []  # stop() alone (no harness kill_tree) left nothing behind


class LeavingClock(CountingClock):
    """Says stop at the ``tick`` of round ``after``, as a paired job's clock does at ``stop``."""

    def __init__(self, after: int) -> None:
        super().__init__()
        self.after = after

    def tick(self) -> bool:
        super().tick()
        return self.ticks != self.after


@pytest.mark.parametrize("mode,leave", [
    # the same close path once the rounds ended without a failure: [compiled-left-by-the-clock] in the fast gate
    pytest.param("actors", False, id="actors-every-round", marks=pytest.mark.slow),
    pytest.param("compiled", True, id="compiled-left-by-the-clock")])
def test_a_role_that_raises_in_close_fails_stop_after_everything_is_torn_down(mode, leave):
    """Under Ray as under every backend a role's error at its end is the job's error (it was swallowed as best
    effort, so such a job ended "ok"); Ray is still shut down and nothing is left. Also where the clock ends the
    rounds (a paired job's residents): the actors are idle then, so their roles are closed (they were once
    killed as after a failure, without closing, and the compiled graph's teardown logged an error per actor)."""
    from backends.ray import RayRoleError

    scenario = make_scenario(config_object(FaultConfig, {"num_workers": 2, "kind": "close"}), 0)
    server = scenario.make_server()
    backend = make_backend(config_object(RayConfig, {"mode": mode}), 2)
    clock = LeavingClock(5 if leave else 0)
    with pytest.raises(RayRoleError, match="EnvCrashed: worker 1 failed to close after 5 rounds"):
        try:
            backend.start(scenario, server)
            backend.run(5 if not leave else 1000, clock)
        finally:
            backend.stop()
    assert clock.ticks == 5 and not backend.failed
    import ray

    assert not ray.is_initialized()
    assert our_ray_processes() == []


def test_actor_that_raises_gives_an_error_row_with_its_message(tmp_path):
    proc = run_cli("scenario=fault", "scenario.kind=error", "backend=ray", "budget=smoke",
                   run_dir=tmp_path, timeout=300)
    assert proc.returncode != 0
    rows = read_rows(tmp_path)
    assert list(rows.status) == ["error"]
    assert "EnvCrashed: worker 1 crashed at round 3" in rows.error[0]
    assert "ray" == rows.backend[0] and "actors" == rows.variant[0]


# ------------------------------------------------------------------ slow: more modes and failures
@pytest.mark.slow
def test_actors_envs_per_actor_2_matches_serial(tmp_path):
    proc = run_cli("scenario=gym", "backend=ray", "backend.envs_per_actor=2", "budget=smoke",
                   run_dir=tmp_path / "ray")
    assert proc.returncode == 0, proc.stderr[-3000:]
    serial = run_cli("scenario=gym", "backend=serial", "budget=smoke", run_dir=tmp_path / "serial")
    assert serial.returncode == 0
    assert list(read_rows(tmp_path / "ray").checksum) == list(read_rows(tmp_path / "serial").checksum)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["actors", "compiled"])
def test_per_worker_messages_and_a_shape_change_match_serial(mode):
    scenario = MixedScenario(None, 0)
    reference = run_scenario_in_process(config_object(SerialConfig, {}), scenario, 8)
    cfg = config_object(RayConfig, {"mode": mode, "envs_per_actor": 2})
    assert run_scenario_in_process(cfg, scenario, 8) == reference
    assert our_ray_processes() == []


@pytest.mark.slow
def test_torch_roles_are_pinned_in_their_actors_and_match_serial(monkeypatch):
    # threads_per_worker=2 as the harness would set it: it must reach every actor (env and torch)
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        monkeypatch.setenv(var, "2")
    scenario_cfg = config_object(DqnConfig, {"num_rollouts": 2, "steps_per_round": 10, "minibatch": 32,
                                              "eval_episodes": 5})
    reference, _ = run_in_process(config_object(SerialConfig, {}), scenario_cfg, 6)
    checksum, backend = run_in_process(config_object(RayConfig, {"mode": "actors"}), scenario_cfg, 6, threads=2)
    assert checksum == reference
    assert [info["omp_num_threads"] for info in backend.actor_info] == ["2", "2"]
    assert [info["torch_threads"] for info in backend.actor_info] == [2, 2]
    assert backend.torch_threads_observed() == 2


@pytest.mark.slow
@pytest.mark.parametrize("backend,kind,extra,expect", [
    ("ray_compiled", "error", [], "EnvCrashed: worker 1 crashed at round 3"),
    ("ray", "exit", [], "ActorDiedError"),
    ("ray_compiled", "exit", [], "ActorDiedError"),
    ("ray_compiled", "hang", ["backend.compiled_timeout_s=5"], "timed out after compiled_timeout_s=5"),
])
def test_failures_end_the_job_with_a_clear_row(tmp_path, backend, kind, extra, expect):
    t0 = time.monotonic()
    proc = run_cli("scenario=fault", f"scenario.kind={kind}", f"backend={backend}", "budget=smoke", *extra,
                   run_dir=tmp_path, timeout=300)
    assert proc.returncode != 0
    rows = read_rows(tmp_path)
    assert list(rows.status) == ["error"], rows.error[0]
    assert expect in rows.error[0]
    assert time.monotonic() - t0 < 110  # ended by the backend, not by the runner's 120 s timeout


@pytest.mark.slow
def test_ray_that_cannot_start_is_an_error_and_leaves_nothing(tmp_path):
    scenario_cfg = config_object(FaultConfig, {"num_workers": 2})
    cfg = config_object(RayConfig, {"object_store_memory": 10**14})  # more than any machine has
    with pytest.raises(RayStartError, match="could not start a local Ray instance: ValueError"):
        run_in_process(cfg, scenario_cfg, 5)
    assert our_ray_processes() == []


@pytest.mark.slow
def test_joining_a_cluster_by_address_leaves_it_running(tmp_path, monkeypatch):
    ray_cli = shutil.which("ray", path=str(Path(sys.executable).parent))
    # our cluster's processes carry this path, so we stop only those; short: Ray's socket paths must fit
    temp_dir = Path(tempfile.mkdtemp(prefix="rxc", dir="/tmp"))
    monkeypatch.setenv("RAY_AUTH_MODE", "token")  # `ray start` clusters require Ray's auth token
    port = 46379
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    subprocess.run([ray_cli, "start", "--head", f"--port={port}", "--num-cpus=2", "--include-dashboard=false",
                    f"--temp-dir={temp_dir}", "--disable-usage-stats"], check=True, env=env,
                   capture_output=True, timeout=180)
    try:
        proc = run_cli("scenario=gym", "backend=ray_compiled", f"backend.address=127.0.0.1:{port}",
                       "budget=smoke", run_dir=tmp_path / "run", timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
        rows = read_rows(tmp_path / "run")
        serial = run_cli("scenario=gym", "backend=serial", "budget=smoke", run_dir=tmp_path / "serial")
        assert serial.returncode == 0
        assert list(rows.checksum) == list(read_rows(tmp_path / "serial").checksum)
        assert [p for p in cluster_processes(temp_dir) if "gcs_server" in " ".join(p.cmdline())], \
            "the job stopped a cluster it did not start"
    finally:
        procs = cluster_processes(temp_dir)
        for p in procs:
            try:
                p.kill()
            except psutil.Error:
                pass
        psutil.wait_procs(procs, timeout=10)
        shutil.rmtree(temp_dir, ignore_errors=True)


def cluster_processes(temp_dir: Path) -> list[psutil.Process]:
    """The processes of the cluster started with ``--temp-dir=temp_dir`` (never anyone else's), with children."""
    out: dict[int, psutil.Process] = {}
    for p in psutil.process_iter():
        try:
            if p.pid != os.getpid() and str(temp_dir) in " ".join(p.cmdline()):
                out[p.pid] = p
                out.update({c.pid: c for c in p.children(recursive=True)})
        except psutil.Error:
            continue
    return list(out.values())
