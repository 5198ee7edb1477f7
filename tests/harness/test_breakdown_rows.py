"""Reactor jobs record where each worker process's (thread's) round time went, per repetition, and place
fewer bank members on the server's process by measured cost; the checksum stays the serial one."""
import json

import pandas as pd
import pytest

from backends._bank_split import predicted_round, split_by_cost
from tests.conftest import read_rows, run_cli


def test_reactor_rows_carry_the_per_process_breakdown_and_serial_checksums(tmp_path):
    done = run_cli("scenario=gym", "backend=serial,reactor", "budget=smoke", run_dir=tmp_path, multirun=True)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = pd.concat([read_rows(d) for d in sorted(tmp_path.iterdir()) if (d / "results.csv").exists()])
    assert set(rows["status"]) == {"ok"}
    serial = rows[rows["backend"] == "serial"].sort_values("repetition")
    reactor = rows[rows["backend"] == "reactor"].sort_values("repetition")
    assert list(serial["checksum"]) == list(reactor["checksum"])
    for extra in reactor["extra"]:
        e = json.loads(extra)
        for rank in (0, 1):
            parts = [e[f"bd_w{rank}_{p}_us"] for p in ("work", "transport", "wait", "handoff", "other")]
            assert all(v >= 0 for v in parts) and e[f"bd_w{rank}_work_us"] > 0
            assert e[f"bd_w{rank}_cpu_us"] > 0  # thread CPU outside the waits
        assert e["bd_rounds"] == reactor["rounds"].iloc[0]
    for x in serial["extra"]:
        e = json.loads(x)
        assert "bd_w0_work_us" not in e
        # serial's own split: server part and steps per round, and the Amdahl bound they give at 2 workers
        s, w = e["serial_server_us"], e["serial_steps_us"]
        assert s > 0 and w > 0 and e["amdahl_bound"] == pytest.approx((s + w) / (s + w / 2))


def test_serial_measures_the_amdahl_bound_from_its_own_rounds():
    """Clients that sleep 2 ms each and a trivial server: the steps are at least 2 x 2 ms per round and the
    bound at 2 workers lies in (1, 2]; at 4 workers it is higher; with the breakdown off nothing is recorded."""
    from backends.serial import SerialBackend, SerialConfig
    from scenarios import make_scenario
    from scenarios.configs import ActorsConfig, WorkKind
    from tests.conftest import TickClock

    scenario = make_scenario(ActorsConfig(num_clients=2, work=WorkKind.sleep, work_us=2000.0), 0)
    bounds = {}
    for workers in (2, 4):
        backend = SerialBackend(SerialConfig(), workers)
        server = scenario.make_server()
        backend.start(scenario, server)
        backend.run(5, TickClock())
        m = backend.metrics()
        assert m["serial_steps_us"] >= 2 * 2000 and m["serial_server_us"] > 0
        assert 1.0 < m["amdahl_bound"] <= workers
        assert backend.metrics() == {}  # per round since the last call: no rounds since
        bounds[workers] = m["amdahl_bound"]
    assert bounds[4] > bounds[2]
    off = SerialBackend(SerialConfig(breakdown=False), 2)
    off.start(scenario, scenario.make_server())
    off.run(3, TickClock())
    assert off.metrics() == {}


def test_the_report_takes_the_median_amdahl_bound_of_serial_rows():
    from harness.report.stats import amdahl_bound

    rows = pd.DataFrame({"label": ["serial:-", "serial:-", "serial:-", "reactor:processes"],
                         "extra_dict": [{"amdahl_bound": 1.2}, {"amdahl_bound": 1.6}, {}, {"amdahl_bound": 9.0}]})
    assert amdahl_bound(rows) == pytest.approx(1.4)
    assert amdahl_bound(rows[rows["label"] != "serial:-"]) != amdahl_bound(rows[rows["label"] != "serial:-"])  # NaN


@pytest.mark.parametrize("members,procs,step,gather,handoff,expected", [
    (15, 2, 7.9, 0.35, 10.0, [8, 7]),   # CartPole: one member less on process 0 does not pay for a hand-off
    (15, 2, 7.9, 0.35, 0.0, [7, 8]),    # ... it would with free hand-offs (moving one pays iff handoff < 7 gathers)
    (15, 2, 221.0, 22.5, 10.0, [7, 8]),  # Atari: the frames' CRC-32 takes a member off process 0
    (4, 2, 1.0, 5.7, 0.0, [1, 3]),      # a gather costlier than a step
    (15, 4, 100.0, 30.0, 10.0, [3, 4, 4, 4]),
    (6, 2, 1.0, 0.0, 100.0, [3, 3]),    # steps far below a hand-off: still no more than the even share
    (3, 1, 9.0, 9.0, 9.0, [3]),
])
def test_split_by_cost_takes_the_shortest_predicted_round(members, procs, step, gather, handoff, expected):
    out = split_by_cost(members, procs, step, gather, split_gather=True, handoff=handoff)
    assert [out.count(p) for p in range(procs)] == expected and out == sorted(out)


def test_predicted_round_counts_the_gather_that_follows_the_last_results():
    # 8 local members overlap their gather with the others' 7 steps; the 7 remote gathers follow
    assert predicted_round(8, 15, 2, 10.0, 1.0, split_gather=True, handoff=2.0) == 8 * 11.0 + 7 * 1.0
    # the others are the critical path: hand-off, 8 steps, then their 8 gathers
    assert predicted_round(7, 15, 2, 10.0, 1.0, split_gather=True, handoff=2.0) == 2.0 + 8 * 10.0 + 8 * 1.0
    # without a split gather the whole gather follows the last results
    assert predicted_round(8, 15, 2, 10.0, 1.0, split_gather=False, handoff=2.0) == 8 * 10.0 + 15 * 1.0
    assert predicted_round(15, 15, 2, 10.0, 1.0, split_gather=True, handoff=2.0) == 15 * 11.0  # no hand-off


@pytest.mark.parametrize("handoff_us,members_w0", [(0.0, 7), (1e4, 8)])
def test_cost_placement_uses_costs_measured_on_throwaway_roles(handoff_us, members_w0):
    from backends.reactor import Executor, ReactorBackend, ReactorConfig
    from scenarios import make_scenario
    from scenarios.configs import GymConfig

    scenario = make_scenario(GymConfig(num_envs=15), seed=0)
    backend = ReactorBackend(ReactorConfig(executor=Executor.processes, handoff_us=handoff_us, max_processes=2), 2)
    backend.start(scenario, scenario.make_server())
    # a CartPole step costs more than 7 gathers of its result: free hand-offs move one member, dear ones none
    assert backend.bank_split == [0] * members_w0 + [1] * (15 - members_w0)
    assert backend.startup_breakdown["placement_members_w0"] == members_w0
    top = backend.program(3, None)
    assert top.server.n_local == members_w0


def test_even_placement_where_the_gather_is_not_split():
    from backends.reactor import Executor, ReactorBackend, ReactorConfig
    from scenarios import make_scenario
    from scenarios.configs import MarlConfig, MarlEnv

    scenario = make_scenario(MarlConfig(env=MarlEnv.synthetic, num_agents=4), seed=0)
    backend = ReactorBackend(ReactorConfig(executor=Executor.processes, max_processes=2), 2)
    backend.start(scenario, scenario.make_server())
    assert backend.bank_split is None and "placement_members_w0" not in backend.startup_breakdown


def _burn_cpu(seconds: float) -> None:
    """Spin until this thread has used ``seconds`` of CPU."""
    import time

    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


class _PausingClock:
    """A harness clock that stops its timer every 5th round and burns 20 ms of CPU while it is stopped, as a paired
    job's clock does between blocks (writing a report), inside the server's round-end reaction, in process 0 (on
    thread 0)."""

    def __init__(self, backend):
        self.backend, self.done = backend, 0

    def begin(self):
        self.backend.timer(True)
        self.backend.metrics()  # the rounds from here (as a harness's repetition: the roles' start-up left out)

    def tick(self):
        self.done += 1
        if self.done % 5 == 0:
            self.backend.timer(False)
            _burn_cpu(0.02)
            self.backend.timer(True)


def _paused_metrics(config, num_envs: int) -> dict:
    """The breakdown of 40 gym rounds at 2 workers under `_PausingClock` (8 pauses)."""
    from backends.reactor import ReactorBackend
    from scenarios import make_scenario
    from scenarios.configs import GymConfig

    scenario = make_scenario(GymConfig(num_envs=num_envs), 0)
    backend = ReactorBackend(config, 2)
    server = scenario.make_server()
    backend.start(scenario, server)
    backend.run(40, _PausingClock(backend))
    m = backend.metrics()
    server.close()
    assert m["bd_rounds"] == 40
    assert backend.metrics() == {}  # per round since the last call: none since
    return m


def test_the_clocks_pauses_are_not_process_0s_work():
    """While the harness's clock has its timer stopped (a paired job between blocks) process 0 does none of the
    program's work: the breakdown leaves it out (it made process 0 look busy the whole round on 16 cores)."""
    from backends.reactor import ReactorConfig

    m = _paused_metrics(ReactorConfig(), 2)
    # 8 pauses of 20 ms of CPU over 40 rounds would be 4,000 us per round; a CartPole round's work is far below
    assert m["bd_w0_work_us"] < 1_000 and m["bd_w0_cpu_us"] < 1_000, m


def test_threads_rows_carry_each_threads_cpu_waits_and_members_without_the_clocks_pauses():
    from backends.reactor import Executor, ReactorConfig

    m = _paused_metrics(ReactorConfig(executor=Executor.threads), 3)
    assert [m["bd_w0_members"], m["bd_w1_members"]] == [2.0, 1.0]  # the even split: members 0 and 1 on thread 0
    for rank in (0, 1):
        assert m[f"bd_w{rank}_cpu_us"] > 0 and m[f"bd_w{rank}_wait_us"] >= 0 and m[f"bd_w{rank}_handoff_us"] >= 0
    assert "bd_w0_work_us" not in m and "bd_w0_transport_us" not in m  # no such parts between threads
    assert m["bd_w0_cpu_us"] < 1_000, m  # as for processes
