"""scripts/parallel_capacity.py --per-cpu: one reading per usable CPU and repeat, the affinity given back."""
import importlib.util
import os
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "parallel_capacity.py"


def test_per_cpu_times_every_usable_cpu_and_restores_the_affinity():
    spec = importlib.util.spec_from_file_location("parallel_capacity", SCRIPT)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    before = os.sched_getaffinity(0)
    rows = script.per_cpu("CartPole-v1", 200, 2)
    assert len(rows) == 2
    assert all(set(r) == before and all(us > 0 for us in r.values()) for r in rows)
    assert os.sched_getaffinity(0) == before
