"""The staggered-gather benchmark (`benchmarks.staggered_gather`) runs its program and reads its breakdown (its
timing is for a person to read, not a test)."""
from __future__ import annotations

from benchmarks import staggered_gather


def test_the_early_member_s_read_is_counted_as_overlapping_the_wait_for_the_late_one(capsys):
    got = staggered_gather.measure(rounds=6, nbytes=1 << 20, early_s=0.0, late_s=0.03)
    # the late member sleeps 30 ms a round: every round lasts at least that; the early one's read overlapped it
    assert got["round"] >= 0.03
    assert 0 < got["overlap"] <= got["transport"]
    staggered_gather.main(["--rounds", "6", "--mb", "0.5", "--early-ms", "0", "--late-ms", "20"])
    assert "of it while it still waited for the late member" in capsys.readouterr().out
