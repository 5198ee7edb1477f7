"""Shared test helpers: run the real CLI into a temporary directory and read its rows; run a scenario's
roles in-process with a counting clock."""
from __future__ import annotations

import atexit
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd
import pytest

REPO = Path(__file__).resolve().parents[1]

# A suite started with `&` from a non-interactive shell inherits SIGINT ignored (POSIX), Python then leaves it
# ignored, and so do the processes the tests start: the Ctrl-C tests would wait forever for an interrupt that
# never comes. They test Ctrl-C, so the suite takes Python's default handler (children get the default again).
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# Paired jobs read this machine's self-test margin (harness.margin) from results/machine/; a developer who ran
# `make selftest` has one there, a clean clone has none. The suite reads an empty folder of its own (the jobs it
# starts inherit it), so verdicts in tests never depend on what was measured here; tests of the stored margin set
# their own.
os.environ["REACTORBENCH_MACHINE_DIR"] = tempfile.mkdtemp(prefix="reactorbench-test-machine-")
atexit.register(shutil.rmtree, os.environ["REACTORBENCH_MACHINE_DIR"], True)


def pytest_collection_modifyitems(config, items):
    """``--dist loadgroup``'s groups, repaired for pytest 9: pytest-xdist (3.8) marks a test of an
    ``xdist_group`` by appending ``@<group>`` to ``item._nodeid`` on the worker, which pytest 9 no longer reads
    (a node's id is ``item._id``), so every grouped test was scheduled on its own: modules that start Ray in
    the test process shared no worker, and a module fixture shared by a group ran once per worker. Here the
    suffix goes where pytest 9 reads it; where xdist's own suffix took effect, nothing changes."""
    if not hasattr(config, "workerinput") or not getattr(config.option, "loadgroup", False):  # set on workers
        return
    try:
        from _pytest.nodeid import coerce_node_id
    except ImportError:  # an older pytest, where xdist's own suffix works
        return
    for item in items:
        names = {str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                 for m in item.iter_markers("xdist_group")}
        if names and "@" not in item.nodeid and hasattr(item, "_id"):
            item._id = coerce_node_id(f"{item.nodeid}@{'_'.join(sorted(names))}")


def run_cli(*overrides: str, run_dir: Path | None = None, multirun: bool = False,
            timeout: float = 300) -> subprocess.CompletedProcess:
    """``python -m harness [overrides]`` in the repository, output dir under ``run_dir``."""
    args = [sys.executable, "-m", "harness"]
    if multirun:
        args.append("-m")
    args += list(overrides) + ["quiet=true"]
    if run_dir is not None:
        args.append(f"hydra.{'sweep' if multirun else 'run'}.dir={run_dir}")
    return subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=timeout)


def read_rows(run_dir: Path) -> pd.DataFrame:
    return pd.read_csv(run_dir / "results.csv", keep_default_na=False)


class TickClock:
    """The smallest `backends.base.Clock`: counts rounds."""

    def __init__(self) -> None:
        self.ticks = 0

    def begin(self) -> None:
        pass

    def tick(self) -> None:
        self.ticks += 1


class StoppingClock(TickClock):
    """Says stop at tick ``stop_at``, as a paired job's clock does at ``stop``; a tick after that fails."""

    def __init__(self, stop_at: int) -> None:
        super().__init__()
        self.stop_at = stop_at

    def tick(self) -> bool:
        super().tick()
        assert self.ticks <= self.stop_at, "a round after the clock said stop"
        return self.ticks < self.stop_at


def run_rounds(scenario, rounds: int, workers=None):
    """The serial loop in-process: ``rounds`` rounds of the scenario's server and workers (built here
    unless given); returns ``(server, workers)``."""
    from backends.base import split_messages  # imported here: tests/reactor run without the harness

    server = scenario.make_server()
    workers = workers or [scenario.make_worker(i) for i in range(scenario.num_workers)]
    for _ in range(rounds):
        msgs = split_messages(server.scatter(), len(workers))
        server.gather([w.step(m) for w, m in zip(workers, msgs)])
    return server, workers


@pytest.fixture
def cli():
    return run_cli
