"""A paired job writes a cycle's rows in the listing order of its backends while their block numbers follow the
cycle's shuffled order: such a file is one run (`harness.report.paired.runs_of_job`), read whole, never cut at each
block number that goes down within a cycle (which once left every paired job's report one cycle of one backend)."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from harness.report.build import make_report
from harness.report.paired import runs_of_job
from harness.results import ResultsWriter, make_row
from tests.report.test_one_rule import BASE


def _write(job: Path, orders: list[list[int]], start: int = 0) -> None:
    """One run: per cycle, serial then the reactor (listing order), their block numbers in ``orders``' order."""
    writer = ResultsWriter(job)
    for cycle, order in enumerate(orders):
        for (backend, variant, tp), block in zip((("serial", "-", 100.0), ("reactor", "processes", 150.0)), order):
            writer.append(make_row({**BASE, "backend": backend, "variant": variant, "workers": 2}, repetition=cycle,
                                   cycle=cycle, block=start + 2 * cycle + block, status="ok", units=1000,
                                   seconds=1000 / tp, throughput=tp, checksum=f"c{cycle}",
                                   extra={"paired": True, "block_rounds": 50}))


def test_a_cycles_rows_in_listing_order_are_one_run(tmp_path: Path) -> None:
    orders = [[1, 0], [0, 1], [1, 0], [1, 0], [0, 1], [1, 0], [0, 1], [0, 1], [1, 0], [1, 0]]
    _write(tmp_path / "job", orders)
    rep = make_report([tmp_path], figures=False)
    (job,) = rep.paired
    assert job.cycles == 10 and (job.table["reactor:processes"] / job.table["serial:-"]).eq(1.5).all()
    rows = pd.DataFrame({"cycle": [0, 0, 1, 1, 2, 2, 0, 0, 1, 1], "block": [1, 0, 2, 3, 5, 4, 1, 0, 2, 3]})
    assert list(runs_of_job(rows)) == [0, 0, 0, 0, 0, 0, 1, 1, 1, 1]  # a second run appended: cycles start again
