"""A paired job's margin as its rows record it, and the margin its verdicts clear: a stored margin's set part taken
at the sets of processes the job ran.

Why here: the report decides every verdict from the rows (`harness.report.paired.PairedJob.margin`), and the job
that writes them (`harness.cycles`, through `harness.margin.resolve_margin`) records what the report reads, so both
use one definition. How a margin is measured and stored: `harness.margin`, `harness.selftest`.
"""
from __future__ import annotations

import math
from collections import Counter
from typing import Any, Iterable, Mapping, NamedTuple


def larger_part(clear: float, sets: float) -> float:
    """A margin from its two parts (`harness.selftest.margin_parts`): the larger, the set part counting 0 where it
    could not be read; NaN without clearances."""
    return max(clear, sets if math.isfinite(sets) else 0.0) if math.isfinite(clear) else math.nan


class Margin(NamedTuple):
    """A paired job's margin as resolved before it runs (`harness.margin.resolve_margin`), with a stored one's parts.

    A stored margin is the larger of the clearances' part and the set part, z x the offset of one set of processes /
    sqrt(sets), for the sets the self-test's jobs averaged over (``sets``). A job that averaged over other sets
    (one stopped by its cap after few sets, as jobs holding Ray often are: Ray's start makes their sets long) has
    another set part: `for_sets` gives the margin for the sets a job ran, which the report uses."""

    value: float
    source: str
    #: a stored margin's parts and the sets its set part was measured for (NaN: the margin is not one stored by
    #: `harness.margin.MARGIN_RULE`'s self-test: ``compare.margin``, the default)
    clearance: float = math.nan
    set_part: float = math.nan
    sets: float = math.nan

    def for_sets(self, sets: float) -> float:
        """The margin of a job that averaged over ``sets`` sets of processes (`effective_sets`):
        the larger of the clearances' part and the set part taken at those sets; the value as resolved where it has
        no parts or ``sets`` is unknown."""
        parts = (self.clearance, self.set_part, self.sets, sets)
        if not all(math.isfinite(p) for p in parts) or self.sets <= 0 or sets <= 0:
            return self.value
        return larger_part(self.clearance, self.set_part * math.sqrt(self.sets / sets))

    def row_fields(self) -> dict[str, Any]:
        """What a paired job's rows record of it (``margin``, ``margin_source``, and a stored margin's parts)."""
        out: dict[str, Any] = {"margin": self.value, "margin_source": self.source}
        if math.isfinite(self.set_part):
            out.update(margin_clearance=self.clearance, margin_set_part=self.set_part, margin_sets=self.sets)
        return out

    @classmethod
    def from_row(cls, extra: Mapping[str, Any]) -> "Margin":
        """The margin a row recorded (`row_fields`); rows from before the margin was recorded read 0 with no source,
        those from before the source was recorded ``compare.margin``."""
        value = extra.get("margin")
        source = str(extra.get("margin_source") or ("" if value is None else "compare.margin"))
        return cls(float(value or 0.0), source, as_number(extra, "margin_clearance"),
                   as_number(extra, "margin_set_part"), as_number(extra, "margin_sets"))


def as_number(record: Mapping[str, Any], key: str) -> float:
    """``record[key]`` as a float, NaN where it is missing or not a number."""
    try:
        return float(record[key])
    except (KeyError, TypeError, ValueError):
        return math.nan


def effective_sets(epochs: Iterable[int]) -> float:
    """The sets of processes a job's median averages over, from each cycle's set (``extra.epoch``): (sum n)^2 /
    sum n^2 over the sets' cycle counts n. Sets of equal length count one each; a set of a few cycles beside long
    ones counts for little, as its offset weighs in the job's median (the variance a job's median takes from its
    sets' offsets is tau^2 sum n^2 / (sum n)^2). NaN without cycles."""
    counts = Counter(epochs).values()
    return sum(counts) ** 2 / sum(n * n for n in counts) if counts else math.nan
