"""Errors after ``stop`` fail a paired job: a backend whose role raises while it is closed at teardown (the fault
scenario's ``kind=close``) gets an ``error`` row with the role's exception, and its traceback in ``error.txt``."""
from __future__ import annotations

import json

import pytest

from harness.cycles import COMPARE_FILE
from tests.conftest import StoppingClock, read_rows, run_cli


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


@pytest.mark.parametrize("executor", ["inline", "processes"])
def test_the_reactor_closes_its_roles_when_the_clock_ends_the_rounds(executor):
    """A paired job's resident leaves its rounds where the clock says stop: the reactor's program then stops as
    after its last round, so each role's shutdown reaction (its close) runs and a close that raises fails the
    run (a job once ended ok so: the clock's exception unwound the program past its shutdown)."""
    from backends import make_backend
    from backends.reactor import ReactorConfig
    from harness.config import config_object
    from reactor_backend.errors import ReactionError
    from scenarios import make_scenario
    from scenarios.configs import FaultConfig

    for kind in ("close", "error"):
        # kind=error fails at round 30: never reached, so the roles close cleanly
        scenario = make_scenario(config_object(FaultConfig, {"num_workers": 2, "kind": kind, "fail_at_round": 30}), 0)
        server = scenario.make_server()
        backend = make_backend(config_object(ReactorConfig, {"executor": executor}), 2)
        clock = StoppingClock(5)
        backend.start(scenario, server)
        try:
            if kind == "close":
                with pytest.raises(ReactionError, match="EnvCrashed: worker 1 failed to close after 5 rounds"):
                    backend.run(1000, clock)
            else:
                backend.run(1000, clock)
        finally:
            backend.stop()
            server.close()
        assert clock.ticks == 5
