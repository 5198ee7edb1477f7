"""The paper table lists, from each run's resolved config, how it differs from the authors' code."""
from __future__ import annotations

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

import harness.app  # noqa: F401  (registers the structured configs)
from harness.app import CONF_DIR
from harness.report import make_report
from harness.report.authors import AUTHORS, differences
from harness.report.documents import to_markdown

from tests.report.synthetic import Jobs


def resolved(*overrides: str) -> tuple[dict, int]:
    """A job's scenario params and timed rounds, exactly as the runner writes them into rows."""
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose(config_name="config", overrides=list(overrides))
    plain = OmegaConf.to_container(cfg, resolve=True, enum_to_str=True)
    return {k: v for k, v in plain["scenario"].items() if k != "name"}, plain["budget"]["rounds"]


def setting_lines(scenario: str, *overrides: str) -> list[str]:
    params, rounds = resolved(f"scenario={scenario}", "budget=paper", *overrides)
    n_fixed = len(AUTHORS[scenario].fixed) + 1
    return differences(scenario, [(params, rounds)])[:-n_fixed]


@pytest.mark.parametrize("scenario", ["gym", "atari", "dqn", "marl"])
def test_budget_paper_matches_every_recorded_setting(scenario):
    assert setting_lines(scenario) == []


@pytest.mark.parametrize("scenario, override, key", [
    ("atari", "scenario.reset_every_step=false", "scenario.reset_every_step=false"),
    ("atari", "scenario.actions=binary", "scenario.actions=binary"),
    ("gym", "scenario.seeding=distinct", "scenario.seeding=distinct"),
    ("dqn", "scenario.minibatch_rule=uniform", "scenario.minibatch_rule=uniform"),
    ("dqn", "budget.rounds=500", "budget.rounds=500"),
    ("marl", "scenario.env=simple_spread_v3", "scenario.env=simple_spread_v3"),
])
def test_changing_one_option_lists_exactly_that_difference(scenario, override, key):
    lines = setting_lines(scenario, override)
    assert len(lines) == 1 and lines[0].startswith(key), lines
    assert "authors:" in lines[0] and ".py" in lines[0]  # their value and the file it comes from


def test_local_budget_lists_its_cleaner_variants():
    lines = setting_lines("atari", "budget=local")
    keys = {line.split("=")[0] for line in lines}
    assert {"scenario.reset_every_step", "scenario.seeding", "budget.rounds"} <= keys


def test_report_paper_table_shows_a_changed_option(jobs: Jobs):
    paper, rounds = resolved("scenario=atari", "budget=paper")
    changed = {**paper, "actions": "binary"}
    for params, backend, variant in ((paper, "reactor", "processes"), (paper, "ray", "actors")):
        jobs.write("atari", backend, variant, 2, [100, 101, 99], params=params, rounds=rounds, env_id="Pong-v4",
                   budget="paper")
    rep = make_report([jobs.root], figures=False)
    listed = rep.paper.set_index("scenario").loc["atari", "differences"]
    assert not any(d.startswith("scenario.") or d.startswith("budget.") for d in listed)
    assert any("32-core" in d and "no-GIL" in d for d in listed)
    for backend, variant in (("reactor", "processes"), ("ray", "actors")):
        jobs.write("atari", backend, variant, 2, [100, 101, 99], params=changed, rounds=rounds, env_id="Pong-v4",
                   budget="paper")
    rep = make_report([jobs.root], figures=False)
    listed = rep.paper.set_index("scenario").loc["atari", "differences"]
    assert any(d.startswith("scenario.actions=binary (authors: full") for d in listed), listed
    assert "scenario.actions=binary" in to_markdown(rep)
