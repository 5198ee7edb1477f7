"""Errors after ``stop`` fail a paired job: a backend whose role raises while it is closed at teardown (the fault
scenario's ``kind=close``) gets an ``error`` row with the role's exception, and its traceback in ``error.txt``."""
from __future__ import annotations

import json

from harness.compare_child import StopRounds, from_stop
from harness.cycles import COMPARE_FILE
from tests.conftest import read_rows, run_cli


def test_a_role_that_raises_in_close_makes_an_error_row(tmp_path):
    out = tmp_path / "job"
    proc = run_cli("compare", "scenario=fault", "scenario.kind=close", "budget=smoke", "workers=2",
                   "backends=[serial,serial]", "compare.block_rounds=5", "compare.max_seconds=0.3",
                   "compare.min_cycles=6", run_dir=out)
    assert proc.returncode != 0
    rows = read_rows(out)
    ok, failed = rows[rows["status"] == "ok"], rows[rows["status"] != "ok"]
    assert len(ok) >= 12 and ok.groupby("cycle")["checksum"].nunique().eq(1).all()  # every cycle ran
    assert list(failed["status"]) == ["error"]
    # both residents raise; the first one closed (the last set's start order: `harness.cycles.start_orders`) fails it
    assert failed["error"].iloc[0] in {f"{who}: EnvCrashed: worker 1 failed to close after %d rounds" % (
        2 + 5 * ok["cycle"].nunique()) for who in ("serial:-", "serial:-#2")}  # the warm-up and every block
    assert "in close" in (out / "error.txt").read_text()  # the traceback
    assert json.loads((out / COMPARE_FILE).read_text())["status"] == "error"


def test_only_the_clocks_stop_is_swallowed():
    stop = StopRounds()
    try:
        try:
            raise stop
        except StopRounds as exc:
            raise RuntimeError("reaction failed") from exc
    except RuntimeError as wrapped:
        assert from_stop(wrapped)  # a backend's own error for the stop
    try:
        try:
            raise stop
        except StopRounds:
            raise ValueError("closing an env failed")  # raised while the stop unwound
    except ValueError as during:
        assert not from_stop(during)
    assert from_stop(RuntimeError("ReactionError: StopRounds: "))  # from another process, by name
    assert not from_stop(RuntimeError("EnvCrashed: worker 1"))
