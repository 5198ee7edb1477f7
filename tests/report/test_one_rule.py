"""One rule decides (docs/report.md, "Intervals that keep their promise"): every table that says faster, slower,
equivalent, no clear difference or too few cycles says it through `harness.report.intervals.verdict` with the
job's margin, and the leader of a paired job is chosen by the statistic its lead is printed in."""
from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence

import numpy as np
import pytest

from harness.report.answer import answers
from harness.report.build import make_report
from harness.report.documents import to_markdown
from harness.report.freethreaded import ft_paired_table
from harness.report.intervals import median_interval
from harness.report.paired import leader_and_runner_up
from harness.report.tables import against_serial_table, verdict_lines
from harness.results import ResultsWriter, make_row

BASE = {"scenario": "gym", "workers": 2, "num_envs": 15, "env_id": "CartPole-v1", "budget": "local", "seed": 0,
        "threads_per_worker": 1, "params": {"num_envs": 15}, "unit": "env_steps",
        "metadata": {"hostname": "box", "cpu_model": "Test CPU", "cpu_count": 2, "started_at": "2026-01-01T00:00"}}


def paired_job(folder: Path, series: dict[tuple[str, str], Sequence[float]], margin: Optional[float] = None,
               interpreters: Optional[dict[tuple[str, str], str]] = None, workers: int = 2,
               extras: Optional[dict[tuple[str, str], dict]] = None) -> None:
    """A paired job whose blocks have exactly these throughputs, cycle by cycle (one series per backend); ``extras``:
    more of a backend's rows' ``extra``."""
    writer = ResultsWriter(folder)
    n = len(next(iter(series.values())))
    block = 0
    for cycle in range(n):
        for (backend, variant), values in series.items():
            tp = float(values[cycle])
            extra = {"paired": True, "block_rounds": 50, "stopped_by": "time" if cycle == n - 1 else "",
                     **(extras or {}).get((backend, variant), {})}
            if margin is not None:
                extra["margin"] = margin
            interp = (interpreters or {}).get((backend, variant))
            row = {**BASE, "backend": backend, "variant": variant, "workers": workers}
            if interp:
                row["interpreter"] = interp
            writer.append(make_row(row, repetition=cycle, cycle=cycle, block=block, status="ok", units=1000,
                                   seconds=1000 / tp, throughput=tp, checksum=f"c{cycle}", extra=extra))
            block += 1


def test_the_leader_is_chosen_by_the_statistic_its_lead_is_printed_in(tmp_path: Path) -> None:
    # serial has the higher median block throughput (1000 against 990), the reactor the higher median per-cycle
    # ratio (1.1): the answer names the reactor, and its lead over serial is the median of per-cycle ratios
    serial = [100, 1000, 100, 1000, 100, 1000, 100, 1000, 100, 1000, 1000]
    reactor = [200, 990, 200, 990, 200, 990, 200, 990, 200, 1100, 990]
    assert np.median(serial) > np.median(reactor)
    paired_job(tmp_path / "job", {("serial", "-"): serial, ("reactor", "processes"): reactor})
    rep = make_report([tmp_path], figures=False)
    (a,) = answers(rep)
    (part,) = a.parts
    assert (part.leader, part.runner_up) == ("reactor:processes", "serial:-")
    assert (part.lead.numerator, part.lead.denominator) == ("reactor:processes", "serial:-")
    assert part.lead.median == pytest.approx(1.1) and part.lead.median >= 1
    assert part.winner is None  # [0.99, 2] holds 1


def test_the_leader_beats_every_other_head_to_head_where_one_does() -> None:
    import pandas as pd

    t = pd.DataFrame({"a": [1.0, 1.0, 1.0], "b": [1.2, 1.2, 0.5], "c": [1.1, 1.3, 1.3]})
    # medians of per-cycle ratios: c/a 1.3, c/b 1.08 (c beats both), b/a 1.2
    assert leader_and_runner_up(t, ["a", "b", "c"]) == ("c", "b")
    assert leader_and_runner_up(t, ["a"]) == ("a", None)


def test_too_few_cycles_are_said_so_never_noise(tmp_path: Path) -> None:
    paired_job(tmp_path / "job", {("serial", "-"): [100, 101, 99, 100], ("reactor", "processes"): [150, 151, 149, 150]})
    rep = make_report([tmp_path], figures=False)
    (a,) = answers(rep)
    who = a.cells()[1]
    assert who.startswith("too few cycles (4) to tell reactor from serial"), who
    md = to_markdown(rep)
    assert "within noise" not in md and "too few cycles" in md
    assert any("too few cycles (4)" in line for line in verdict_lines(rep))
    rows = [r for r in against_serial_table(rep).rows if r[1] == "paired"]
    assert rows and rows[0][-1] == "too few cycles (4)"


def _flat(center: float, n: int = 30, spread: float = 0.001) -> list[float]:
    return [center * (1 + spread * ((i * 7) % 5 - 2)) for i in range(n)]


@pytest.mark.parametrize("margin, said", [(0.02, "equivalent within +-2%"), (0.0, "reactor faster")])
def test_every_paired_table_applies_the_jobs_margin(tmp_path: Path, margin: float, said: str) -> None:
    # the reactor 1% over serial, known to +-0.3%: faster without a margin, equivalent within a 2% one
    serial = _flat(1000)
    reactor = [s * 1.01 for s in _flat(1000, spread=0.0005)]
    paired_job(tmp_path / "job", {("serial", "-"): serial, ("reactor", "processes"): reactor}, margin=margin)
    rep = make_report([tmp_path], figures=False)
    (a,) = answers(rep)
    (part,) = a.parts
    if margin:
        assert part.winner is None and a.cells()[1].startswith("reactor and serial equivalent within +-2%")
    else:
        assert part.winner == "reactor:processes"
    (row,) = [r for r in against_serial_table(rep).rows if r[1] == "paired"]
    word = said.replace("reactor ", "")
    assert row[-1] == word
    assert any(f"of serial:- ({word})" in line for line in verdict_lines(rep))


def test_the_free_threaded_table_reads_the_paired_interval_and_the_rule(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    serial = 1000 * rng.uniform(0.8, 1.2, 20)
    threads_ft = serial * 1.5 * rng.normal(1, 0.05, 20)
    paired_job(tmp_path / "job", {("serial", "-"): serial, ("serial", "ft"): serial * 0.9,
                                  ("reactor", "threads ft"): threads_ft},
               interpreters={("serial", "ft"): "3.13t", ("reactor", "threads ft"): "3.13t"})
    rep = make_report([tmp_path], figures=False)
    table = ft_paired_table(rep.paired)
    (row,) = [r for r in table.rows if r[3] == "reactor:threads"]
    med, lo, hi = median_interval(threads_ft / (serial * 0.9)).as_tuple()
    cell = row[table.header.index("ft / serial ft")]
    assert cell == f"{med:.2f} [{lo:.2f}, {hi:.2f}] (faster)"


def test_report_md_cuts_the_paired_job_lines_and_answer_rows_that_report_html_keeps(tmp_path: Path) -> None:
    from harness.report.documents import to_html, to_markdown
    from harness.report.paired_render import MD_JOB_LINES

    rng = np.random.default_rng(0)
    jobs = MD_JOB_LINES + 3
    for j in range(jobs):  # a self-test's shape: many paired jobs of the same configuration
        paired_job(tmp_path / f"job_{j:03d}", {("serial", "-"): 1000 + rng.normal(0, 10, 12),
                                                ("reactor", "processes"): 1200 + rng.normal(0, 10, 12)})
    rep = make_report([tmp_path], figures=False)
    md, page = to_markdown(rep), to_html(rep)
    lines = md.split("## Paired jobs", 1)[1].split("\n## ", 1)[0]
    assert lines.count("\n- ") == MD_JOB_LINES and "_... and 3 more in report.html._" in lines
    assert all(f"job_{j:03d}" in page for j in range(jobs))


def _with_copies(folder: Path, residents: Sequence[tuple[str, str, int, float, Sequence[float]]]) -> None:
    """A paired job of residents (backend, variant, copy, injected share, throughput per cycle): A/A copies
    (``copy`` > 1) and injected-effect copies (share > 0) recorded as `harness.cycles` writes them."""
    writer = ResultsWriter(folder)
    n = len(residents[0][4])
    block = 0
    for cycle in range(n):
        for backend, variant, copy, share, values in residents:
            tp = float(values[cycle])
            extra = {"paired": True, "block_rounds": 50, "stopped_by": "time" if cycle == n - 1 else ""}
            if share:
                extra.update({"extra_work": share, "extra_work_ms_per_round": 1.0})
            writer.append(make_row({**BASE, "backend": backend, "variant": variant, "copy": copy},
                                   repetition=cycle, cycle=cycle, block=block, status="ok", units=1000,
                                   seconds=1000 / tp, throughput=tp, checksum=f"c{cycle}", extra=extra))
            block += 1


def test_who_wins_never_names_an_aa_or_injected_copy_beside_real_backends(tmp_path: Path) -> None:
    import pandas as pd

    wig = [1 + 0.002 * ((i % 3) - 1) for i in range(30)]
    serial = [1000.0 * w for w in wig]
    at = lambda f: [f * s for s in serial]  # noqa: E731
    # a lucky A/A copy 8% ahead of everything, an injected copy 2% behind, the reactor 5% ahead of serial
    t = pd.DataFrame({"serial:-": serial, "serial:-#2": at(1.08), "serial:-#3 +2%": at(0.98),
                      "reactor:processes": at(1.05)})
    assert leader_and_runner_up(t, list(t.columns)) == ("reactor:processes", "serial:-")
    # a job of one backend and its copies (a self-test job) still reads the copy against the backend
    only = t.drop(columns="reactor:processes")
    assert leader_and_runner_up(only, list(only.columns)) == ("serial:-#2", "serial:-")
    # end to end: rows with copies, read by the report's answer
    _with_copies(tmp_path / "job", [("serial", "-", 1, 0.0, serial), ("serial", "-", 2, 0.0, at(1.08)),
                                    ("serial", "-", 3, 0.02, at(0.98)), ("reactor", "processes", 1, 0.0, at(1.05))])
    (a,) = answers(make_report([tmp_path], figures=False))
    (part,) = a.parts
    assert (part.leader, part.runner_up) == ("reactor:processes", "serial:-")
    assert part.lead.median == pytest.approx(1.05) and part.winner == "reactor:processes"
    _with_copies(tmp_path / "aa", [("serial", "-", 1, 0.0, serial), ("serial", "-", 2, 0.0, at(1.08)),
                                   ("serial", "-", 3, 0.02, at(0.98))])
    (aa,) = answers(make_report([tmp_path / "aa"], figures=False))
    assert (aa.parts[0].leader, aa.parts[0].runner_up) == ("serial:-#2", "serial:-")
