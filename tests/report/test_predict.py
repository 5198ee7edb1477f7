"""The scaling prediction (`harness.report.predict`, ``python -m harness.report --predict``): the critical path
from per-process CPU costs, which rows it uses, and a real paired job read end to end."""
from __future__ import annotations

import json
import re
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from harness.report.predict import DEFAULT_HANDOFF_US, critical_parts, critical_round, predict_rows, round_costs
from tests.conftest import REPO, run_cli


def test_process_0s_server_work_is_serial_with_the_other_processes_and_its_members_overlap_them():
    # 4 processes, one member each: a member costs 50, process 0 adds 30 of server work and a 5 us hand-off
    assert critical_round([80, 50, 50, 50], [1, 1, 1, 1], 5) == pytest.approx(30 + 50 + 5)
    # the slowest other process sets the round
    assert critical_round([80, 50, 70, 50], [1, 1, 1, 1], 5) == pytest.approx(30 + 70 + 5)
    # process 0 keeps many members: its own CPU is the round
    assert critical_round([500, 50, 50], [8, 1, 1], 5) == pytest.approx(500)
    # one process: its cost is the round, no hand-off
    assert critical_round([123], [16], 5) == 123
    # the target machine runs its slowest other process 1.2x its median one (`spread`): the others' own
    # differences (here 70 against 50: turns on 2 cores) give way to the median step times that
    assert critical_round([80, 50, 70, 50], [1, 1, 1, 1], 5, spread=1.2) == pytest.approx(30 + 60 + 5)
    assert critical_round([80, 100, 140, 100], [1, 2, 2, 2], 5, spread=1.5) == pytest.approx(30 + 2 * 50 * 1.5 + 5)


def test_the_critical_path_s_parts_are_process_0_s_server_part_and_the_slowest_other_process():
    # what the round is made of, as --predict prints it: (server part, slowest other), the hand-offs apart
    assert critical_parts([80, 50, 70, 50], [1, 1, 1, 1]) == pytest.approx((30, 70))
    assert critical_parts([80, 50, 70, 50], [1, 1, 1, 1], spread=1.2) == pytest.approx((30, 60))
    # process 0 steps 8 members: its server part is what is left beyond them, though its own cost is the round
    assert critical_parts([500, 50, 50], [8, 1, 1]) == pytest.approx((100, 50))
    # one process: all of it is serial
    assert critical_parts([123], [16]) == (123, 0)


def test_the_target_machine_s_spread_between_its_processes_replaces_the_turns_differences():
    """On a many-core machine processes that step the same members differ by their cores and each round's chance,
    and a round waits for the slowest; on 2 shared cores the differences are the turns'. With ``--machine`` an
    oversubscribed row's slowest other process is its median one times the machine's spread at that workload and
    worker count (its reactor rows' slowest over median other process, CPU else work + transport per round), and
    the output says where each line's spread came from."""
    from harness.report.predict import process_spreads

    def machine_row(cycle, others):
        extra = {"bd_w0_work_us": 300.0, "bd_w0_transport_us": 5.0}
        for r, w in enumerate(others, start=1):  # before the CPU column: work + transport
            extra.update({f"bd_w{r}_work_us": w - 2.0, f"bd_w{r}_transport_us": 2.0})
        return _row("reactor", "processes", 4, cycle, 1000.0, extra, cpu_count=16)

    machine = pd.DataFrame([machine_row(0, [100, 150, 100]), machine_row(1, [100, 130, 100]),
                            machine_row(2, [100, 100, 170]), _row("serial", "-", 4, 0, 500.0)])
    assert process_spreads(machine) == {("gym", 4, 4): pytest.approx(1.5)}
    rows = []
    for cycle in range(3):
        rows.append(_row("serial", "-", 4, cycle, 1000.0, {"tree_cpu_ms_per_unit": 1.0}))
        rows.append(_row("capacity", "lockstep", 4, cycle, 3200.0))
        # 4 processes on 2 cores: process 2 read 1400 by its turns; the median other 1000
        rows.append(_row("reactor", "processes-max1024", 4, cycle, 2000.0, _costs([1300, 1000, 1400, 1000], 6.0)))
    own = predict_rows(pd.DataFrame(rows)).iloc[0]
    assert own["spread_from"] == "own" and own["spread"] == pytest.approx(1.4)
    assert own["predicted_round_us"] == pytest.approx(300 + 1400 + DEFAULT_HANDOFF_US)
    line = predict_rows(pd.DataFrame(rows), machine).iloc[0]
    assert line["spread_from"] == "machine" and line["spread"] == pytest.approx(1.5)
    assert line["predicted_round_us"] == pytest.approx(300 + 1000 * 1.5 + DEFAULT_HANDOFF_US)


def test_a_row_without_the_cpu_column_or_the_members_is_not_used():
    old = {f"bd_w{r}_{p}_us": 10.0 for r in range(2) for p in ("work", "transport", "wait", "handoff", "other")}
    assert round_costs(old, cores=2) is None
    new = dict(old, bd_w0_cpu_us=30.0, bd_w1_cpu_us=20.0, bd_w0_handoff_us=2.0, bd_w1_handoff_us=4.0)
    assert round_costs(new, cores=1) is None
    rc = round_costs(dict(new, bd_w0_members=1, bd_w1_members=4), cores=1)
    assert rc.costs == (30.0, 20.0) and rc.members == (1, 4)
    assert rc.handoff_us == 6.0 and rc.oversubscribed  # process 0's (the results) and then the other's (the scatter)
    assert not round_costs(dict(new, bd_w0_members=1, bd_w1_members=4), cores=8).oversubscribed


def _row(backend, variant, workers, cycle, throughput, extra=None, cpu_count=2, seconds=1.0, rounds=100):
    return {"scenario": "gym", "num_envs": 4, "workers": workers, "backend": backend, "variant": variant,
            "job": f"j{workers}", "cycle": cycle, "throughput": throughput, "status": "ok", "seconds": seconds,
            "rounds": rounds, "units": 4 * rounds, "extra_dict": extra or {}, "cpu_count": cpu_count}


def _costs(costs, handoff):
    """A processes executor row's breakdown whose round holds ``handoff`` of hand-offs: half in process 0's (the
    results reaching it), half in each other process's (the scatter reaching it)."""
    out = {}
    for r, c in enumerate(costs):
        out.update({f"bd_w{r}_work_us": c, f"bd_w{r}_cpu_us": c, f"bd_w{r}_handoff_us": handoff / 2,
                    f"bd_w{r}_members": 1})
    return out


def test_the_prediction_uses_the_hand_off_of_a_job_with_a_core_per_process_and_the_run_s_ceiling():
    rows = []
    for cycle in range(3):
        # serial: 4,000 us of CPU per round (10 ms per env step of its process tree; 10 ms of wall time per round,
        # waiting for a core on a busy host); the ceiling 3.2x serial at 4 workers; 4 processes on 2 cores
        rows.append(_row("serial", "-", 4, cycle, 1000.0, {"tree_cpu_ms_per_unit": 1.0}, seconds=1.0, rounds=100))
        rows.append(_row("capacity", "lockstep", 4, cycle, 3200.0))
        rows.append(_row("reactor", "processes-max1024", 4, cycle, 2000.0,
                         _costs([1300, 1000, 1000, 1000], handoff=900.0)))
        # 2 processes on 2 cores, 2 members each: the hand-off (6 us) the oversubscribed job borrows
        rows.append(_row("serial", "-", 2, cycle, 1000.0, {"tree_cpu_ms_per_unit": 1.0}, seconds=1.0, rounds=100))
        rows.append(_row("reactor", "processes-max1024", 2, cycle, 1800.0,
                         dict(_costs([2300, 2000], handoff=6.0), bd_w0_members=2, bd_w1_members=2)))
    table = predict_rows(pd.DataFrame(rows)).set_index("workers")
    four = table.loc[4]
    assert four["handoff_us"] == 6.0 and four["handoff_from"] == "run"
    assert four["predicted_round_us"] == pytest.approx(300 + 1000 + 6)
    assert four["predicted_speedup"] == pytest.approx(4000 / 1306)
    assert four["ceiling_from"] == "run" and four["ceiling_speedup"] == pytest.approx(3.2)
    assert four["predicted_share"] == pytest.approx(4000 / 1306 / 3.2)
    assert four["measured_share"] == pytest.approx(2000 / 3200)
    two = table.loc[2]
    assert two["handoff_from"] == "own" and two["ceiling_from"] == "ideal" and np.isnan(two["measured_share"])


def test_costs_read_with_more_processes_than_cores_are_taken_back_to_a_core_each_by_the_step_s_inflation():
    """16 processes on 2 cores: each turn on a core leaves cold caches, so a member's step costs more CPU than with
    a core per process. The same run's job with a core per process gives the warm step (100 us); a row whose
    member step is 250 us is read at 1/2.5 of its costs, its server part included."""
    rows = []
    for cycle in range(3):
        rows.append(_row("serial", "-", 4, cycle, 1000.0, {"tree_cpu_ms_per_unit": 0.1}))  # 400 us per round
        rows.append(_row("capacity", "lockstep", 4, cycle, 3600.0))
        rows.append(_row("reactor", "processes-max1024", 4, cycle, 2000.0, _costs([400, 250, 250, 250], 9.0)))
        rows.append(_row("serial", "-", 2, cycle, 1000.0, {"tree_cpu_ms_per_unit": 0.1}))
        rows.append(_row("reactor", "processes-max1024", 2, cycle, 1800.0, _costs([150, 100], handoff=6.0)))
    table = predict_rows(pd.DataFrame(rows)).set_index("workers")
    four = table.loc[4]
    assert four["inflation"] == pytest.approx(2.5) and four["inflation_from"] == "run"
    # costs / 2.5: process 0 160 (server 60 + its member 100), the others 100; hand-off 6 from the warm job
    assert four["predicted_round_us"] == pytest.approx(60 + 100 + 6)
    assert four["predicted_share"] == pytest.approx(400 / 166 / 3.6)
    assert table.loc[2, "inflation"] == 1.0 and table.loc[2, "inflation_from"] == "own"
    # no job with a core per process in the run: nothing to compare with, so no correction, and it says so
    alone = predict_rows(pd.DataFrame([r for r in rows if r["workers"] == 4])).iloc[0]
    assert alone["inflation"] == 1.0 and alone["inflation_from"] == "none"
    assert alone["predicted_round_us"] == pytest.approx(150 + 250 + DEFAULT_HANDOFF_US)
    # a member step below the warm one is the noise between two jobs, not a cheaper step: never below 1
    cheap = [dict(r, extra_dict=_costs([400, 80, 80, 80], 9.0)) if r["workers"] == 4 and r["backend"] == "reactor"
             else r for r in rows]
    assert predict_rows(pd.DataFrame(cheap)).set_index("workers").loc[4, "inflation"] == 1.0


def test_each_row_is_read_against_serial_in_its_own_cycle_so_a_slower_host_is_not_cache_inflation():
    """The host ran the job at 4 workers at half the speed of the job at 2 (a VM's vCPUs move by 2x): serial's CPU
    per round there is 800 us, not 400, and every cost doubled with it. The cache inflation compares member steps as
    fractions of serial's round in the same cycle, so it is 2.5 (the turns on the cores), not 5 (turns and the
    slower host), and the predicted speedup is serial's round over the round of the same cycles."""
    rows = []
    for cycle in range(3):
        rows.append(_row("serial", "-", 2, cycle, 1000.0, {"tree_cpu_ms_per_unit": 0.1}))  # 400 us per round
        rows.append(_row("reactor", "processes-max1024", 2, cycle, 1800.0, _costs([150, 100], handoff=6.0)))
        rows.append(_row("serial", "-", 4, cycle, 500.0, {"tree_cpu_ms_per_unit": 0.2}))  # 800 us: half speed
        rows.append(_row("capacity", "lockstep", 4, cycle, 1800.0))
        # at a core per process and the first job's speed: process 0 160 (server 60, its member 100), others 100;
        # here 2 (host) x 2.5 (cold caches) times that
        rows.append(_row("reactor", "processes-max1024", 4, cycle, 1000.0, _costs([800, 500, 500, 500], 9.0)))
    four = predict_rows(pd.DataFrame(rows)).set_index("workers").loc[4]
    assert four["inflation"] == pytest.approx(2.5)
    assert four["predicted_round_us"] == pytest.approx(2 * (60 + 100) + 6)  # at the job's own (half) speed
    assert four["serial_round_us"] == pytest.approx(800)
    assert four["predicted_speedup"] == pytest.approx(800 / 326)
    assert four["predicted_share"] == pytest.approx(800 / 326 / 3.6)
    # a cycle without serial's CPU column is read against serial's median in its job
    rows[2] = _row("serial", "-", 4, 0, 500.0, {})
    assert predict_rows(pd.DataFrame(rows)).set_index("workers").loc[4, "predicted_speedup"] == \
        pytest.approx(800 / 326)


def _like_rows(with_like: bool, like_speed: float = 1.0):
    """Serial's step per member 100 us everywhere (``serial_steps_us``); at workers=2 on a bank of 4, 2 members per
    process, the warm step 110 us a member (its per-round costs spread over 2) and a 6 us hand-off; at workers=4 on
    the same bank, 4 processes on 2 cores, one member each at 300 us; with ``with_like`` a job at workers=2 on a bank
    of 2 (one member a process, as at 4) whose warm step is 150 us and hand-off 2 us, run at ``like_speed`` times
    the others' host speed (serial's step and the reactor's costs both scale with it)."""
    rows = []
    for cycle in range(3):
        for workers, bank, costs, hand, speed in [(2, 4, [260, 220], 6.0, 1.0), (4, 4, [500, 300, 300, 300], 9.0, 1.0)] + \
                ([(2, 2, [170, 150], 2.0, like_speed)] if with_like else []):
            members = bank // workers
            extra = {"tree_cpu_ms_per_unit": 0.1 * speed, "serial_steps_us": 100.0 * bank * speed}
            rows.append(dict(_row("serial", "-", workers, cycle, 1000.0, extra, rounds=100), num_envs=bank,
                             units=bank * 100, job=f"j{workers}-{bank}"))
            breakdown = _costs([c * speed for c in costs], hand)
            breakdown.update({f"bd_w{r}_members": members for r in range(workers)})
            rows.append(dict(_row("reactor", "processes-max1024" if workers > 2 else "processes", workers, cycle,
                                  1000.0, breakdown), num_envs=bank, units=bank * 100, job=f"j{workers}-{bank}"))
    return rows


def test_the_warm_reference_is_a_job_whose_processes_step_as_many_members_as_the_row_s():
    """A process stepping one member carries its per-round costs in that step and runs it right after a wait; one
    stepping two spreads them. So an oversubscribed row of one member per process is read against a warm job of one
    member per process where the run has one (any bank; serial's step per member gives the host's speed in each),
    its hand-off from that job too; else against the same bank's job, as before."""
    from harness.report.predict import format_lines

    like = predict_rows(pd.DataFrame(_like_rows(True)))
    four = like[(like["workers"] == 4)].iloc[0]
    assert four["inflation_from"] == "like" and four["inflation"] == pytest.approx(300 / 150)
    assert four["handoff_from"] == "like" and four["handoff_us"] == pytest.approx(2.0)
    # costs / 2: process 0 250 (server 100, its member 150), the others 150; the like job's 2 us hand-off
    assert four["predicted_round_us"] == pytest.approx(100 + 150 + 2)
    assert (four["server_us"], four["slowest_us"]) == pytest.approx((100, 150))
    # the like job ran while the host was twice as slow: its step per member of serial's is the same fraction
    slow = predict_rows(pd.DataFrame(_like_rows(True, like_speed=2.0)))
    assert slow[slow["workers"] == 4].iloc[0]["inflation"] == pytest.approx(2.0)
    # no such job: the same bank's warm step (110 us a member), and its hand-off
    one_bank = predict_rows(pd.DataFrame(_like_rows(False)))
    unlike = one_bank.set_index("workers").loc[4]
    assert unlike["inflation_from"] == "run" and unlike["inflation"] == pytest.approx(300 / 110)
    assert unlike["handoff_from"] == "run" and unlike["handoff_us"] == pytest.approx(6.0)
    # the workload ran at two banks: each line names its bank
    lines = format_lines(like).splitlines()[1:4]
    assert sorted(line.split()[0] + " " + line.split()[1] for line in lines) == ["gym/2 2", "gym/4 2", "gym/4 4"]
    # the predicted round, then its parts
    assert "252.0 =100.0+150.0+h " in next(line for line in lines if line.startswith("gym/4 4 "))
    assert [line.split()[0] for line in format_lines(one_bank).splitlines()[1:3]] == ["gym", "gym"]


def _thread_costs(costs, handoff):
    """A threads executor row's breakdown: CPU, waiting and hand-offs per thread (``handoff`` a round: half in
    thread 0's, half in each other's), no work or transport part."""
    out = {}
    for r, c in enumerate(costs):
        out.update({f"bd_w{r}_cpu_us": c, f"bd_w{r}_wait_us": 50.0, f"bd_w{r}_handoff_us": handoff / 2,
                    f"bd_w{r}_members": 1})
    return out


def test_the_threads_executor_on_a_free_threaded_interpreter_is_read_against_serial_and_the_ceiling_there():
    """One job holding both interpreters: the processes executor against serial and the ceiling on the harness's
    interpreter, the threads executor on the free-threaded one against serial and the ceiling there (other speeds:
    4,000 against 6,000 us a round). Threads under a GIL take turns whatever the cores: not predicted."""
    from harness.report.predict import PROCESSES, Subject, format_lines, subjects

    rows = []
    for cycle in range(3):
        rows.append(_row("serial", "-", 4, cycle, 1000.0, {"tree_cpu_ms_per_unit": 1.0}))
        rows.append(_row("capacity", "lockstep", 4, cycle, 3200.0))
        rows.append(_row("reactor", "processes-max1024", 4, cycle, 2000.0, _costs([1300, 1000, 1000, 1000], 6.0),
                         cpu_count=4))
        rows.append(_row("serial", "ft", 4, cycle, 700.0, {"tree_cpu_ms_per_unit": 1.5}))
        rows.append(_row("capacity", "lockstep ft", 4, cycle, 2100.0))
        rows.append(_row("reactor", "threads ft", 4, cycle, 1400.0, _thread_costs([2000, 1500, 1500, 1500], 4.0),
                         cpu_count=4))
        rows.append(_row("reactor", "threads", 4, cycle, 900.0, _thread_costs([900, 900, 900, 900], 4.0),
                         cpu_count=4))
    frame = pd.DataFrame(rows)
    threads_ft = Subject("threads", "ft")
    assert subjects(frame) == [PROCESSES, threads_ft]
    assert list(frame[threads_ft.serial(frame)]["variant"].unique()) == ["ft"]
    assert list(frame[PROCESSES.ceiling(frame)]["variant"].unique()) == ["lockstep"]
    table = predict_rows(frame).set_index("executor")
    proc, thr = table.loc["processes"], table.loc["threads ft"]
    assert proc["predicted_round_us"] == pytest.approx(300 + 1000 + 6)
    assert proc["predicted_speedup"] == pytest.approx(4000 / 1306) and proc["ceiling_speedup"] == pytest.approx(3.2)
    assert proc["measured_share"] == pytest.approx(2000 / 3200)
    # thread 0: 500 of server work beside its member's 1,500; serial on ft: 1.5 ms per env step, 6,000 us a round
    assert thr["predicted_round_us"] == pytest.approx(500 + 1500 + 4)
    assert thr["serial_round_us"] == pytest.approx(6000)
    assert thr["predicted_speedup"] == pytest.approx(6000 / 2004) and thr["ceiling_speedup"] == pytest.approx(3.0)
    assert thr["measured_share"] == pytest.approx(1400 / 2100) and thr["measured_speedup"] == pytest.approx(2.0)
    text = format_lines(predict_rows(frame)).splitlines()
    assert text[1] == "# reactor:processes (against serial and the synchronized ceiling)"
    assert text[3] == "# reactor:threads ft (against serial on ft and the synchronized ceiling on ft)"
    assert text[2].startswith("gym 4 0.62 ") and text[4].startswith("gym 4 0.67 ")
    # a run of the processes executor alone prints no subject lines (the format the issue names)
    alone = format_lines(predict_rows(frame[~threads_ft.reactor(frame)])).splitlines()
    assert not any(line.startswith("#") for line in alone)


def _curve_rows():
    """Paired rows of the processes executor at 2, 4 and 8 workers (a core each), 3 cycles each: a scaling curve."""
    rows = []
    for workers in (2, 4, 8):
        for cycle in range(3):
            rows.append(_row("serial", "-", workers, cycle, 1000.0, {"tree_cpu_ms_per_unit": 1.0}))
            rows.append(_row("capacity", "lockstep", workers, cycle, 900.0 * workers))
            rows.append(_row("reactor", "processes", workers, cycle, 700.0 * workers,
                             _costs([1300] + [1000] * (workers - 1), 6.0), cpu_count=8))
    return rows


def test_a_scaling_curve_per_subject_the_threads_executor_s_named_with_its_interpreter():
    from types import SimpleNamespace

    from harness.report.scaling import scaling_frame

    rows = _curve_rows()
    for workers in (2, 4, 8):
        for cycle in range(3):
            rows.append(_row("serial", "ft", workers, cycle, 700.0, {"tree_cpu_ms_per_unit": 1.5}))
            rows.append(_row("capacity", "lockstep ft", workers, cycle, 650.0 * workers))
            rows.append(_row("reactor", "threads ft", workers, cycle, 500.0 * workers,
                             _thread_costs([2000] + [1500] * (workers - 1), 4.0), cpu_count=8))
    frame = scaling_frame(SimpleNamespace(paired_rows=pd.DataFrame(rows)))
    assert sorted(set(frame["workload"])) == ["gym", "gym (threads ft)"]
    threads = frame[frame["workload"] == "gym (threads ft)"].set_index("workers")
    assert list(threads.index) == [2, 4, 8] and threads.loc[8, "measured_share"] == pytest.approx(500 / 650)
    assert threads.loc[8, "predicted_round_us"] == pytest.approx(500 + 1500 + 4)
    # the scaling table shows each predicted round with process 0's (thread 0's) server part beside it
    from harness.report.scaling import scaling_table

    cells = {(r[0], r[1]): r for r in scaling_table(frame).rows}
    assert cells[("gym (threads ft)", "8")][7] == "2004 (500)"


def test_a_second_bank_at_one_worker_count_is_no_curve_of_its_own():
    """`make proxy`'s like-for-like job (a bank of 2 at workers=2) is an input to the curve of the bank it serves:
    that curve is named with its bank, and the reference makes no one-point curve of its own."""
    from types import SimpleNamespace

    from harness.report.scaling import scaling_frame

    rows = _curve_rows()
    for cycle in range(3):
        rows.append(dict(_row("serial", "-", 2, cycle, 1000.0, {"tree_cpu_ms_per_unit": 0.5}), num_envs=2))
        rows.append(dict(_row("reactor", "processes", 2, cycle, 900.0, _costs([600, 500], 2.0)), num_envs=2))
    frame = scaling_frame(SimpleNamespace(paired_rows=pd.DataFrame(rows)))
    assert set(frame["workload"]) == {"gym/4"} and sorted(frame["workers"]) == [2, 4, 8]


def test_each_prediction_is_checked_against_the_measured_share_s_interval_and_the_run_summarised():
    from harness.report.predict import format_lines

    rows = []
    shares = [0.70, 0.72, 0.69, 0.71, 0.73, 0.70, 0.68, 0.72]  # 8 independent-looking cycles around 0.71
    for cycle, share in enumerate(shares):
        rows.append(_row("serial", "-", 4, cycle, 1000.0, {"tree_cpu_ms_per_unit": 1.0}))
        rows.append(_row("capacity", "lockstep", 4, cycle, 3000.0))
        rows.append(_row("reactor", "processes-max1024", 4, cycle, 3000.0 * share,
                         _costs([1300, 1000, 1000, 1000], handoff=6.0), cpu_count=4))
    line = predict_rows(pd.DataFrame(rows)).iloc[0]
    assert line["measured_share"] == pytest.approx(np.median(shares))
    # 8 cycles: the 95% interval of their median is [min, max] (ranks 2 and 7 would cover 93%)
    assert line["measured_low"] == pytest.approx(0.68) and line["measured_high"] == pytest.approx(0.73)
    # predicted: 4000 / (300 + 1000 + 6) / 3.0 = 1.02, far above the interval
    assert line["predicted_share"] == pytest.approx(4000 / 1306 / 3.0)
    assert line["in_interval"] is not None and not line["in_interval"]
    text = format_lines(predict_rows(pd.DataFrame(rows)))
    assert "[0.68,0.73]:out" in text.splitlines()[1]
    assert "within 20% of the measured share in 0 of 1; inside its 95% interval in 0 of 1" in text


@pytest.mark.slow  # a real paired job (~8 s); the fast equivalents read synthetic rows through the same code
def test_predict_reads_a_real_paired_job_and_prints_one_line_per_workload_and_worker_count(tmp_path):
    out = tmp_path / "job"
    proc = run_cli("compare", "scenario=gym", "budget=smoke", "workers=4", "scenario.num_envs=4",
                   "backends=[serial,reactor_per_worker,capacity_lockstep]", "compare.block_rounds=20",
                   "compare.max_seconds=1.5", "compare.min_cycles=6", run_dir=out)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = pd.read_csv(out / "results.csv")
    reactor = [json.loads(e) for e, b in zip(rows["extra"], rows["backend"]) if b == "reactor"]
    assert reactor and all(e["bd_w0_cpu_us"] > 0 and sum(e[f"bd_w{r}_members"] for r in range(4)) == 4
                           for e in reactor)
    done = subprocess.run([sys.executable, "-m", "harness.report", "--predict", str(out)], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert lines[0].startswith("workload workers measured_share predicted_share")
    # one line per workload and worker count (`workload workers ...`); the summary and any check follow it
    # (`at 4+ workers: ...`, `gym 4: ...`)
    assert [line for line in lines[1:] if re.match(r"\S+ \d+ ", line)] == lines[1:2]
    assert lines[2].startswith("at 4+ workers: ") and all(re.match(r"gym 4: ", line) for line in lines[3:])
    workload, workers, measured, predicted = lines[1].split()[:4]
    assert (workload, workers) == ("gym", "4")
    assert 0 < float(measured) and 0 < float(predicted)
    # 4 processes on 2 cores: no hand-off of its own, none with a core per process in the run either
    assert f"{DEFAULT_HANDOFF_US:.1f}(default)" in lines[1]


def test_predict_says_so_when_a_run_has_nothing_to_predict_from(tmp_path):
    done = subprocess.run([sys.executable, "-m", "harness.report", "--predict", str(tmp_path)], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "no reactor rows to predict from" in done.stderr


def test_a_many_core_run_s_report_opens_with_its_scaling_curve_after_the_answer():
    """The 16-core reference run (paired jobs at 1-16 workers): the section after the answer is the scaling table,
    one row per workload and worker count, its shares the paired medians (gym at 16: 0.41 of the ceiling)."""
    from harness.report.build import make_report
    from harness.report.compose import sections

    rep = make_report([REPO / "results/reference/h200-16core-2026-12-04-device"], figures=False)
    parts = sections(rep)
    assert [s.key for s in parts[:2]] == ["answer", "scaling"]
    table = parts[1].content
    cells = {(r[0], r[1]): r for r in table.rows}
    assert {w for (wl, w) in cells if wl == "gym"} == {"1", "2", "4", "8", "16"}
    assert cells[("gym", "16")][4] == "0.41" and cells[("atari", "16")][4] == "0.49"
    # recorded before the CPU column: measured only, no prediction claimed
    assert cells[("gym", "16")][5] == "-"
    # atari's serial at 8 workers ran 1.40x its median over the run's five atari jobs: its speedups say so
    assert cells[("atari", "8")][2].endswith("(serial 1.40x its median)")
    assert not cells[("atari", "4")][2].endswith("its median)")
    assert "atari at 8 workers: the run's serial ran 1.40x its median over its 5 paired jobs" in parts[1].intro
    # the Amdahl share from the run's own serial rows: marl's server part (30 us a round there, against 42 us per
    # agent) leaves 0.62 at 16 workers, of which the reactor reached 0.58; atari's 0.49 lies above its 0.44
    assert table.header[6] == "Amdahl share" and cells[("marl", "16")][6] == "0.62"
    assert "atari at 16 workers: the measured share 0.49 (Amdahl share 0.44) is above" in parts[1].intro


def _ceiling_rows(serial_extra, ceiling_extra, ceiling_throughput):
    rows = []
    for cycle in range(6):
        rows.append(_row("serial", "-", 4, cycle, 1000.0, serial_extra))
        rows.append(_row("capacity", "lockstep", 4, cycle, ceiling_throughput, ceiling_extra))
        rows.append(_row("reactor", "processes-max1024", 4, cycle, 2000.0, _costs([1300, 1000, 1000, 1000], 6.0)))
    return pd.DataFrame(rows)


def test_a_ceiling_above_its_copies_is_flagged_with_the_cause_its_cpu_columns_show():
    # within k copies (and the slack): no flag
    ok = predict_rows(_ceiling_rows({"tree_cpu_ms_per_unit": 1.0}, {"tree_cpu_ms_per_unit": 1.0}, 4200.0))
    assert ok.loc[0, "ceiling_check"] == ""
    # 5.6x from 4 copies, equal CPU per unit, serial's tree busy 0.6 of a core: serial waited
    timed = {"tree_cpu_window": "timed"}
    waited = predict_rows(_ceiling_rows({"tree_cpu_ms_per_unit": 1.0, "tree_cpu_cores_busy": 0.6, **timed},
                                        {"tree_cpu_ms_per_unit": 1.0, "tree_cpu_cores_busy": 3.9, **timed}, 5600.0))
    check = waited.loc[0, "ceiling_check"]
    assert "above 4 copies" in check and "serial waited" in check and "a copy 0.97" in check
    # the same busy counted from row to row (rows of earlier versions: a paired job's waits dilute it): not read
    diluted = predict_rows(_ceiling_rows({"tree_cpu_ms_per_unit": 1.0, "tree_cpu_cores_busy": 0.6},
                                         {"tree_cpu_ms_per_unit": 1.0, "tree_cpu_cores_busy": 3.9}, 5600.0))
    check = diluted.loc[0, "ceiling_check"]
    assert "not explained by the CPU columns" in check and "busy" not in check
    # serial spent 1.4x the CPU per unit of a copy: unequal work
    unequal = predict_rows(_ceiling_rows({"tree_cpu_ms_per_unit": 1.4, "tree_cpu_cores_busy": 1.0},
                                         {"tree_cpu_ms_per_unit": 1.0}, 5600.0))
    assert "more CPU per unit" in unequal.loc[0, "ceiling_check"]
    # rows from before the CPU columns: flagged, and said that they cannot tell why
    old = predict_rows(_ceiling_rows({}, {}, 5600.0))
    assert "no CPU columns" in old.loc[0, "ceiling_check"]
    from harness.report.predict import format_lines
    assert "gym 4: ceiling 5.6x above 4 copies" in format_lines(waited)


def test_a_ceiling_taken_over_a_serial_that_ran_away_from_its_typical_speed_is_flagged_with_the_share_at_it():
    """Serial does the same work in every job; where one job's serial ran 1.4x its median over the source's paired
    jobs of the workload (a faster core), the ceiling's speedup over it, and the share predicted from it, are off by
    as much: flagged, with the predicted share at the typical serial. Within 15% or with fewer than three jobs: no
    flag."""
    from harness.report.predict import format_lines, serial_skews

    def rows(serial_at_8):
        out = []
        for workers, serial in ((2, 1000.0), (4, 1040.0), (8, serial_at_8)):
            for cycle in range(6):
                out.append(_row("serial", "-", workers, cycle, serial, {"tree_cpu_ms_per_unit": 1.0}))
                out.append(_row("capacity", "lockstep", workers, cycle, 0.9 * workers * 1000.0))
                out.append(_row("reactor", "processes-max1024", workers, cycle, 0.6 * workers * 1000.0,
                                _costs([1300] + [1000] * (workers - 1), 6.0), cpu_count=16))
        return pd.DataFrame(out)

    fast = rows(1400.0)
    skews = serial_skews(fast)
    assert skews[("gym", 4, 8)][0] == pytest.approx(1400 / 1040) and skews[("gym", 4, 8)][3] == 3
    table = predict_rows(fast).set_index("workers")
    check = table.loc[8, "serial_check"]
    assert "serial ran 1.35x its median over its 3 paired jobs" in check
    assert f"the predicted share is {table.loc[8, 'predicted_share'] / (1400 / 1040):.2f}" in check
    assert table.loc[2, "serial_check"] == "" and table.loc[4, "serial_check"] == ""
    assert "gym 8: the run's serial ran 1.35x" in format_lines(predict_rows(fast))
    # the summary counts the flagged cell both ways: as predicted, and at the typical serial
    assert "in 1 of 2 (0 with the 1 flagged below read at the typical serial)" in format_lines(predict_rows(fast))
    assert (predict_rows(rows(1100.0))["serial_check"] == "").all()            # within 15% of its typical speed
    assert serial_skews(rows(1400.0).query("workers != 2")) == {}               # two jobs: nothing to compare with


def test_a_prediction_against_a_machine_whose_rows_are_of_other_code_says_so():
    """The 2-core proxy of 2026-12-05 against the 16-core reference: the two runs record different commits, so each
    error holds what changed in the code too, and the output says which commits; a run read against itself says
    nothing of the kind."""
    from harness.report.load import load_results
    from harness.report.predict import commits, format_lines, predict_run

    run = REPO / "results/reference/vm-2core-2026-12-05-proxy/pre-digest"
    machine = REPO / "results/reference/h200-16core-2026-12-04-device"
    text = format_lines(predict_run([run], [machine]))
    note = text.splitlines()[-1]
    assert note.startswith("the machine's rows are of commit 9e82d043 (dirty), this run's of ")
    assert all(c in note for c in commits(load_results([run]).rows))
    assert "rows are of commit" not in format_lines(predict_run([machine], [machine]))


def test_each_share_is_read_against_the_amdahl_share_serial_s_server_part_allows_and_a_share_above_it_is_flagged():
    """Serial's rows carry its Amdahl bound at their worker count (its server part kept serial, its steps split):
    over the workers it is the most of the synchronized ceiling a synchronized round reaches at the copies' speed per
    core. The prediction reads the run's; a measured share from the target machine is checked against that
    machine's own."""
    from harness.report.predict import amdahl_shares, format_lines

    def rows(bound, share):
        out = []
        for cycle in range(6):
            out.append(_row("serial", "-", 4, cycle, 1000.0, {"tree_cpu_ms_per_unit": 1.0, "amdahl_bound": bound}))
            out.append(_row("capacity", "lockstep", 4, cycle, 4000.0))
            out.append(_row("reactor", "processes-max1024", 4, cycle, 4000.0 * share,
                            _costs([1300, 1000, 1000, 1000], 6.0), cpu_count=4))
        return pd.DataFrame(out)

    assert amdahl_shares(rows(3.0, 0.6)) == {("gym", 4, 4): pytest.approx(0.75)}
    line = predict_rows(rows(3.0, 0.6)).iloc[0]
    assert line["amdahl_share"] == pytest.approx(0.75) and line["amdahl_from"] == "run"
    # measured 0.6 and predicted 4000 / 1306 / 4 = 0.77: within 10% of 0.75, nothing said
    assert line["predicted_share"] == pytest.approx(4000 / 1306 / 4) and line["amdahl_check"] == ""
    assert " 0.75(run) " in format_lines(predict_rows(rows(3.0, 0.6))).splitlines()[1]
    # a server part of half a round: 2.0 / 4 = 0.5, below both shares: each is flagged, with what it means
    check = predict_rows(rows(2.0, 0.6)).iloc[0]["amdahl_check"]
    assert check.startswith("the measured share 0.60 (Amdahl share 0.50) and the predicted share 0.77 (Amdahl share "
                            "0.50) are above")
    assert "cost less than serial's, or its cores ran faster" in check
    assert "gym 4: the measured share 0.60" in format_lines(predict_rows(rows(2.0, 0.6)))
    # against a machine: its measured share against its own serial's bound, the prediction against the run's
    machine = rows(2.0, 0.6)
    run = rows(3.6, 0.6)
    run = run[run["backend"] != "capacity"]  # no paired ceiling in the run: the machine's is used
    line = predict_rows(run, machine).iloc[0]
    assert line["amdahl_share"] == pytest.approx(0.9) and line["amdahl_from"] == "run"
    assert line["amdahl_check"].startswith("the measured share 0.60 (Amdahl share 0.50) is above")
    # serial rows without the bound (recorded with breakdown=false): no Amdahl share, nothing flagged
    bare = rows(np.nan, 0.9)
    line = predict_rows(bare).iloc[0]
    assert np.isnan(line["amdahl_share"]) and line["amdahl_from"] == "-" and line["amdahl_check"] == ""


def test_a_synchronized_ceiling_whose_copies_were_not_held_to_its_short_blocks_is_flagged():
    """Earlier versions let the ceiling's copies run the round after each block outside every window, and copy 0 ran
    the first round of the next block alone: with one round a block (dqn) the ceiling was k x one copy alone. Rows of
    such a ceiling (no ``copies_held``) with short blocks are flagged; held copies, or long blocks, are not."""
    from harness.report.predict import format_lines, unheld_ceiling

    def ceiling_rows(rounds, extra):
        return pd.DataFrame([_row("capacity", "lockstep", 4, c, 3200.0, dict(extra), rounds=rounds) for c in range(3)])

    assert "every timed round was copy 0's alone" in unheld_ceiling(ceiling_rows(1, {}), "the run's")
    assert "one round in 5" in unheld_ceiling(ceiling_rows(5, {}), "the run's")
    assert unheld_ceiling(ceiling_rows(1, {"copies_held": True}), "the run's") == ""
    assert unheld_ceiling(ceiling_rows(500, {}), "the run's") == ""
    assert unheld_ceiling(ceiling_rows(1, {}).assign(workers=1), "the run's") == ""  # one copy: none ran ahead
    rows = pd.DataFrame([dict(r, rounds=1) if r["backend"] == "capacity" else r
                         for r in _ceiling_rows({"tree_cpu_ms_per_unit": 1.0}, {}, 3200.0).to_dict("records")])
    assert "gym 4: the run's synchronized ceiling ran one round a block" in format_lines(predict_rows(rows))


def test_the_synchronized_ceiling_marks_its_rows_as_holding_its_copies():
    from backends.capacity import HELD, CapacityBackend, CapacityConfig
    from harness.report.stats import HELD_KEY

    assert HELD == HELD_KEY
    assert CapacityBackend(CapacityConfig(lockstep=True), 2).row_extra[HELD] is True
    assert HELD not in CapacityBackend(CapacityConfig(lockstep=False), 2).row_extra


def test_a_paired_answer_says_when_its_synchronized_ceiling_is_an_earlier_versions_one_copy_alone():
    """The 16-core reference's dqn jobs (one round a block, copies not held): each answer line says that its
    synchronized ceiling is one copy alone, not a bound; at one worker (no other copy) and for atari (100 rounds a
    block) nothing is said."""
    from harness.report.answer import UNHELD_ONE, answers
    from harness.report.build import make_report

    rep = make_report([REPO / "results/reference/h200-16core-2026-12-04-device"], figures=False)
    lines = {a.workload: a for a in answers(rep) if a.source == "paired"}
    dqn = {w: a for w, a in lines.items() if w.startswith("dqn")}
    assert dqn and all((UNHELD_ONE in a.extra) == (" w=1 " not in w) for w, a in dqn.items())
    assert not any(UNHELD_ONE in a.extra for w, a in lines.items() if w.startswith("atari"))
