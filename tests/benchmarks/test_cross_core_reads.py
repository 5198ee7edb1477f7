"""The cross-core reads benchmark (`benchmarks.cross_core_reads`) runs its two pinned processes and cleans up (its
timing is for a person to read, not a test)."""
from __future__ import annotations

import glob
import os

import pytest

from benchmarks import cross_core_reads


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two usable cores")
def test_the_reader_times_each_round_of_records_from_the_other_core_and_leaves_no_segment(capsys):
    cores = os.sched_getaffinity(0)
    got = cross_core_reads.measure(rounds=200, slots=3)
    assert got["round_ns"] > 0 and got["record_ns"] == pytest.approx(got["round_ns"] / 3)
    assert not glob.glob(f"/dev/shm/rb-{os.getpid()}-xc-*")
    assert os.sched_getaffinity(0) == cores  # the reader's pinning is undone
    cross_core_reads.main(["--rounds", "100", "--slots", "2"])
    assert "records written on another core" in capsys.readouterr().out
