"""The self-test as shipped (issue 47, items 3-5, 8): its A/A verdicts read from recorded cycles the way the report
reads any paired job (per regime, at the job's margin), the margin it measures (the 95th percentile of how far a job's
A/A interval lies beyond 1) stored per machine and used by paired jobs unless ``compare.margin`` says otherwise, the injected cost
measured apart from how it was computed, and what ``make selftest`` runs against what ``make bench-paired`` runs."""
from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
import time
from dataclasses import asdict
from pathlib import Path
from typing import Callable, Optional, Sequence

import numpy as np
import pytest

from harness import margin as machine
from harness import selftest
from harness.child import ExtraWork, ExtraWorkClock
from harness.cycles import COMPARE_FILE, CompareSettings
from harness.report import stats
from harness.report.resolution import opening_rows, table_rows
from harness.results import ResultsWriter, make_row

REPO = Path(__file__).resolve().parents[2]
BASE = {"scenario": "gym", "workers": 2, "num_envs": 15, "env_id": "CartPole-v1", "budget": "local", "seed": 0,
        "threads_per_worker": 1, "params": {"num_envs": 15}, "unit": "env_steps",
        "metadata": {"hostname": "box", "cpu_model": "Test CPU", "cpu_count": 2, "started_at": "2026-12-01T00:00"}}
SHIPPED = {k: getattr(CompareSettings(), k) for k in machine.PROCEDURE}
#: a paired job's compare.* settings as shipped (what `harness.cycles.run_compare` resolves its margin with)
JOB = asdict(CompareSettings())


def recorded_job(folder: Path, aa: Sequence[float], effects: dict[float, Sequence[float]],
                 ceiling: Optional[Sequence[float]] = None, margin: float = 0.01, source: str = "default",
                 compare: Optional[dict] = None, set_cycles: int = 0, cycle_s: float = 0.0,
                 started_at: Optional[Callable[[int, int], int]] = None, parts: Optional[dict] = None) -> Path:
    """A self-test job as `harness.cycles` writes it, with recorded cycles: serial at 1000/s, its copy at
    ``aa[c]`` x that, each effect copy at ``effects[e][c]`` x that, and the ceilings (``ceiling[c]`` x 2000/s);
    with ``set_cycles``, a new set of processes (``extra.epoch``) every that many cycles; with ``cycle_s``, each
    cycle ends ``cycle_s`` seconds of cycles after the last (``extra.cycles_s``); with ``started_at``, each row's
    place in its set's start order (``extra.started_at``) as ``started_at(epoch, copy)``; ``parts``: further
    ``extra`` fields every row records (a stored margin's parts, `harness.report.job_margin.Margin.row_fields`)."""
    writer = ResultsWriter(folder)
    n = len(aa)
    ceiling = ceiling if ceiling is not None else [1.0] * n
    residents = [("serial", 1, 0.0, [1.0] * n), ("serial", 2, 0.0, aa)]
    residents += [("serial", 3 + i, e, r) for i, (e, r) in enumerate(effects.items())]
    residents += [("capacity", 1, 0.0, [2 * c for c in ceiling])]
    block = 0
    for cycle in range(n):
        for backend, copy, share, factors in residents:
            tp = 1000.0 * float(factors[cycle])
            extra = {"paired": True, "block_rounds": 50, "stopped_by": "precision" if cycle == n - 1 else "",
                     "margin": margin, "margin_source": source, "precision_target": 0.05,
                     "epoch": cycle // set_cycles if set_cycles else 0}
            if cycle_s:
                extra["cycles_s"] = cycle_s * (cycle + 1)
            if started_at is not None:
                extra["started_at"] = started_at(extra["epoch"], copy)
            extra.update(parts or {})
            if share:
                extra.update({"extra_work": share, "extra_work_ms_per_round": 1.0})
            writer.append(make_row({**BASE, "backend": backend, "variant": "-", "copy": copy}, repetition=cycle,
                                   cycle=cycle, block=block, status="ok", units=1000, seconds=1000 / tp,
                                   throughput=tp, checksum=f"c{cycle}", extra=extra))
            block += 1
    settings = {**SHIPPED, **(compare or {}), "max_seconds": 240.0}
    (folder / COMPARE_FILE).write_text(json.dumps({**settings, "block_rounds": 50, "settings": settings,
                                                   "backends": ["serial:-", "serial:-#2"]}))
    return folder


def wiggle(n: int, level: float, spread: float = 0.004) -> list[float]:
    """n cycle ratios around ``level``: a fixed alternating pattern (no randomness), median exactly ``level``."""
    return [level + spread * (1 if i % 2 else -1) * (1 + i % 3) / 3 for i in range(n)]


SETTINGS = selftest.SelftestSettings(jobs=12, effects=[0.5])


def read(folder: Path) -> dict:
    return selftest.read_job(folder, SETTINGS)


# ---------------------------------------------------------------- A/A verdicts from recorded cycles


def test_an_aa_pair_that_stays_at_1_gives_no_verdict_and_an_offset_does(tmp_path: Path) -> None:
    calm = read(recorded_job(tmp_path / "calm", wiggle(30, 1.0), {0.5: wiggle(30, 1 / 1.5)}))
    assert selftest.job_word(calm["aa"]["regimes"], calm["margin"]) == stats.EQUIVALENT
    assert calm["aa"]["median"] == pytest.approx(1.0)
    assert (calm["margin"], calm["margin_source"]) == (0.01, "default")
    # the injected copy, named by its effect, is called slower
    assert calm["effect_0.5"]["name"] == "serial +50%"
    assert selftest.job_word(calm["effect_0.5"]["regimes"], calm["margin"]) == stats.SLOWER
    # a copy 3% faster in every cycle is a false verdict at a 1% margin, none at a 5% one
    off = read(recorded_job(tmp_path / "off", wiggle(30, 1.03), {0.5: wiggle(30, 1 / 1.5)}))
    assert selftest.job_word(off["aa"]["regimes"], 0.01) == stats.FASTER
    assert selftest.job_word(off["aa"]["regimes"], 0.05) == stats.EQUIVALENT
    assert off["aa"]["median"] == pytest.approx(1.03)


def test_an_aa_verdict_is_read_per_regime_where_the_ceiling_shifts(tmp_path: Path) -> None:
    """The report splits a job where the ceiling's series shifts and a ratio between contenders moves with it, and
    says a verdict per regime: a copy 6% faster in the second half only is a false verdict there, while over all
    cycles its interval holds 1. Without the ceiling resident (pooled cycles) the self-test would not see it."""
    aa = wiggle(20, 1.0) + wiggle(20, 1.06)
    job = read(recorded_job(tmp_path / "job", aa, {0.5: wiggle(40, 1 / 1.5)}, ceiling=[1.0] * 20 + [0.5] * 20))
    assert job["regimes"] == 2 and [r["cycles"] for r in job["aa"]["regimes"]] == [20, 20]
    assert [stats.verdict(r["low"], r["high"], 0.01) for r in job["aa"]["regimes"]] == [stats.EQUIVALENT,
                                                                                       stats.FASTER]
    assert not selftest.called(stats.verdict(job["aa"]["low"], job["aa"]["high"], 0.01))  # pooled: none
    assert selftest.job_word(job["aa"]["regimes"], 0.01) == stats.FASTER
    regimes = job["aa"]["regimes"]
    assert selftest.job_word([regimes[1], {**regimes[0], "low": 0.9, "high": 0.95}], 0.01) == "faster and slower"


def test_a_host_shift_that_moves_no_ratio_leaves_the_pairs_read_over_the_whole_job(tmp_path: Path) -> None:
    """The ceiling halves at cycle 20 while the copies read alike on both sides: the host shift is counted, the
    job is read whole (its A/A and effect intervals over all 40 cycles), as the report reads such a job."""
    job = read(recorded_job(tmp_path / "job", wiggle(40, 1.0), {0.5: wiggle(40, 1 / 1.5)},
                            ceiling=[1.0] * 20 + [0.5] * 20))
    assert (job["host_regimes"], job["regimes"]) == (2, 1)
    assert [r["cycles"] for r in job["aa"]["regimes"]] == [40]
    assert selftest.job_word(job["effect_0.5"]["regimes"], job["margin"]) == stats.SLOWER
    s = selftest.summarize([job], [], SETTINGS, {"cpu_model": "Test CPU", "cpu_count": 2})
    assert (s["host_shift_jobs"], s["split_jobs"]) == (1, 0)


def test_the_summary_measures_the_margin_and_counts_false_verdicts_out_of_sample(tmp_path: Path) -> None:
    levels = [1.0, 1.002, 0.998, 1.004, 0.996, 1.006, 0.994, 1.008, 0.992, 1.01, 0.99, 1.03]
    jobs = [read(recorded_job(tmp_path / f"job_{i:03d}", wiggle(30, lv, 0.001), {0.5: wiggle(30, 0.9)}))
            for i, lv in enumerate(levels)]
    s = selftest.summarize(jobs, [], SETTINGS, {"cpu_model": "Test CPU", "cpu_count": 2})
    # each job's clearance: how far its interval (+-0.1% at most around its level) lies beyond 1
    clear = [selftest.clearance(j["aa"]) for j in jobs]
    for lv, c in zip(levels, clear):
        assert (c == 0.0) if lv == 1.0 else (abs(lv - 1) - 0.0011 < c < abs(lv - 1)), (lv, c)
    clear = sorted(clear)  # 0 .. just under 0.01 (twice), just under 0.03
    # the 95th percentile of 12 clearances: 0.95 * 11 = 10.45 places it 45% of the way from the 11th to the 12th
    assert s["margin"]["value"] == pytest.approx(clear[10] + 0.45 * (clear[11] - clear[10]))
    assert 0.0175 < s["margin"]["value"] < 0.019 and s["margin"]["cleared"] == 11
    assert s["margin"]["offset_p95"] == pytest.approx(0.019)  # the medians' 95th percentile, beside it
    assert s["margin"]["jobs"] == 12
    assert s["margin"]["ran_with"] == [{"margin": 0.01, "margin_max": 0.01, "source": "default"}]
    # as run (margin 1%): only the copy 3% off is called
    assert (s["aa_false"]["as_run"]["k"], s["aa_false"]["as_run"]["n"]) == (1, 12)
    lo, hi = s["aa_false"]["as_run"]["low"], s["aa_false"]["as_run"]["high"]
    assert lo == pytest.approx(0.0021, abs=1e-4) and hi == pytest.approx(0.3848, abs=1e-4)  # Clopper-Pearson 1/12
    # leave-one-out: the 3% job read at the margin of the other eleven (at most 1%) is still called
    assert s["aa_false"]["measured_margin"]["k"] == 1
    assert s["aa_false"]["verdict"]["k"] == 12 - 1  # margin 0: every narrow interval off 1 is called
    # a 0.9 effect copy is detected in every job, named by its effect
    assert s["effects"]["0.5"]["detected"]["k"] == 12 and s["effects"]["0.5"]["name"] == "serial +50%"
    assert s["not_as_shipped"] == [] and s["stopped_by"]["precision"] == 12
    rows = opening_rows({**s, "stored": "stored"})
    assert rows[0][0].startswith("margin (gym workers=2)")  # the workload the margin was measured on
    assert "A/A false verdicts" in rows[1][0] and "1/12" in rows[1][1]
    assert rows[3][0].startswith("serial +50%")
    assert s["line"].startswith("What this machine resolves") and "serial +50% detected 12/12" in s["line"]


def test_the_start_order_of_the_aa_pair_is_read_from_where_each_was_started_not_from_the_set_s_parity(
        tmp_path: Path) -> None:
    """Shuffled start orders (`harness.cycles.start_orders`): which of the pair was started first is each row's
    ``extra.started_at``. Sets 0 and 2 started the copy first, set 1 serial first, and the copy reads +2% in set 1
    only: the split says "listed" (serial first) for set 1's 10 cycles, +2%, and "reversed" for the other 20."""
    aa = [1.02 if c // 10 == 1 else 1.0 for c in range(30)]

    def started_at(epoch: int, copy: int) -> int:
        first = 1 if epoch == 1 else 2  # which copy was started first in this set
        return 0 if copy == first else 5 + copy

    order = read(recorded_job(tmp_path / "job_000", aa, {0.5: wiggle(30, 0.9)}, set_cycles=10,
                              started_at=started_at))["aa_by_start_order"]
    assert (order["listed"]["cycles"], order["reversed"]["cycles"]) == (10, 20)
    assert order["listed"]["median"] == pytest.approx(1.02) and order["reversed"]["median"] == pytest.approx(1.0)


def test_the_aa_offset_is_read_per_start_order_and_a_shared_bias_is_summed_over_jobs(tmp_path: Path) -> None:
    """Sets of 10 cycles: the copy reads +2% in the sets started in the listed order (epochs 0, 2) and level in the
    reversed ones (1); over eight such jobs every median lies above 1, which a sign test calls a bias (p < 0.01),
    while jobs level in both orders show none."""
    aa = [1.02 if (c // 10) % 2 == 0 else 1.0 for c in range(30)]
    job = read(recorded_job(tmp_path / "job_000", aa, {0.5: wiggle(30, 0.9)}, set_cycles=10))
    order = job["aa_by_start_order"]
    assert (order["listed"]["cycles"], order["reversed"]["cycles"]) == (20, 10)
    assert order["listed"]["median"] == pytest.approx(1.02) and order["reversed"]["median"] == pytest.approx(1.0)
    jobs = [job] * 8
    b = selftest.summarize(jobs, [], SETTINGS, {"cpu_model": "Test CPU", "cpu_count": 2})["aa_bias"]
    assert (b["above_1"], b["jobs"]) == (8, 8) and b["sign_test_p"] < 0.01
    assert b["listed"]["mean_offset"] == pytest.approx(0.02) and b["reversed"]["mean_offset"] == pytest.approx(0.0)
    level = [read(recorded_job(tmp_path / f"lv_{i}", wiggle(30, 1.0 + (0.003 if i % 2 else -0.003), 0.001),
                               {0.5: wiggle(30, 0.9)}, set_cycles=10)) for i in range(8)]
    s = selftest.summarize(level, [], SETTINGS, {"cpu_model": "Test CPU", "cpu_count": 2})
    assert s["aa_bias"]["above_1"] == 4 and s["aa_bias"]["sign_test_p"] == pytest.approx(1.0)
    assert "A/A copy above 1 in 4/8 jobs" in s["line"]
    (row,) = [r for r in table_rows({**s, "stored": "stored"}) if r[0].startswith("A/A copy above 1")]
    assert row[1].startswith("4/8;") and "p=1" in row[2]


# ---------------------------------------------------------------- the margin, stored per machine


def test_an_offset_that_belongs_to_each_set_of_processes_is_measured_and_noise_alone_reads_none(
        tmp_path: Path) -> None:
    """Four sets of 12 cycles each: an A/A copy 2% off in alternate directions per set (an offset per set of
    processes, which its cycles cannot show) reads a set offset of about 2.3% (the sd of +-2%) and a spread far
    beyond the cycles' noise; the same cycles with every set at 1 read none."""
    def per_set(levels: list[float]) -> list[float]:
        return [lv * w for lv in levels for w in wiggle(12, 1.0)]

    offset = read(recorded_job(tmp_path / "offset", per_set([1.02, 0.98, 1.02, 0.98]), {0.5: wiggle(48, 0.9)},
                               set_cycles=12))
    calm = read(recorded_job(tmp_path / "calm", per_set([1.0] * 4), {0.5: wiggle(48, 0.9)}, set_cycles=12))
    assert [s["epoch"] for s in offset["aa"]["sets"]] == [0, 1, 2, 3]
    assert [s["cycles"] for s in offset["aa"]["sets"]] == [12] * 4
    assert offset["aa"]["sets"][0]["log_median"] == pytest.approx(math.log(1.02), abs=1e-3)
    s = selftest.summarize([offset], [], SETTINGS, {"cpu_model": "Test CPU", "cpu_count": 2})
    so = s["set_offsets"]
    assert so["jobs"] == 1 and so["sets_per_job"] == 4
    assert so["set_sd"] == pytest.approx(0.0233, rel=0.05) and so["chi2_per_df"] > 100 and so["p_value"] < 1e-6
    assert "A/A offset per set of processes about 2.3" in s["line"]
    assert any(r[0].startswith("A/A offset of one set of processes") and r[1].startswith("2.3")
               for r in table_rows(s))
    assert so["set_sd_typical"] == so["set_sd"]  # one job: the typical job is the mean
    # one set of one job far off (a process 19% slow for its life) moves the mean over jobs, not the typical job
    wild = read(recorded_job(tmp_path / "wild", per_set([1.02, 0.98, 0.81, 0.98]), {0.5: wiggle(48, 0.9)},
                             set_cycles=12))
    three = selftest.summarize([offset, wild, offset], [], SETTINGS, {"cpu_model": "Test CPU", "cpu_count": 2})
    assert three["set_offsets"]["set_sd_typical"] == pytest.approx(so["set_sd"])
    assert three["set_offsets"]["set_sd"] > 2 * so["set_sd"]
    quiet = selftest.summarize([calm], [], SETTINGS, {"cpu_model": "Test CPU", "cpu_count": 2})["set_offsets"]
    assert quiet["set_sd"] == 0.0 and quiet["chi2_per_df"] == pytest.approx(0.0, abs=1e-9)
    # one set per job (no respawn) and self-tests from before sets were read: nothing to say
    single = read(recorded_job(tmp_path / "single", wiggle(30, 1.0), {0.5: wiggle(30, 0.9)}))
    assert len(single["aa"]["sets"]) == 1
    assert selftest.summarize([single], [], SETTINGS, {"cpu_model": "Test CPU", "cpu_count": 2})["set_offsets"] \
        == {"jobs": 0}


def test_the_margin_covers_the_offsets_of_sets_where_every_aa_interval_held_1(tmp_path: Path, monkeypatch) -> None:
    """Ten A/A jobs of four sets each, 2% off in alternate directions per set, with quiet cycles: every job's
    interval holds 1 (its median lies between the sets, its interval spans them), so every clearance is 0, yet a
    job whose sets fell three to one would lie 1% off. The margin is the set part, z x the offset of one set /
    sqrt(4 sets); for sets of equal cycles and noise the DerSimonian-Laird offset is the sample standard deviation
    of the sets' log medians (here log 1.02 and log 0.98, twice each). Stored so, a paired job of the workload
    clears it. The same cycles read as one set per job (no respawn) give no set part: margin 0."""
    from scipy.stats import norm

    monkeypatch.setenv("REACTORBENCH_MACHINE_DIR", str(tmp_path / "machine"))
    meta = {"cpu_model": "Test CPU", "cpu_count": 2, "hostname": "box"}
    cycles = [lv * w for lv in [1.02, 0.98, 1.02, 0.98] for w in wiggle(12, 1.0)]
    jobs = [read(recorded_job(tmp_path / f"job_{i:03d}", cycles, {0.5: wiggle(48, 0.9)}, set_cycles=12))
            for i in range(10)]
    s = selftest.summarize(jobs, [], SETTINGS, meta)
    assert s["margin"]["clearances"] == [0.0] * 10 and s["margin"]["clearance_part"] == 0.0
    sd = np.std(np.log([1.02, 0.98, 1.02, 0.98]), ddof=1)
    expected = norm.ppf(0.975) * math.expm1(sd) / math.sqrt(4)  # 2.29%
    assert s["margin"]["sets_per_job"] == 4
    assert s["margin"]["set_part"] == pytest.approx(expected, rel=0.01)
    assert s["margin"]["value"] == s["margin"]["set_part"]
    assert s["aa_false"]["measured_margin"]["k"] == 0
    assert "or z x the offset per set / sqrt(4 sets): +-2.29%" in s["line"]
    assert "the larger of" in opening_rows({**s, "stored": "stored"})[0][0]
    assert selftest.store_margin(s, tmp_path / "a", SETTINGS).startswith("stored")
    stored = machine.machine_margin("gym", 2, meta)
    assert stored["margin"] == pytest.approx(expected, rel=0.01) and stored["set_part"] == stored["margin"]
    assert len(stored["set_chi2"]) == len(stored["clearances"]) == 10
    monkeypatch.setattr(machine, "machine_metadata", lambda: meta)
    assert machine.resolve_margin(None, "gym", 2, JOB)[0] == pytest.approx(expected, rel=0.01)
    one_set = [read(recorded_job(tmp_path / f"one_{i:03d}", cycles, {0.5: wiggle(48, 0.9)})) for i in range(10)]
    flat = selftest.summarize(one_set, [], SETTINGS, meta)
    assert flat["margin"]["value"] == 0.0 and math.isnan(flat["margin"]["set_part"])


def test_a_job_clears_the_set_part_taken_at_the_sets_it_ran(tmp_path: Path) -> None:
    """A stored margin's set part is z x tau / sqrt(sets) for the self-test's jobs' sets (8 here); a job that ran 4
    (stopped by its cap, as every job holding Ray is) clears that part x sqrt(2), one that ran 48 at most the
    clearances' part; a given margin, or one stored without its parts, is used as recorded."""
    from harness.report.job_margin import Margin

    stored = Margin(0.0135, "selftest 2026-12-07 (gym workers=2)", 0.005, 0.0135, 8.0)
    aa = wiggle(48, 1.016, 0.0005)  # an A/A offset of 1.6% with quiet cycles: a false call wherever the margin is below

    def job(name: str, set_cycles: int, margin: Margin) -> dict:
        return read(recorded_job(tmp_path / name, aa, {0.5: wiggle(48, 0.9)}, margin=margin.value,
                                 source=margin.source, set_cycles=set_cycles, parts=margin.row_fields()))

    four, eight, many = job("four", 12, stored), job("eight", 6, stored), job("many", 1, stored)
    assert (four["sets"], eight["sets"], many["sets"]) == (4, 8, 48)
    assert four["margin"] == pytest.approx(0.0135 * math.sqrt(2)) and four["margin_source"] == stored.source
    assert eight["margin"] == 0.0135
    assert many["margin"] == pytest.approx(0.0135 * math.sqrt(8 / 48)) and many["margin"] > 0.005
    assert selftest.job_word(selftest._regimes(four["aa"]), four["margin"]) == stats.EQUIVALENT
    assert selftest.job_word(selftest._regimes(eight["aa"]), eight["margin"]) == stats.FASTER
    given = job("given", 12, Margin(0.0135, "compare.margin"))
    assert given["margin"] == 0.0135 and given["margin_source"] == "compare.margin"
    # the report's line of each job says which sets its margin was taken at
    from harness.report.load import load_results
    from harness.report.paired import analyze_paired, shift_lines

    (line,) = shift_lines(analyze_paired(load_results([tmp_path / "four"]).rows))
    assert ("margin +-1.91% (selftest 2026-12-07 (gym workers=2); its set part at the 4 sets of processes the job "
            "ran (stored for 8))") in line
    (line,) = shift_lines(analyze_paired(load_results([tmp_path / "given"]).rows))
    assert "margin +-1.35% (compare.margin)" in line
    assert Margin(0.0135, "s", 0.005, 0.0135, 8.0).for_sets(8 * 100) == 0.005  # the clearances' part below
    assert Margin.from_row(stored.row_fields()) == stored


def test_the_sets_a_job_averages_over_weigh_each_set_by_its_cycles() -> None:
    from harness.report.job_margin import effective_sets

    assert effective_sets([0] * 15 + [1] * 15 + [2] * 15) == 3
    assert effective_sets([0] * 30 + [1] * 3) == pytest.approx(33 ** 2 / (30 ** 2 + 3 ** 2))  # about 1.2
    assert effective_sets([5] * 7) == 1 and math.isnan(effective_sets([]))


def test_sets_that_differ_only_by_their_cycles_noise_read_about_one_per_degree_of_freedom() -> None:
    """The set median's standard error (1.2533 x the scaled MAD / sqrt(cycles)) is what makes independent
    normal cycles read chi2 about 1 per degree of freedom: without the 1.2533 they would read about 1.57."""
    import pandas as pd

    from harness import set_offsets

    rng = np.random.default_rng(7)
    jobs = []
    for _ in range(300):
        r = pd.Series(np.exp(rng.normal(0.0, 0.03, 60)), index=np.arange(60))
        jobs.append(set_offsets.set_medians(r, {c: c // 15 for c in range(60)}))
    so = set_offsets.pooled(jobs)
    assert so["jobs"] == 300 and so["sets_per_job"] == 4
    assert 0.8 < so["chi2_per_df"] < 1.35
    assert so["set_sd"] < 0.006  # sets at one level: what is left is the estimate's own noise


def test_a_shipped_selftest_stores_the_margin_paired_jobs_then_use(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("REACTORBENCH_MACHINE_DIR", str(tmp_path / "machine"))
    nothing = "default: no self-test of gym workers=2 on this machine"
    assert machine.resolve_margin(None, "gym", 2, JOB)[:2] == (machine.DEFAULT_MARGIN, nothing)
    assert machine.resolve_margin(0.02, "gym", 2, JOB)[:2] == (0.02, "compare.margin")
    jobs = [read(recorded_job(tmp_path / f"job_{i:03d}", wiggle(30, 1 + 0.002 * i, 0.001), {0.5: wiggle(30, 0.9)}))
            for i in range(10)]
    s = selftest.summarize(jobs, [], SETTINGS, {"cpu_model": "Test CPU", "cpu_count": 2, "hostname": "box"})
    assert s["workload"] == "gym workers=2" and "(Test CPU, 2 CPUs, gym workers=2)" in s["line"]
    s["ended"] = "2026-12-01T10:00"
    said = selftest.store_margin(s, tmp_path, SETTINGS)
    meta = {"hostname": "box", "cpu_model": "Test CPU", "cpu_count": 2}
    assert said.startswith("stored as this machine's margin for gym workers=2") and machine.machine_file(meta).exists()
    assert machine.machine_margin("gym", 2, meta)["margin"] == pytest.approx(s["margin"]["value"])
    monkeypatch.setattr(machine, "machine_metadata", lambda: meta)
    assert machine.resolve_margin(None, "gym", 2, JOB)[:2] == (pytest.approx(s["margin"]["value"]),
                                                      "selftest 2026-12-01 (gym workers=2)")
    assert machine.resolve_margin(0.0, "gym", 2, JOB)[:2] == (0.0, "compare.margin")  # given, even 0, wins
    other = {**meta, "hostname": "elsewhere"}
    assert machine.machine_margin("gym", 2, other) is None  # another machine never reads it
    # another workload, or the same at another worker count, never reads gym's: the default, saying why
    assert machine.resolve_margin(None, "dqn", 2, JOB)[:2] == (machine.DEFAULT_MARGIN,
                                                      "default: no self-test of dqn workers=2 on this machine")
    assert machine.resolve_margin(None, "gym", 16, JOB)[0] == machine.DEFAULT_MARGIN
    # a job run by another procedure does not read it: other blocks, or another stop rule (a time-stopped job runs
    # long enough for its A/A interval to show offsets that the self-test's +-5% intervals covered)
    halved = {**JOB, "block_s": JOB["block_s"] / 2}
    assert machine.resolve_margin(None, "gym", 2, halved)[:2] == (
        machine.DEFAULT_MARGIN, f"default: the self-test of gym workers=2 on this machine ran another procedure: "
                                f"block_s {JOB['block_s']} (this job {JOB['block_s'] / 2})")
    timed = {**JOB, "precision": 1e-9}
    assert machine.resolve_margin(None, "gym", 2, timed)[1].endswith(f"precision {JOB['precision']} (this job 1e-09)")
    assert machine.resolve_margin(None, "gym", 2, {**JOB, "max_seconds": 60.0})[0] == pytest.approx(
        s["margin"]["value"])  # a shorter cap alone: the jobs that stop by precision run as shipped
    assert machine.resolve_margin(None, "gym", 2, {**JOB, "respawn_s": 0.0})[0] == machine.DEFAULT_MARGIN
    assert machine.resolve_margin(None, "gym", 2, {**JOB, "min_sets": 2})[1].endswith(
        f"min_sets {JOB['min_sets']} (this job 2)")
    assert machine.resolve_margin(None, "gym", 2, {**JOB, "start_order": "listed"})[1].endswith(
        f"start_order {JOB['start_order']} (this job listed)")


def test_a_margin_stored_before_a_procedure_setting_existed_reads_as_what_jobs_did_then(tmp_path, monkeypatch):
    """A record without ``min_sets`` was measured by jobs that stopped from their second set of processes on: it
    holds for such jobs, not for today's, which wait for eight."""
    monkeypatch.setenv("REACTORBENCH_MACHINE_DIR", str(tmp_path))
    meta = {"hostname": "box", "cpu_model": "Test CPU", "cpu_count": 2}
    monkeypatch.setattr(machine, "machine_metadata", lambda: meta)
    older = {k: v for k, v in SHIPPED.items() if k != "min_sets"}
    entry = {"margin": 0.012, "rule": machine.MARGIN_RULE, "source": "selftest 2026-12-05", "procedure": older}
    machine.machine_file(meta).parent.mkdir(parents=True, exist_ok=True)
    machine.machine_file(meta).write_text(json.dumps({"margins": {"gym workers=2": entry}}))
    assert machine.resolve_margin(None, "gym", 2, JOB)[:2] == (
        machine.DEFAULT_MARGIN, "default: the self-test of gym workers=2 on this machine ran another procedure: "
                                f"min_sets 2 (this job {JOB['min_sets']})")
    assert machine.resolve_margin(None, "gym", 2, {**JOB, "min_sets": 2})[:2] == (0.012, "selftest 2026-12-05 (gym workers=2)")
    # nor by jobs whose sets start in shuffled orders: a record without ``start_order`` started them listed
    oldest = {k: v for k, v in older.items() if k != "start_order"}
    entry["procedure"] = oldest
    machine.machine_file(meta).write_text(json.dumps({"margins": {"gym workers=2": entry}}))
    assert machine.resolve_margin(None, "gym", 2, {**JOB, "min_sets": 2})[1].endswith(
        "start_order listed (this job shuffled)")
    assert machine.resolve_margin(None, "gym", 2, {**JOB, "min_sets": 2, "start_order": "listed"})[0] == 0.012


def test_each_workload_keeps_its_own_margin(tmp_path: Path, monkeypatch) -> None:
    """A self-test of dqn stores dqn's margin beside gym's (neither replaces the other), and each paired job reads
    its own workload's."""
    monkeypatch.setenv("REACTORBENCH_MACHINE_DIR", str(tmp_path / "machine"))
    meta = {"cpu_model": "Test CPU", "cpu_count": 2, "hostname": "box"}
    monkeypatch.setattr(machine, "machine_metadata", lambda: meta)
    gym = [read(recorded_job(tmp_path / f"g_{i:03d}", wiggle(30, 1 + 0.001 * i, 0.001), {0.5: wiggle(30, 0.9)}))
           for i in range(10)]
    dqn = [read(recorded_job(tmp_path / f"d_{i:03d}", wiggle(30, 1 + 0.004 * i, 0.001), {0.5: wiggle(30, 0.9)}))
           for i in range(10)]
    for j in dqn:  # as a self-test run with scenario=dqn records it (its rows' scenario)
        j["scenario"] = "dqn"
    s_gym, s_dqn = (selftest.summarize(j, [], SETTINGS, meta) for j in (gym, dqn))
    assert s_dqn["workload"] == "dqn workers=2" and s_dqn["margin"]["value"] > s_gym["margin"]["value"]
    for s in (s_gym, s_dqn):
        assert selftest.store_margin(s, tmp_path, SETTINGS).startswith("stored")
    assert machine.resolve_margin(None, "gym", 2, JOB)[0] == pytest.approx(s_gym["margin"]["value"])
    assert machine.resolve_margin(None, "dqn", 2, JOB)[0] == pytest.approx(s_dqn["margin"]["value"])
    assert selftest.workload_of(gym + dqn) is None  # jobs of two workloads measure neither
    mixed = selftest.summarize(gym + dqn, [], SETTINGS, meta)
    assert selftest.store_margin(mixed, tmp_path, SETTINGS) == "not stored: the jobs recorded no single workload"


def test_a_workloads_margin_rests_on_the_a_a_jobs_of_its_recent_selftests(tmp_path: Path, monkeypatch) -> None:
    """Each self-test run as shipped adds its jobs' A/A clearances to those the workload's entry holds; the stored
    margin is the 95th percentile of the last POOLED_JOBS of them, never of one self-test alone; clearances measured
    under another shipped procedure are dropped, not pooled."""
    monkeypatch.setenv("REACTORBENCH_MACHINE_DIR", str(tmp_path / "machine"))
    meta = {"cpu_model": "Test CPU", "cpu_count": 2, "hostname": "box"}
    quiet = [read(recorded_job(tmp_path / f"q_{i:03d}", wiggle(30, 1.0, 0.001), {0.5: wiggle(30, 0.9)}))
             for i in range(10)]  # every A/A interval holds 1: clearance 0
    off = [read(recorded_job(tmp_path / f"o_{i:03d}", wiggle(30, 1.0 + 0.01 * (i + 1), 0.001), {0.5: wiggle(30, 0.9)}))
           for i in range(10)]  # each a further 1% off
    first = selftest.summarize(quiet, [], SETTINGS, meta)
    assert first["margin"]["value"] == 0.0 and first["margin"]["clearances"] == [0.0] * 10
    assert "+-0.00% over the last 10 A/A jobs" in selftest.store_margin(first, tmp_path / "a", SETTINGS)
    second = selftest.summarize(off, [], SETTINGS, meta)
    said = selftest.store_margin(second, tmp_path / "b", SETTINGS)
    pooled = np.array([0.0] * 10 + second["margin"]["clearances"])
    stored = machine.machine_margin("gym", 2, meta)
    assert stored["jobs"] == 20 and stored["margin"] == pytest.approx(np.quantile(pooled, 0.95))
    assert stored["margin"] < second["margin"]["value"]  # the quiet self-test's jobs count too
    assert f"+-{stored['margin'] * 100:.2f}% over the last 20 A/A jobs" in said
    assert stored["selftests"] == [{"selftest": str(tmp_path / n), "jobs": 10} for n in ("a", "b")]
    assert stored["latest"]["margin"] == pytest.approx(second["margin"]["value"])
    for k in range(3):  # 50 jobs stored in all: the oldest ten drop out
        selftest.store_margin(second, tmp_path / f"c{k}", SETTINGS)
    stored = machine.machine_margin("gym", 2, meta)
    assert stored["jobs"] == selftest.POOLED_JOBS == 40 and stored["clearances"] == second["margin"]["clearances"] * 4
    # the folders whose jobs are in the pool: the first self-test's fell out
    assert [r["selftest"] for r in stored["selftests"]] == [str(tmp_path / n) for n in ("b", "c0", "c1", "c2")]
    # clearances stored under another shipped procedure are not pooled with today's
    entry = json.loads(machine.machine_file(meta).read_text())
    entry["margins"]["gym workers=2"]["procedure"]["respawn_s"] = 99.0
    machine.machine_file(meta).write_text(json.dumps(entry))
    selftest.store_margin(first, tmp_path / "d", SETTINGS)
    stored = machine.machine_margin("gym", 2, meta)
    assert stored["jobs"] == 10 and stored["margin"] == 0.0
    assert stored["selftests"] == [{"selftest": str(tmp_path / "d"), "jobs": 10}]


def test_a_selftest_not_run_as_shipped_or_too_short_stores_nothing(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("REACTORBENCH_MACHINE_DIR", str(tmp_path / "machine"))
    jobs = [read(recorded_job(tmp_path / f"job_{i:03d}", wiggle(30, 1.0), {0.5: wiggle(30, 0.9)},
                              compare={"precision": 1e-9})) for i in range(10)]
    s = selftest.summarize(jobs, [], SETTINGS, {"cpu_model": "Test CPU", "cpu_count": 2, "hostname": "box"})
    assert s["not_as_shipped"] == ["compare.precision=1e-09 (shipped: 0.05)"] and "NOT as shipped" in s["line"]
    assert selftest.store_margin(s, tmp_path, SETTINGS).startswith("not stored: the jobs did not run as shipped")
    few = selftest.summarize(jobs[:3], [], selftest.SelftestSettings(effects=[0.5], residents=[]), s["machine"])
    assert "without the ceiling resident(s) capacity_lockstep, capacity" in few["not_as_shipped"]
    shipped = [read(recorded_job(tmp_path / f"ok_{i}", wiggle(30, 1.0), {0.5: wiggle(30, 0.9)})) for i in range(3)]
    s3 = selftest.summarize(shipped, [], SETTINGS, s["machine"])
    assert selftest.store_margin(s3, tmp_path, SETTINGS) == "not stored: 3 jobs (at least 10 set a machine's margin)"
    assert not (tmp_path / "machine").exists()


def test_only_jobs_run_as_shipped_cap_included_store_a_margin(tmp_path: Path, monkeypatch) -> None:
    """A self-test may cap each job at a selftest.seconds shorter than the ``compare.max_seconds`` (240) that
    shipped paired jobs run up to: a job that stopped by the precision rule ran as shipped whatever its cap, one
    stopped by a shorter cap did not, and then no margin is stored, saying how many jobs and which cap."""
    monkeypatch.setenv("REACTORBENCH_MACHINE_DIR", str(tmp_path / "machine"))
    shipped_cap = CompareSettings().max_seconds
    record = lambda stop, cap: {"stopped_by": stop, "compare": {**SHIPPED, "max_seconds": cap}}  # noqa: E731
    # synthetic job records as `read_job` writes them into selftest.json
    assert selftest.not_as_shipped([record("precision", 60.0)] * 10, SETTINGS) == []
    assert selftest.not_as_shipped([record("time", shipped_cap)] * 10, SETTINGS) == []
    assert selftest.not_as_shipped([record("time", 2 * shipped_cap)] * 10, SETTINGS) == []
    mixed = [record("precision", 60.0)] * 7 + [record("time", 60.0)] * 2 + [record("", 30.0)]
    assert selftest.cut_short(mixed) == {30.0: 1, 60.0: 2}
    assert selftest.not_as_shipped(mixed, SETTINGS) == [
        f"1 of 10 jobs stopped by the 30-s cap (compare.max_seconds=30), shorter than the shipped {shipped_cap:g} s,"
        " not by the precision rule",
        f"2 of 10 jobs stopped by the 60-s cap (compare.max_seconds=60), shorter than the shipped {shipped_cap:g} s,"
        " not by the precision rule"]
    assert selftest.not_as_shipped([{"stopped_by": "time", "compare": dict(SHIPPED)}], SETTINGS) == []  # no cap
    # through the summary and store_margin: ten recorded jobs, all stopped by precision under a 60-s cap: stored
    jobs = [read(recorded_job(tmp_path / f"job_{i:03d}", wiggle(30, 1 + 0.002 * i, 0.001), {0.5: wiggle(30, 0.9)}))
            for i in range(10)]
    machine_meta = {"cpu_model": "Test CPU", "cpu_count": 2, "hostname": "box"}
    for j in jobs:
        j["compare"]["max_seconds"] = 60.0
    assert [j["stopped_by"] for j in jobs] == ["precision"] * 10
    ok = selftest.summarize(jobs, [], SETTINGS, machine_meta)
    assert ok["not_as_shipped"] == []
    assert selftest.store_margin(ok, tmp_path, SETTINGS).startswith("stored")
    machine.machine_file(machine_meta).unlink()
    # three of them stopped by the 60-s cap instead: not stored, and the line says why
    for j in jobs[:3]:
        j["stopped_by"] = "time"
    cut = selftest.summarize(jobs, [], SETTINGS, machine_meta)
    why = (f"3 of 10 jobs stopped by the 60-s cap (compare.max_seconds=60), shorter than the shipped "
           f"{shipped_cap:g} s, not by the precision rule")
    assert cut["not_as_shipped"] == [why] and f"NOT as shipped: {why}" in cut["line"]
    assert selftest.store_margin(cut, tmp_path, SETTINGS) == f"not stored: the jobs did not run as shipped ({why})"
    assert not machine.machine_file(machine_meta).exists()


def test_a_stored_margin_outside_its_range_or_unreadable_is_not_used(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("REACTORBENCH_MACHINE_DIR", str(tmp_path))
    meta = {"hostname": "box", "cpu_model": "Test CPU", "cpu_count": 2}
    monkeypatch.setattr(machine, "machine_metadata", lambda: meta)
    path = machine.machine_file(meta)
    rule = machine.MARGIN_RULE
    entry = lambda **e: json.dumps({"margins": {"gym workers=2": e}})  # noqa: E731
    for text in ("not json", entry(margin=0.9, rule=rule, procedure=SHIPPED),
                 entry(margin="nan", rule=rule, procedure=SHIPPED), json.dumps({}),
                 entry(margin=0.02, procedure=SHIPPED),  # stored by an older rule
                 json.dumps({"margin": 0.002, "rule": rule})):  # stored before margins were kept per workload
        path.write_text(text)
        assert machine.resolve_margin(None, "gym", 2, JOB)[0] == machine.DEFAULT_MARGIN
    path.write_text(entry(margin=0.004, rule="clearance, read regimes", procedure=SHIPPED))  # the percentile alone
    assert machine.resolve_margin(None, "gym", 2, JOB)[:2] == (
        machine.DEFAULT_MARGIN, "default: the self-test of gym workers=2 on this machine stored its margin by an "
                                "older rule (clearance, read regimes); make selftest measures it again")
    path.write_text(entry(margin=0.004, rule=rule, source="selftest 2026-12-05"))  # no procedure recorded
    assert machine.resolve_margin(None, "gym", 2, JOB)[:2] == (
        machine.DEFAULT_MARGIN, "default: the self-test of gym workers=2 on this machine ran another procedure: its "
                                "procedure (not recorded)")
    path.write_text(entry(margin=0.004, rule=rule, source="selftest 2026-12-05", procedure=SHIPPED))
    assert machine.resolve_margin(None, "gym", 2, JOB)[:2] == (0.004, "selftest 2026-12-05 (gym workers=2)")
    assert re.fullmatch(r"[a-z0-9.-]+", machine.machine_id(meta)) and "test-cpu" in machine.machine_id(meta)


def test_the_default_margin_is_written_once() -> None:
    """One default: `harness.margin.DEFAULT_MARGIN`; the settings leave the margin unset (resolved per machine)."""
    assert CompareSettings().margin is None
    from harness.compare import CompareRanges

    assert CompareRanges().margin is None
    hits = []
    for path in [*REPO.glob("harness/**/*.py"), REPO / "conf" / "compare.yaml"]:
        text = path.read_text()
        hits += [f"{path.name}: {line.strip()}" for line in text.splitlines()
                 if re.search(r"margin\w*\s*[:=].*\b0\.01\b", line, re.IGNORECASE)]
    assert hits == ["margin.py: DEFAULT_MARGIN = 0.01"], hits


# ---------------------------------------------------------------- what make selftest runs is what ships


def _make_n(target: str, *assignments: str) -> str:
    stamp = "/nonexistent/installed"  # `-o` keeps make from running the install for this stamp
    out = subprocess.run(["make", "-n", "--no-print-directory", "-o", stamp, f"STAMP={stamp}", target, *assignments],
                         cwd=REPO, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make")
def test_make_selftest_runs_jobs_as_make_bench_paired_runs_them() -> None:
    paired = next(line for line in _make_n("bench-paired-jobs").splitlines() if "scenario=gym" in line)
    shipped = dict(re.findall(r"(compare\.\w+)=(\S+)", paired))
    shipped_backends = re.search(r"backends=\[([^\]]+)\]", paired).group(1).split(",")
    line = next(x for x in _make_n("selftest").splitlines() if "harness selftest" in x)
    args = dict(re.findall(r'"?([\w.]+)=([^" ]+)"?', line))
    # the same stop rule and the ceilings bench-paired holds; nothing else of compare.* set (respawn, margin shipped)
    assert args["compare.precision"] == shipped["compare.precision"]
    assert float(shipped["compare.precision"]) == CompareSettings().precision
    assert float(shipped["compare.max_seconds"]) == CompareSettings().max_seconds == selftest.SelftestSettings().seconds
    ceilings = [b for b in shipped_backends if b.startswith("capacity")]
    assert args["selftest.residents"].strip("[]").split(",") == ceilings == list(selftest.SHIPPED_RESIDENTS)
    assert not [k for k in args if k.startswith("compare.") and k != "compare.precision"]
    # the cap too: a job stopped by a shorter one did not run as shipped, and then no margin would be stored
    assert float(args["selftest.seconds"]) == float(shipped["compare.max_seconds"])
    # the issue's long targets are documented commands of the same target
    as_shipped = _make_n("selftest", "SELFTEST_JOBS=40", "SELFTEST_SECONDS=240")
    assert "selftest.jobs=40 selftest.seconds=240" in as_shipped and "compare.precision=0.05" in as_shipped


def test_a_job_list_puts_the_pair_and_effects_first_then_the_residents() -> None:
    settings = selftest.SelftestSettings(effects=[0.02, 0.05])
    cmd = selftest.compare_command(settings, ["workers=2", "compare.precision=0.05"], Path("/tmp/x"))
    assert "backends=[serial,serial,serial,serial,capacity_lockstep,capacity]" in cmd
    assert "compare.extra_work=[0,0,0.02,0.05,0,0]" in cmd and "compare.max_seconds=240" in cmd
    assert not [a for a in cmd if a.startswith(("compare.respawn_s", "compare.margin"))]
    with pytest.raises(ValueError, match="compare.max_seconds is set by the self-test"):
        selftest.parse_args(["compare.max_seconds=5"])
    with pytest.raises(ValueError, match="selftest.residents"):
        selftest.parse_args(["backends=[serial,reactor]"])
    assert selftest.parse_args(["selftest.residents=[]"])[0].residents == []
    assert selftest.main(["selftest.jobs=1", "nosuch=1"]) == 2  # refused by composition before any job ran
    assert selftest.standalone_command(settings, ["workers=2", "compare.precision=0.05"], Path("/tmp/x"))[3:4] == \
        ["workers=2"]


def test_each_job_of_a_self_test_has_its_own_seed() -> None:
    """A paired job draws its start orders and block orders from its seed: the self-test's jobs must not all repeat
    one seed's orders (they would lean the same way), so job i runs the seed passed (0 by default) plus i."""
    settings = selftest.SelftestSettings()
    seeds = [[a for a in selftest.compare_command(settings, passed, Path("/tmp/x"), i) if a.startswith("seed=")]
             for passed, i in ((["workers=2"], 0), (["workers=2"], 7), (["seed=100", "workers=2"], 3))]
    assert seeds == [["seed=0"], ["seed=7"], ["seed=103"]]
    from harness.cycles import start_orders
    keys = ["serial", "serial#2", "serial#3", "capacity_lockstep", "capacity"]
    firsts = {next(start_orders(keys, "shuffled", seed))[0] for seed in range(20)}
    assert len(firsts) > 1  # so the jobs' first places differ


def test_a_clearance_is_how_far_an_interval_lies_beyond_1_in_the_regime_farthest_off() -> None:
    """The smallest margin at which the report's rule gives no verdict: 0 where every regime's interval holds 1."""
    def reading(*regimes):
        return {"regimes": [{"low": lo, "high": hi} for lo, hi in regimes]}

    assert selftest.clearance(reading((0.98, 1.01), (0.99, 1.03))) == 0.0
    assert selftest.clearance(reading((0.98, 1.01), (1.02, 1.05))) == pytest.approx(0.02)
    assert selftest.clearance(reading((0.95, 0.97), (1.01, 1.04))) == pytest.approx(0.03)
    assert selftest.clearance(reading((math.nan, math.nan))) == 0.0  # too few cycles: no interval, no verdict
    for lo, hi in ((0.95, 0.97), (1.02, 1.05)):  # at that margin the rule says nothing; just below, it calls
        m = selftest.clearance(reading((lo, hi)))
        assert not selftest.called(selftest.job_word([{"low": lo, "high": hi}], m + 1e-12))
        assert selftest.called(selftest.job_word([{"low": lo, "high": hi}], m - 1e-6))


# ---------------------------------------------------------------- long jobs read as shorter ones


def test_a_long_job_reads_as_the_shorter_job_a_smaller_cap_would_have_stopped(tmp_path: Path) -> None:
    """60 cycles of 2 s: the A/A copy is level for the first 30 (60 s) and 10% faster after. Read whole, its
    median is off; read at 60 s it is the first 30 cycles (the first whose end reaches 60 s), stopped by time, and level.
    The cut never leaves fewer cycles than the job's min_cycles; rows without ``cycles_s`` are refused."""
    aa = wiggle(30, 1.0) + wiggle(30, 1.1)
    job = recorded_job(tmp_path / "st" / "job_000", aa, {0.5: wiggle(60, 1 / 1.5)}, cycle_s=2.0)
    whole, short = read(job), selftest.read_job(job, SETTINGS, at_seconds=60)
    assert whole["cycles"] == 60 and whole["aa"]["median"] > 1.04
    assert short["cycles"] == 30 and short["stopped_by"] == "time" and short["compare"]["max_seconds"] == 60
    assert not selftest.called(short["aa"]["verdict"]) and abs(short["aa"]["median"] - 1) < 0.005
    assert selftest.read_job(job, SETTINGS, at_seconds=3)["cycles"] == SHIPPED["min_cycles"]
    assert selftest.read_job(job, SETTINGS, at_seconds=500)["stopped_by"] == "precision"  # ended sooner: as it ran
    # the whole self-test read as 60-s jobs: a file beside selftest.json, which stays as it was
    s = selftest.summarize([whole], [], SETTINGS, {"cpu_model": "Test CPU", "cpu_count": 2})
    (tmp_path / "st" / selftest.SELFTEST_FILE).write_text(json.dumps({**s, "per_job": [whole]}, default=str))
    before = (tmp_path / "st" / selftest.SELFTEST_FILE).read_text()
    assert selftest.main(["--reanalyze", str(tmp_path / "st"), "--at-seconds", "60"]) == 0
    at60 = json.loads((tmp_path / "st" / selftest.shorter_file(60)).read_text())
    assert at60["per_job"][0]["cycles"] == 30 and at60["aa_false"]["as_run"]["k"] == 0
    assert (tmp_path / "st" / selftest.SELFTEST_FILE).read_text() == before
    assert selftest.main(["--reanalyze", str(tmp_path / "st"), "--at-seconds", "-1"]) == 2
    old = recorded_job(tmp_path / "old" / "job_000", wiggle(30, 1.0), {0.5: wiggle(30, 1 / 1.5)})
    with pytest.raises(ValueError, match="cycles_s"):
        selftest.read_job(old, SETTINGS, at_seconds=60)


# ---------------------------------------------------------------- the injected cost, measured apart


class _PausingClock:
    """A wrapped clock whose every fourth tick pauses 30 ms (a paired job's wait for its next block)."""

    def __init__(self) -> None:
        self.ticks = 0
        self.begun = False
        self.paused_s = 0.0  # the last tick's pause, as long as it really took

    def begin(self) -> None:
        self.begun = True

    def tick(self) -> None:
        self.ticks += 1
        self.paused_s = 0.0
        if self.ticks % 4 == 0:
            t0 = time.perf_counter()
            time.sleep(0.03)
            self.paused_s = time.perf_counter() - t0


def test_extra_work_waits_the_asked_share_of_each_rounds_own_time_measured_around_the_call() -> None:
    """Rounds of known lengths (2, 4 and 6 ms of sleep, measured here); what each tick of the wrapped clock adds is
    measured here around the call, less the wrapped clock's own pause, not read back from the wrapper's fields.
    The warm-up rounds are not charged, and a pause inside the wrapped tick (between two blocks) is not counted as
    round time. The wait ends at its target, so a round never gets less than its share; above it, only a late
    clock read (or a preemption at the end) adds, and the median ratio allows 2 points for that."""
    share, warmup = 0.25, 3
    inner = _PausingClock()
    extra = ExtraWork(share, warmup_rounds=warmup)
    clock = ExtraWorkClock(inner, extra)
    clock.begin()
    assert inner.begun
    ratios, works, added = [], [], []
    for i in range(warmup + 24):
        t0 = time.perf_counter()
        time.sleep((2, 4, 6)[i % 3] * 1e-3)
        t1 = time.perf_counter()
        clock.tick()
        t2 = time.perf_counter()
        if i >= warmup:
            works.append(t1 - t0)
            added.append(t2 - t1 - inner.paused_s)
            if not inner.paused_s:
                ratios.append((t2 - t1) / (t1 - t0))
    # the wait is at least its share (of a round the wrapper measures a little longer than here); beyond it, only a
    # late return (a preemption at its end: a loaded host) adds
    assert min(ratios) >= share * 0.999
    assert float(np.median(ratios)) < share + 0.02, ratios
    fields = extra.fields()
    assert fields["extra_work"] == share
    assert fields["extra_work_rounds"] == 24  # the timed rounds only: the warm-up spends nothing
    # the rounds' own time, as measured here: a pause inside the wrapped tick (30 ms, every fourth) is not in it
    assert fields["extra_work_round_ms"] == pytest.approx(np.mean(works) * 1e3, rel=0.1)
    # what it says it spent is what was added around its calls, and at least the share of the rounds' time
    assert fields["extra_work_ms_per_round"] == pytest.approx(np.mean(added) * 1e3, rel=0.1)
    assert fields["extra_work_ms_per_round"] >= share * fields["extra_work_round_ms"] * 0.999
    assert extra.fields()["extra_work_rounds"] == 0  # each row counts its own rounds


def test_no_share_goes_through_the_same_calls_and_waits_nothing() -> None:
    """A resident beside an injected one is wrapped with share 0 (`harness.child.with_extra_work`): it counts its
    rounds as the injected one does, and what it adds is one clock read, not a share of the round."""
    extra = ExtraWork(0.0, warmup_rounds=0)
    clock = ExtraWorkClock(_PausingClock(), extra)
    clock.begin()
    for _ in range(3):
        time.sleep(0.002)
        clock.tick()
    fields = extra.fields()
    assert fields["extra_work"] == 0 and fields["extra_work_rounds"] == 3
    assert fields["extra_work_ms_per_round"] < 0.05 * fields["extra_work_round_ms"]


# ---------------------------------------------------------------- end to end: a 50% slowdown is detected


def test_the_selftest_detects_an_injected_50_percent_slowdown_end_to_end(tmp_path: Path) -> None:
    """One self-test job, run as the command runs it, with a stored margin for this machine: the job records that
    margin and its source, and the copy that spends 50% more per round is called slower (through the rows, the
    report's reading and the verdict: the test fails where any of them loses the effect). 40 cycles at least: with
    20, under the other test worker's load, the ratios drifted enough in about one run in five for the dependence
    correction to find too few cycles for an interval."""
    import os
    import sys

    stored = tmp_path / "machine"
    stored.mkdir()
    meta = {k: v for k, v in machine.machine_metadata().items() if k in ("hostname", "cpu_model", "cpu_count")}
    # measured by the procedure this job runs (blocks of 200 rounds, time-stopped after 40 cycles or more), else the
    # job would not use it
    entry = {"margin": 0.037, "rule": machine.MARGIN_RULE, "source": "selftest 2026-12-01",
             "procedure": {**SHIPPED, "block_rounds": 200, "precision": 1e-9, "min_cycles": 40}}
    (stored / f"{machine.machine_id(meta)}.json").write_text(json.dumps({"margins": {"gym workers=1": entry}}))
    out = tmp_path / "st"
    done = subprocess.run([sys.executable, "-m", "harness", "selftest", "selftest.jobs=1", "selftest.seconds=1",
                           "selftest.effects=[0.5]", f"selftest.out={out}", "scenario=gym", "budget=smoke",
                           "budget.warmup_rounds=3", "workers=1", "compare.block_rounds=200",
                           "compare.precision=1e-9", "compare.min_cycles=40", "selftest.residents=[]"],
                          cwd=REPO, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "REACTORBENCH_MACHINE_DIR": str(stored)})
    assert done.returncode == 0, done.stderr
    s = json.loads((out / selftest.SELFTEST_FILE).read_text())
    (job,) = s["per_job"]
    assert (job["margin"], job["margin_source"]) == (0.037, "selftest 2026-12-01 (gym workers=1)")
    effect = job["effect_0.5"]
    assert effect["cycles"] >= 10 and effect["extra_work_ms_per_round"] > 0 and effect["extra_work_clock"] == "wall time"
    assert effect["median"] < 0.85  # 1 / 1.5 = 0.667 expected
    assert selftest.job_word(effect["regimes"], job["margin"]) == stats.SLOWER, effect
    assert s["effects"]["0.5"]["detected"]["k"] == 1 and "serial +50% detected 1/1" in done.stdout, done.stdout
    assert "not stored" in done.stdout, done.stdout  # one job, block_rounds set: the stored margin stays
    assert json.loads((stored / f"{machine.machine_id(meta)}.json").read_text())["margins"] == {"gym workers=1": entry}
    again = selftest.reanalyze(out)
    # its rows say when each cycle ended, so it also reads as a shorter job: never fewer than min_cycles (40)
    short = selftest.reanalyze(out, at_seconds=1e-3)["per_job"][0]
    assert short["cycles"] == 40, (short["cycles"], job["cycles"], short["stopped_by"])
    same = lambda a, b: json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)  # noqa: E731 NaN-tolerant
    assert same(again["aa_false"], s["aa_false"]), (again["aa_false"], s["aa_false"])
    assert same(again["per_job"][0]["effect_0.5"], effect), (again["per_job"][0]["effect_0.5"], effect)


# ---------------------------------------------------------------- the self-test's report


def test_the_report_of_a_selftest_opens_with_what_the_machine_resolves(tmp_path: Path) -> None:
    """Its first section is the margin, the A/A false rate and each effect by name, not the A/A pairs as an answer;
    a report of other folders that holds a self-test keeps the answer first."""
    from harness.report.build import make_report
    from harness.report.compose import sections

    out = tmp_path / "st"
    jobs = [read(recorded_job(out / f"job_{i:03d}", wiggle(30, 1.0 + 0.002 * i, 0.001), {0.5: wiggle(30, 0.9)}))
            for i in range(3)]
    s = selftest.summarize(jobs, [], SETTINGS, {"cpu_model": "Test CPU", "cpu_count": 2})
    (out / selftest.SELFTEST_FILE).write_text(json.dumps({**s, "per_job": jobs}, default=str))
    first = [x for x in sections(make_report([out], figures=False)) if x is not None][0]
    assert first.title == "What this machine can resolve"
    assert first.intro.startswith("margin +-") and "serial +50% detected 3/3" in first.intro
    assert first.content.rows[0][0].startswith("margin") and "A/A false verdicts" in first.content.rows[1][0]
    # a run that holds a self-test among its folders: the answer first, what the machine resolves after it
    titles = [x.title for x in sections(make_report([tmp_path], figures=False)) if x is not None]
    assert titles[0] == "The answer" and "What this machine can resolve" in titles[1:]


def test_a_selftest_of_an_older_version_still_renders_with_its_floor() -> None:
    from harness.report.resolution import table_rows

    pct = {"k": 1, "n": 30, "rate": 1 / 30, "low": 0.001, "high": 0.17}
    old = {"floor": 0.0088, "aa_false": {"verdict": pct, "verdict_independent": pct, "verdict_bootstrap": pct},
           "aa_half_width_median": 0.046, "settings": {"seconds": 60}, "effects": {"0.03": {"detected": pct}}}
    rows = table_rows(old)
    assert rows[0][:2] == ["floor (margin a verdict must clear)", "0.88%"] and "--reanalyze" in rows[0][2]
    assert rows[1][:2] == ["+3% injected: detected (called slower)", "1/30 = 3% [0%, 17%]"]
