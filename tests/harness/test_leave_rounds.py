"""The clock's stop (`backends.base.Clock`): where ``tick`` returns False a backend's ``run`` returns as after its
last round, on every backend a paired job holds here (Ray's: tests/ray/test_ray_backend.py). The paired job's clock
ends each resident's rounds so (`harness.compare_child.BlockClock`); it once raised through every backend's loop,
and two backends took that exception for a failure (tests/harness/test_compare_errors.py)."""
from __future__ import annotations

from typing import Any

import psutil
import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from harness.app import CONF_DIR
from harness.child import build
from harness.runner import job_spec
from tests.conftest import StoppingClock, run_rounds

#: rounds before the clock says stop
STOP_AT = 5


def _job(preset: str) -> Any:
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose(config_name="config", overrides=[f"backend={preset}", "scenario=gym", "budget=smoke",
                                                       "workers=2", "scenario.num_envs=2"])
    return build(job_spec(OmegaConf.to_container(cfg, resolve=True, enum_to_str=True)))


@pytest.mark.parametrize("preset", ["serial", "capacity", "capacity_lockstep", "reactor", "reactor_inline",
                                    "reactor_threads", "vector", "puffer"])
def test_a_backend_leaves_its_rounds_where_the_clock_says_stop(preset):
    job = _job(preset)
    clock = StoppingClock(STOP_AT)
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    try:
        job.backend.start(job.scenario, job.server)
        job.backend.run(1000, clock)  # returns: no exception, no round beyond the stop
    finally:
        job.backend.stop()
    assert clock.ticks == STOP_AT
    left = [p for p in psutil.Process().children(recursive=True) if p.pid not in before and p.is_running()
            and p.status() != psutil.STATUS_ZOMBIE]
    assert not left, [(p.pid, p.cmdline()) for p in left]  # stop left no worker, copy or env process
    reference, _ = run_rounds(job.scenario, STOP_AT)
    assert job.server.checksum() == reference.checksum()  # the server gathered exactly those rounds
    job.server.close()
