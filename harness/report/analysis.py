"""One result set's statistics in one object: the summary and tests of `harness.report.stats` plus the
verdicts of `harness.report.verdict` (kept apart so that neither of those imports the other's caller)."""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from harness.report.stats import (add_efficiency, geomean_by_scenario, mixed_environment, not_same_work,
                                  pairwise_speedups, references, summarize, validity)
from harness.report.verdict import headlines, reference_rows


@dataclass
class Analysis:
    """Everything the renderers need, computed once."""

    summary: pd.DataFrame
    validity: pd.DataFrame
    speedups: pd.DataFrame
    geomeans: pd.DataFrame
    mixed: pd.DataFrame
    failures: pd.DataFrame
    #: (config, label) pairs that did not do the same work as serial (labelled, left out of verdicts)
    unequal: set = None  # type: ignore[assignment]
    #: one `harness.report.verdict.Headline` per configuration
    headlines: list = None  # type: ignore[assignment]
    #: labelled references (`harness.report.verdict.Reference`): shown beside the verdicts, never in them
    references: list = None  # type: ignore[assignment]


def analyze(rows: pd.DataFrame) -> Analysis:
    """All statistics of one result set (rows from `harness.report.load`)."""
    summary = add_efficiency(summarize(rows))
    valid = validity(rows)
    unequal = not_same_work(rows)
    summary = summary.merge(valid[["config", "valid"]], on="config", how="left")
    summary["equal_work"] = [(c, lab) not in unequal for c, lab in zip(summary["config"], summary["label"])]
    sp = pairwise_speedups(rows, valid)
    fails = rows[rows["status"].isin(["error", "timeout"])]
    fail_cols = ["scenario", "label", "workers", "config", "repetition", "status", "error", "source"]
    invalid = set(valid.loc[~valid["valid"].astype(bool), "config"]) if len(valid) else set()
    heads = headlines(rows, summary, invalid, unequal)
    return Analysis(summary=summary, validity=valid, speedups=sp, geomeans=geomean_by_scenario(sp),
                    mixed=mixed_environment(rows), failures=fails[fail_cols].reset_index(drop=True), unequal=unequal,
                    headlines=heads, references=reference_rows(rows, references(rows)))
