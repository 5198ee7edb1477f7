"""A paired job that holds Ray layouts fills the answer's "reactor / best alternative" and the headline table's
best alternative and paper-layout Ray from its own cycles: the fastest Ray layout, never an A/A copy nor RLlib's
sampler (a labelled reference)."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from harness.report.answer import answers, paired_best_alternative
from harness.report.build import make_report
from harness.report.documents import to_markdown
from harness.report.tables import headline_table
from harness.results import ResultsWriter, make_row

#: throughput relative to serial: reactor 1.8x, the packed Ray layout 1.2x (the best alternative), compiled 1.1x,
#: the paper's layout 0.5x; RLlib's sampler and an A/A copy of serial faster still, and never the best alternative
SPEEDS = ((("serial", "-"), 1, 1.0), (("reactor", "processes"), 1, 1.8), (("ray", "actors_packed"), 1, 1.2),
          (("ray", "compiled_packed"), 1, 1.1), (("ray", "actors"), 1, 0.5), (("rllib", "module"), 1, 3.0),
          (("serial", "-"), 2, 2.5))


def _paired_job(folder: Path, cycles: int = 30, speeds=SPEEDS) -> None:
    """A paired gym job of ``speeds`` ((backend, variant), copy, throughput over serial's) with 1% noise per block."""
    rng = np.random.default_rng(5)
    writer = ResultsWriter(folder)
    base = {"scenario": "gym", "workers": 2, "num_envs": 15, "env_id": "CartPole-v1", "budget": "local", "seed": 0,
            "threads_per_worker": 1, "params": {"num_envs": 15}, "unit": "env_steps",
            "metadata": {"hostname": "box", "cpu_model": "Test CPU", "cpu_count": 2, "started_at": "2026-01-01T00:00"}}
    block = 0
    for cycle in range(cycles):
        serial = 20000 * rng.uniform(0.8, 1.2)
        for (b, v), copy, k in speeds:
            tp = serial * k * rng.normal(1, 0.01)
            writer.append(make_row({**base, "backend": b, "variant": v, "copy": copy}, repetition=cycle, cycle=cycle,
                                   block=block, status="ok", units=1000, seconds=1000 / tp, throughput=tp,
                                   checksum="rllib:not-equal-work" if b == "rllib" else f"c{cycle}",
                                   extra={"paired": True, "block_rounds": 50, "parked": b in ("ray", "rllib")}))
            block += 1


def test_the_best_alternative_is_the_fastest_ray_layout_never_a_copy_nor_a_reference():
    medians = {"serial:-": 1.0, "reactor:processes": 1.8, "ray:actors_packed": 1.2, "ray:compiled_packed": 1.1,
               "ray:actors": 0.5, "rllib:module": 3.0, "serial:-#2": 2.5, "capacity:lockstep": 2.0}
    assert paired_best_alternative(medians) == "ray:actors_packed"
    assert paired_best_alternative({"serial:-": 1.0, "reactor:processes": 1.8}) is None


def test_a_paired_job_with_ray_fills_the_answer_and_the_headline_columns(tmp_path: Path):
    _paired_job(tmp_path / "paired")
    rep = make_report([tmp_path], figures=False)
    (answer,) = answers(rep)
    (part,) = answer.parts
    best = part.vs_best
    assert answer.source == "paired" and best is not None
    assert (best.numerator, best.denominator) == ("reactor:processes", "ray:actors_packed")
    assert abs(best.median - 1.5) < 0.05
    assert best.low > 1  # 1.5x with 1% noise: an interval above 1
    assert "best alternative: standalone" not in answer.extra
    cells = answer.cells()
    assert re.match(r"1\.[45]\dx \[.*\] ray", cells[3]), cells[3]
    table = headline_table(rep)
    (row,) = [r for r, kind in zip(table.rows, table.classes) if kind == "paired"]
    header = table.header
    assert row[header.index("best alternative")].startswith("ray:actors_packed")
    assert re.match(r"1\.[45]\dx \[", row[7]), row  # reactor / best alternative
    assert re.match(r"3\.[56]\dx \[", row[8]), row  # reactor / Ray, the paper's layout
    assert header[7].endswith("/ best alternative") and "/" in header[8]
    assert "reactor / best alternative" in to_markdown(rep)


def test_after_a_host_shift_the_best_alternative_is_read_per_regime_as_who_wins_is(tmp_path: Path):
    """The synchronized ceiling halves at cycle 40 (a host shift: two regimes) while the reactor's lead over the packed
    Ray layout falls from 1.5x to 1.1x: the "reactor / best alternative" cell gives each regime's reading, the same
    one "who wins" gives, not one reading pooled over both."""
    rng = np.random.default_rng(7)
    writer = ResultsWriter(tmp_path / "paired")
    base = {"scenario": "gym", "workers": 2, "num_envs": 15, "env_id": "CartPole-v1", "budget": "local", "seed": 0,
            "threads_per_worker": 1, "params": {"num_envs": 15}, "unit": "env_steps",
            "metadata": {"hostname": "box", "cpu_model": "Test CPU", "cpu_count": 2, "started_at": "2026-01-01T00:00"}}
    block = 0
    for cycle in range(80):
        late = cycle >= 40
        serial = 20000 * rng.normal(1, 0.01)
        speeds = ((("serial", "-"), 1.0), (("reactor", "processes"), 1.8),
                  (("ray", "actors_packed"), 1.8 / (1.1 if late else 1.5)), (("capacity", "lockstep"), 1.0 if late else 2.0))
        for (b, v), k in speeds:
            tp = serial * k * rng.normal(1, 0.01)
            writer.append(make_row({**base, "backend": b, "variant": v, "copy": 1}, repetition=cycle, cycle=cycle,
                                   block=block, status="ok", units=1000, seconds=1000 / tp, throughput=tp,
                                   checksum=f"c{cycle}", extra={"paired": True, "block_rounds": 50}))
            block += 1
    rep = make_report([tmp_path], figures=False)
    (answer,) = answers(rep)
    assert len(answer.parts) == 2, [p.span for p in answer.parts]
    for part, expected in zip(answer.parts, (1.5, 1.1)):
        assert part.vs_best is not None and abs(part.vs_best.median - expected) < 0.03
        assert (part.leader, part.runner_up) == ("reactor:processes", "ray:actors_packed")
        assert part.vs_best == part.lead
    cell = answer.cells()[3]
    assert cell.count("x [") == 2 and cell.endswith(" ray_packed") and "(cycles 0-39)" in cell, cell
