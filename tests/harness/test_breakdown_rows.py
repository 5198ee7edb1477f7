"""Reactor processes jobs record where each worker process's round time went, per repetition, and place
fewer bank members on the server's process by measured cost; the checksum stays the serial one."""
import json

import pandas as pd
import pytest

from backends.reactor import split_by_cost
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
            parts = [e[f"bd_w{rank}_{p}_us"] for p in ("work", "transport", "wait", "other")]
            assert all(v >= 0 for v in parts) and e[f"bd_w{rank}_work_us"] > 0
        assert e["bd_rounds"] == reactor["rounds"].iloc[0]
    assert all("bd_w0_work_us" not in (json.loads(x) if x else {}) for x in serial["extra"])


@pytest.mark.parametrize("members,procs,cost,expected", [
    (15, 2, 0.0, [0] * 8 + [1] * 7),
    (15, 2, 1.3, [0] * 7 + [1] * 8),
    (10, 2, 5.7, [0] * 2 + [1] * 8),
    (4, 2, 5.7, [1] * 4),
    (15, 4, 2.0, [0] * 2 + [1] * 5 + [2] * 4 + [3] * 4),
    (3, 1, 9.0, [0, 0, 0]),
])
def test_split_by_cost_balances_the_server_against_members(members, procs, cost, expected):
    out = split_by_cost(members, procs, cost)
    assert out == expected and out == sorted(out)
