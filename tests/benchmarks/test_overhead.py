"""The overhead benchmark programs produce the right results (their timing is a results row, not a test)."""
from __future__ import annotations

import pytest

from benchmarks import overhead


@pytest.mark.parametrize("executor,workers", [("inline", 1), ("threads", 3), ("processes", 2)])
def test_chain_and_fan_out_in(executor, workers):
    c = overhead.chain(n_reactions=40, tags=5, executor=executor, workers=workers)
    assert c["reactions"] == 200 and c["seconds"] > 0 and c["reactions_per_second"] > 0
    f = overhead.fan_out_in(n=8, tags=5, executor=executor, workers=workers)
    assert f["reactions"] == 50 and f["tags"] == 5
