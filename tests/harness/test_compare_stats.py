"""Paired statistics (harness.report.paired) and change points (harness.report.changepoint) on synthetic series."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from harness.report.build import build_report, make_report
from harness.report.changepoint import change_points, regimes
from harness.report.load import load_results
from harness.report.paired import analyze_paired, host_summary, ratios_moved, shift_lines, split_paired
from harness.report.render import verdict_lines
from harness.report.stats import speedup
from harness.results import ResultsWriter, make_row


def test_a_step_in_the_series_is_found_where_it_is():
    rng = np.random.default_rng(1)
    x = np.r_[rng.normal(100, 5, 40), rng.normal(60, 5, 30)]
    (split,) = change_points(x)
    assert abs(split.index - 40) <= 2 and split.p_value < 0.01 and split.shift < -0.3
    assert regimes(len(x), [split]) == [(0, split.index), (split.index, 70)]


def test_two_steps_give_three_regimes():
    rng = np.random.default_rng(2)
    x = np.r_[rng.normal(100, 4, 30), rng.normal(150, 4, 30), rng.normal(90, 4, 30)]
    assert [abs(s.index - at) <= 2 for s, at in zip(change_points(x), (30, 60))] == [True, True]


@pytest.mark.parametrize("seed", range(5))
def test_noise_alone_is_no_shift(seed):
    rng = np.random.default_rng(seed)
    assert change_points(rng.lognormal(0, 0.3, 120)) == []  # 30% noise, heavy right tail: no regime


def test_a_significant_but_small_change_is_not_a_regime():
    rng = np.random.default_rng(3)
    x = np.r_[rng.normal(100, 0.5, 50), rng.normal(103, 0.5, 50)]  # 3%: detectable, below min_shift
    assert change_points(x) == []
    assert len(change_points(x, min_shift=0.02)) == 1


def _write_paired(folder, serial, reactor, ceiling, variant="processes"):
    writer = ResultsWriter(folder)
    base = {"scenario": "gym", "workers": 2, "num_envs": 15, "env_id": "CartPole-v1", "budget": "local", "seed": 0,
            "threads_per_worker": 1, "params": {"num_envs": 15}, "unit": "env_steps",
            "metadata": {"hostname": "h", "cpu_model": "m", "cpu_count": 2, "started_at": "2026-01-01T00:00:00"}}
    position = 0
    for cycle, values in enumerate(zip(serial, reactor, ceiling)):
        for (backend, var), tp in zip((("serial", "-"), ("reactor", variant), ("capacity", "lockstep")), values):
            extra = {"paired": True, "block_rounds": 100, "host_core_ms": [5.0, 5.5], "host_steal": 0.0,
                     "others_cpu_ms": 0.0, "stopped_by": "time" if cycle == len(serial) - 1 else "",
                     "precision_target": 0.05}
            writer.append(make_row({**base, "backend": backend, "variant": var}, repetition=cycle, cycle=cycle,
                                   block=position, status="ok", units=1000, seconds=1000 / tp, throughput=tp,
                                   checksum=f"c{cycle}", extra=extra))
            position += 1


def test_pairing_cancels_a_host_whose_speed_swings_between_cycles(tmp_path):
    rng = np.random.default_rng(4)
    host = rng.uniform(0.5, 1.5, 40)  # the host's speed, 3x between cycles
    serial = 30000 * host
    reactor = 1.5 * serial * rng.normal(1, 0.02, 40)
    ceiling = 1.9 * serial * rng.normal(1, 0.02, 40)
    _write_paired(tmp_path, serial, reactor, ceiling)
    rows = load_results([tmp_path]).rows
    paired, standalone = split_paired(rows)
    assert len(paired) == 120 and len(standalone) == 0
    (job,) = analyze_paired(rows)
    assert job.cycles == 40 and job.stopped_by == "time" and job.splits == []
    r = job.ratios.set_index(["numerator", "denominator"])
    main = r.loc[("reactor:processes", "serial:-")]
    assert 1.45 < main["ci_low"] <= main["median"] <= main["ci_high"] < 1.55
    assert main["verdict"] == "reactor:processes faster"
    eff = r.loc[("reactor:processes", "capacity:lockstep")]
    assert eff["kind"] == "efficiency" and 0.75 < eff["median"] < 0.83
    unpaired = speedup(reactor, serial)  # the same blocks read as two independent samples
    assert (unpaired.high - unpaired.low) > 5 * (main["ci_high"] - main["ci_low"])


def test_a_shift_of_the_ceiling_gives_ratios_per_regime(tmp_path):
    rng = np.random.default_rng(5)
    serial = 30000 * rng.normal(1, 0.03, 60)
    gain = np.r_[np.full(30, 1.7), np.full(30, 1.05)]  # the second core went away at cycle 30
    reactor = serial * gain * rng.normal(1, 0.02, 60)
    ceiling = serial * np.r_[np.full(30, 1.95), np.full(30, 1.1)] * rng.normal(1, 0.02, 60)
    _write_paired(tmp_path, serial, reactor, ceiling)
    (job,) = analyze_paired(load_results([tmp_path]).rows)
    assert [abs(s.index - 30) <= 1 for s in job.splits] == [True]
    main = job.ratios[job.ratios["numerator"] == "reactor:processes"]
    main = main[main["denominator"] == "serial:-"]
    (first, second) = list(main["regime"])  # two regimes, split where the ceiling moved (at cycle 30 +-1)
    split = int(second.split()[1].split("-")[0])
    assert abs(split - 30) <= 1 and first == f"cycles 0-{split - 1}" and second == f"cycles {split}-59"
    assert main["median"].iloc[0] == pytest.approx(1.7, rel=0.03)
    assert main["median"].iloc[1] == pytest.approx(1.05, rel=0.03)


def test_the_report_keeps_paired_and_standalone_rows_apart(tmp_path):
    rng = np.random.default_rng(6)
    serial = 30000 * rng.uniform(0.8, 1.2, 12)
    _write_paired(tmp_path / "paired", serial, 1.4 * serial, 1.9 * serial)
    writer = ResultsWriter(tmp_path / "standalone")
    for rep in range(3):
        writer.append(make_row({"scenario": "gym", "backend": "serial", "variant": "-", "workers": 2,
                                "budget": "local", "seed": 0, "unit": "env_steps", "metadata": {}},
                               repetition=rep, status="ok", units=1000, seconds=0.03, throughput=33333.0,
                               checksum=f"s{rep}"))
    rep = make_report([tmp_path], figures=False)
    assert len(rep.paired) == 1 and len(rep.results.rows) == 3
    files = build_report([tmp_path], out=tmp_path / "report", figures=False)
    text = files.markdown.read_text()
    assert "## Paired ratios" in text and "36 paired rows from 1 paired job" in text
    assert "reactor / serial" in text and "the other sections read the 3 rows" in text  # presets, as typed


def test_a_report_of_paired_jobs_alone_opens_with_their_verdicts(tmp_path):
    """`make bench-paired` writes paired jobs only: the verdicts, the machine and the counts come from them."""
    rng = np.random.default_rng(8)
    serial = 30000 * rng.uniform(0.5, 1.5, 30)
    _write_paired(tmp_path / "faster", serial, 1.5 * serial * rng.normal(1, 0.01, 30), 1.9 * serial)
    _write_paired(tmp_path / "even", serial, serial * rng.normal(1, 0.05, 30), 1.9 * serial, variant="threads")
    text = build_report([tmp_path], out=tmp_path / "report", figures=False).markdown.read_text()
    assert text.index("## The answer") < text.index("## Verdicts")
    verdicts = text[text.index("## Verdicts"):]
    verdicts = verdicts[:verdicts.index("\n## ", 5)]
    lines = [line for line in verdicts.splitlines() if line.startswith("- ")]
    assert len(lines) == 2 and all("(paired, 30 cycles)" in line for line in lines), lines
    assert any("reactor 1.5" in line and "of serial (faster)" in line for line in lines)
    assert any("reactor_threads" in line and "(no clear difference)" in line for line in lines)
    assert "Machine: h (m, 2 cores" in text and "2 paired job(s) of 60 cycles" in text
    assert "the result files hold no rows" not in text and "no speedups" not in text
    assert "_(none)_" not in text and "no standalone rows: this run has only paired jobs" in text


def test_paired_verdicts_are_given_per_regime_after_a_host_shift(tmp_path):
    rng = np.random.default_rng(5)
    serial = 30000 * rng.normal(1, 0.03, 60)
    reactor = serial * np.r_[np.full(30, 1.7), np.full(30, 0.8)] * rng.normal(1, 0.02, 60)
    ceiling = serial * np.r_[np.full(30, 1.95), np.full(30, 1.1)] * rng.normal(1, 0.02, 60)
    _write_paired(tmp_path, serial, reactor, ceiling)
    (line,) = verdict_lines(make_report([tmp_path], figures=False))
    assert "host shift: per regime" in line
    first, second = line.split("; ")
    assert "(faster)" in first and "(slower)" in second


def test_a_host_shift_that_moves_no_ratio_between_contenders_leaves_the_job_read_whole(tmp_path):
    """The ceiling's series shifts (the host got 30% slower for the ceiling's k copies) while the reactor runs 1.5x
    serial on both sides: the shift is found and said, but the job is one regime, its verdict over all 60 cycles
    (split, each half would stand on 30)."""
    rng = np.random.default_rng(6)
    serial = 30000 * rng.normal(1, 0.03, 60)
    reactor = 1.5 * serial * rng.normal(1, 0.02, 60)
    ceiling = serial * np.r_[np.full(30, 1.95), np.full(30, 1.35)] * rng.normal(1, 0.02, 60)
    _write_paired(tmp_path, serial, reactor, ceiling)
    (job,) = analyze_paired(load_results([tmp_path]).rows)
    assert len(job.splits) == 1 and len(job.host_regimes) == 2
    assert not job.moved and job.regimes == [(0, 60)]
    assert set(job.ratios["regime"]) == {"all"}
    main = job.ratios.set_index(["numerator", "denominator"]).loc[("reactor:processes", "serial:-")]
    assert main["cycles"] == 60
    (shift,) = shift_lines([job])
    assert "HOST SHIFT" in shift and "the job is read whole" in shift
    (line,) = verdict_lines(make_report([tmp_path], figures=False))
    assert "per regime" not in line and "(faster)" in line and "; " not in line
    assert [r["cycles"] for r in host_summary(job)] == ["0-29", "30-59"]


def test_a_ratio_moves_only_where_two_regimes_intervals_of_one_pair_lie_apart():
    rng = np.random.default_rng(8)
    serial = 30000 * rng.normal(1, 0.02, 40)
    same = pd.DataFrame({"serial:-": serial, "reactor:processes": 1.5 * serial * rng.normal(1, 0.02, 40)})
    assert not ratios_moved(same, list(same), [(0, 20), (20, 40)])
    assert not ratios_moved(same, list(same), [(0, 40)])  # one regime: nothing to compare
    moved = same.assign(**{"reactor:processes": same["reactor:processes"] * np.r_[np.ones(20), np.full(20, 0.9)]})
    assert ratios_moved(moved, list(moved), [(0, 20), (20, 40)])
    # a regime too short for an interval says nothing: the pair reads alike where it can be read
    assert not ratios_moved(moved, list(moved), [(0, 37), (37, 40)])
    # one contender and a ceiling: nothing but its share to read, so it is read per regime
    alone = pd.DataFrame({"serial:-": serial, "capacity:lockstep": 1.9 * serial})
    assert ratios_moved(alone, list(alone), [(0, 20), (20, 40)])


def _write_interpreters(folder, workers, per_label, gil="False"):
    """One paired job whose blocks ran on both interpreters: ``per_label`` maps (backend, variant) to a series."""
    writer = ResultsWriter(folder)
    base = {"scenario": "gym", "workers": workers, "num_envs": 15, "env_id": "CartPole-v1", "budget": "local",
            "seed": 0, "threads_per_worker": 1, "params": {"num_envs": 15}, "unit": "env_steps",
            "metadata": {"hostname": "h", "cpu_model": "m", "cpu_count": 2}}
    position = 0
    n = len(next(iter(per_label.values())))
    for cycle in range(n):
        for (backend, variant), series in per_label.items():
            ft = variant.endswith("ft")
            writer.append(make_row({**base, "backend": backend, "variant": variant,
                                    "interpreter": "3.13.5t" if ft else "3.11.7"},
                                   repetition=cycle, cycle=cycle, block=position, status="ok", units=1000,
                                   seconds=1000 / series[cycle], throughput=series[cycle], checksum=f"c{cycle}",
                                   gil_enabled=gil if ft else "True",
                                   extra={"paired": True, "block_rounds": 100, "host_core_ms": [5.0, 5.0],
                                          "host_steal": 0.0, "others_cpu_ms": 0.0}))
            position += 1


def test_the_free_threaded_section_reads_paired_jobs_with_both_interpreters(tmp_path):
    """Per backend: ratios to serial on its own interpreter and to itself on the default one, from per-cycle
    ratios; the threads executor's scaling read against serial ft within each job."""
    rng = np.random.default_rng(7)
    host = rng.uniform(0.6, 1.4, 30)  # the host's speed swings; the ratios must not
    serial = 50000 * host
    _write_interpreters(tmp_path / "w2", 2, {
        ("serial", "-"): serial, ("reactor", "threads"): 0.5 * serial,
        ("serial", "ft"): 0.7 * serial, ("reactor", "threads ft"): 0.7 * 1.6 * serial})
    _write_interpreters(tmp_path / "w1", 1, {
        ("serial", "-"): serial, ("serial", "ft"): 0.7 * serial, ("reactor", "threads ft"): 0.7 * 0.9 * serial})
    text = build_report([tmp_path], out=tmp_path / "report", figures=False).markdown.read_text()
    section = text[text.index("## Free-threaded Python, paired"):]
    threads = next(line for line in section.splitlines() if "| reactor_threads |" in line and "| 2 |" in line)
    cells = [c.strip() for c in threads.strip("|").split("|")]
    # default / serial 0.50, ft / serial ft 1.60, ft / default 2.24 (each with a zero-width interval), each with
    # the report's one rule's verdict
    assert cells[4:7] == ["0.50 [0.50, 0.50] (slower)", "1.60 [1.60, 1.60] (faster)",
                          "2.24 [2.24, 2.24] (faster)"], cells
    assert cells[8] == "False"
    serial_line = next(line for line in section.splitlines() if "| serial |" in line and "| 2 |" in line)
    assert "0.70 [0.70, 0.70] (slower)" in serial_line  # the interpreter's own single-thread cost
    assert "gym: reactor_threads@ft at workers=2: 1.78x its workers=1" in section
