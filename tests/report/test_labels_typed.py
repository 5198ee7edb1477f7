"""Labels typed end to end (issue 47, item 7): a resident's label says whether it is an A/A copy (``serial#2``) or
carries injected work (``serial +2%``); such a copy is never the best alternative and is drawn apart, named by its
effect; and a run's backends are named by the presets the run stored, not by today's conf/backend."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from harness.labels import BackendLabel, PresetNames, preset_table
from harness.metadata import config_hash, job_metadata
from harness.report.answer import answers, paired_best_alternative
from harness.report.build import make_report
from harness.report.documents import to_markdown
from harness.report.figures import color, marker, shown
from harness.report.model import report_vocabulary
from harness.report.tables import headline_table, warnings
from harness.report.verdict import is_alternative
from harness.results import ResultsWriter, make_row
from harness.runner import job_spec
from tests.conftest import read_rows, run_cli
from tests.report.synthetic import Jobs

BASE = {"scenario": "gym", "workers": 2, "num_envs": 15, "env_id": "CartPole-v1", "budget": "local", "seed": 0,
        "threads_per_worker": 1, "params": {"num_envs": 15}, "unit": "env_steps"}
META = {"hostname": "box", "cpu_model": "Test CPU", "cpu_count": 2, "started_at": "2026-01-01T00:00"}

#: ((backend, variant), copy, injected share, throughput over serial's, stored preset): the injected copy of the
#: vectorizer (copy 1, +2%) and serial's A/A and injected copies are all faster than the one real alternative
#: (the packed Ray layout, 1.2x): none of them may be chosen as the best alternative
RESIDENTS = ((("serial", "-"), 1, 0.0, 1.0, "serial"), (("reactor", "processes"), 1, 0.0, 1.8, "reactor"),
             (("ray", "actors_packed"), 1, 0.0, 1.2, "ray_packed"), (("vector", "-"), 1, 0.02, 2.0, "vector"),
             (("serial", "-"), 2, 0.0, 2.5, "serial"), (("serial", "-"), 3, 0.02, 2.4, "serial"))


def _paired_job(folder: Path, residents=RESIDENTS, cycles: int = 30, store: bool = True) -> None:
    """A paired gym job of ``residents`` with 1% noise per block; each row's metadata stores its preset (or not)."""
    rng = np.random.default_rng(7)
    writer = ResultsWriter(folder)
    block = 0
    for cycle in range(cycles):
        serial = 20000 * rng.uniform(0.8, 1.2)
        for (b, v), copy, share, k, preset in residents:
            tp = serial * k * rng.normal(1, 0.01)
            extra: dict[str, Any] = {"paired": True, "block_rounds": 50}
            if share:
                extra.update({"extra_work": share, "extra_work_ms_per_round": 0.1})
            meta = {**META, **({"preset": preset} if store else {})}
            writer.append(make_row({**BASE, "backend": b, "variant": v, "copy": copy, "metadata": meta},
                                   repetition=cycle, cycle=cycle, block=block, status="ok", units=1000,
                                   seconds=1000 / tp, throughput=tp, checksum=f"c{cycle}", extra=extra))
            block += 1


# ------------------------------------------------------------------------------------------ the type

def test_a_label_carries_its_copy_and_its_injected_effect_both_ways():
    lab = BackendLabel.from_row("serial", "-", 3, 0.02)
    assert lab.render() == "serial:-#3 +2%" and BackendLabel.parse(lab.render()) == lab
    assert lab.is_copy and lab.injected and lab.first_copy() == BackendLabel("serial")
    assert BackendLabel.parse("serial:-#2").is_copy and not BackendLabel.parse("serial:-#2").injected
    assert not BackendLabel.parse("reactor:threads ft").is_copy
    ft = BackendLabel.parse("reactor:threads ft +0.5%")
    assert (ft.interpreter, ft.copy, ft.extra_work) == ("ft", 1, 0.005) and ft.render() == "reactor:threads ft +0.5%"
    assert lab.preset_name() == "serial +2%" and BackendLabel.parse("ray:actors_packed +5%").preset_name() == "ray_packed +5%"


def test_no_copy_is_an_alternative():
    for label in ("serial:-#2", "serial:-#3 +2%", "vector:- +2%", "ray:actors_packed#2", "ray:actors_packed +5%",
                  "serial:ft", "capacity:lockstep", "rllib:module", "reactor:threads"):
        assert not is_alternative(label), label
    assert is_alternative("ray:actors_packed") and is_alternative("vector:-")
    medians = {"serial:-": 1.0, "ray:actors_packed": 1.2, "vector:- +2%": 2.0, "ray:actors_packed#2": 1.3,
               "serial:-#2": 2.5, "serial:-#3 +2%": 2.4}
    assert paired_best_alternative(medians) == "ray:actors_packed"


# ------------------------------------------------------------------------------------------ best alternative

def test_a_paired_job_never_takes_an_aa_or_injected_copy_as_its_best_alternative(tmp_path: Path):
    _paired_job(tmp_path / "paired")
    rep = make_report([tmp_path], figures=False)
    (job,) = rep.paired
    assert {"serial:-#2", "serial:-#3 +2%", "vector:- +2%"} <= set(job.labels)  # the injected ones apart
    (answer,) = answers(rep)
    (part,) = answer.parts
    assert part.vs_best is not None and part.vs_best.denominator == "ray:actors_packed"
    assert answer.cells()[3].endswith(" ray_packed")
    (cells,) = headline_table(rep).rows
    assert cells[3].startswith("ray:actors_packed: ")  # the headline's best alternative (a label, said below)
    text = to_markdown(rep)
    assert "vector +2%" in text and "serial +2%" in text and "serial#2" in text  # named by their effect
    assert "vector:-" not in text and "serial:-#3" not in text


def test_a_standalone_run_never_takes_an_injected_job_as_its_best_alternative(tmp_path: Path):
    jobs = Jobs(tmp_path / "results")
    jobs.write("gym", "serial", "-", 2, [1000, 1010, 990, 1005, 995], meta={"preset": "serial"})
    jobs.write("gym", "reactor", "processes", 2, [1800, 1810, 1790, 1805, 1795], meta={"preset": "reactor"})
    jobs.write("gym", "ray", "actors_packed", 2, [1200, 1201, 1199, 1202, 1198], meta={"preset": "ray_packed"})
    # the same layout with 5% injected work, measured later and (on a quieter host) faster: its own backend
    jobs.write("gym", "ray", "actors_packed", 2, [1500, 1501, 1499, 1502, 1498], meta={"preset": "ray_packed"},
               extras=[{"extra_work": 0.05}] * 5, started_at="2026-01-02T00:00:00+00:00")
    rep = make_report([jobs.root], figures=False)
    (h,) = rep.analysis.headlines
    assert h.best_alternative == "ray:actors_packed" and h.medians[h.best_alternative] == pytest.approx(1200)
    assert h.medians["ray:actors_packed +5%"] == pytest.approx(1500)  # never pooled with, nor superseding, it


# ------------------------------------------------------------------------------------------ drawn apart

def test_copies_are_drawn_apart_and_named_by_their_effect():
    labels = ["serial:-", "serial:-#2", "serial:-#3 +2%", "serial:-#4 +5%", "serial:- +1%"]
    assert len({marker(lab) for lab in labels}) == len(labels)
    assert all(color(lab) != color("serial:-") for lab in labels[1:])
    assert len({color(lab) for lab in labels[1:4]}) == 3
    assert [shown(lab) for lab in labels] == ["serial", "serial#2", "serial +2%", "serial +5%", "serial +1%"]
    # a copy of another backend is not drawn like that backend either
    assert (color("ray:actors_packed#2"), marker("ray:actors_packed#2")) != (color("ray:actors_packed"),
                                                                          marker("ray:actors_packed"))


def test_the_paired_figure_draws_each_copy_in_its_own_style(tmp_path: Path):
    _paired_job(tmp_path / "paired")
    rep = make_report([tmp_path], figures=True)
    fig = next(p for p in rep.plots if p.name == "paired_0").figure
    points = {line.get_label(): (line.get_color(), line.get_marker()) for line in fig.axes[0].get_lines()
              if line.get_linestyle() in ("None", "none", "")}
    assert {"serial#2 / serial", "serial +2% / serial", "vector +2% / serial", "reactor / serial"} <= set(points)
    assert len(set(points.values())) == len(points)  # every ratio series its own colour and marker


# ------------------------------------------------------------------------------------------ stored names

def _renamed(residents=RESIDENTS) -> tuple:
    """The residents as a run named them whose presets were since renamed (not what conf/backend says today)."""
    names = {"ray_packed": "rayp_2025", "reactor": "reactor_legacy"}
    return tuple((bv, c, s, k, names.get(p, p)) for bv, c, s, k, p in residents)


def test_a_run_is_named_by_the_presets_it_stored_not_by_todays_conf(tmp_path: Path):
    assert "rayp_2025" not in preset_table().values()  # today's conf/backend does not know the stored names
    _paired_job(tmp_path / "paired", residents=_renamed())
    rep = make_report([tmp_path], figures=True)
    assert rep.presets.get("ray", "actors_packed") == "rayp_2025" and not rep.presets.fallback
    text = to_markdown(rep)
    answer_section = text.split("## The answer", 1)[1].split("\n## ", 1)[0]
    assert "rayp_2025" in answer_section and "ray_packed" not in answer_section
    headline = text.split("## Headline", 1)[1].split("\n## ", 1)[0]
    assert "| reactor_legacy / serial |" in headline and "| rayp_2025: " in headline
    assert "| ray (paper layout) |" in headline  # not measured in this run: today's name for it
    assert report_vocabulary(rep)("ray:actors_packed over serial:-#3 +2%") == "rayp_2025 over serial +2%"
    assert not any("stored no preset" in w for w in warnings(rep))
    (answer,) = answers(rep)
    assert answer.cells()[3].endswith(" rayp_2025")
    legends = [t.get_text() for p in rep.plots for ax in p.figure.axes if ax.get_legend()
               for t in ax.get_legend().get_texts()]
    assert any("reactor_legacy" in t for t in legends) and not any(t.startswith("reactor /") for t in legends)


def test_a_run_that_stored_no_names_falls_back_to_todays_presets_and_says_so(tmp_path: Path):
    _paired_job(tmp_path / "paired", store=False,
                residents=(*RESIDENTS[:3], (("ray", "actors_x9"), 1, 0.0, 0.9, "")))
    rep = make_report([tmp_path], figures=False)
    assert ("ray", "actors_packed") in rep.presets.fallback and rep.presets.get("ray", "actors_packed") == "ray_packed"
    said = [w for w in warnings(rep) if "stored no preset" in w]
    assert len(said) == 2 and "ray_packed (backend ray, variant actors_packed)" in said[0]
    assert "backend ray, variant actors_x9" in said[1] and "shown as backend:variant" in said[1]
    assert "ray_packed" in to_markdown(rep)


def test_names_stored_for_some_rows_only_are_taken_from_those_rows():
    import pandas as pd

    rows = pd.DataFrame({"backend": ["reactor", "reactor", "serial"], "variant": ["processes", "processes", "-"],
                         "meta": [{"preset": "reactor_processes"}, {}, {"preset": "serial"}]})
    names = PresetNames.from_rows(rows)
    assert names.get("reactor", "processes") == "reactor_processes" and not names.fallback


# ------------------------------------------------------------------------------------------ storing them

def test_a_job_stores_its_preset_and_hashes_as_before():
    cfg = {"scenario": {"name": "gym"}, "backend": {"name": "reactor"}, "budget": {"repetitions": 3},
           "workers": 2, "seed": 0, "threads_per_worker": 1}
    named = job_spec({**cfg, "preset": "reactor_threads"})
    assert named["preset"] == "reactor_threads" and config_hash(named) == config_hash(job_spec(cfg))
    assert job_metadata(named)["preset"] == "reactor_threads" and "preset" not in job_metadata(job_spec(cfg))


def test_a_paired_job_config_names_each_resident_by_its_preset():
    from harness.compare import CONF_DIR, job_configs

    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose(config_name="compare", overrides=["scenario=gym", "budget=smoke", "workers=2",
                                                        "backends=[serial,ray_packed,serial]"])
        jobs = job_configs(OmegaConf.to_container(cfg, resolve=True, enum_to_str=True))
    assert [j["preset"] for j in jobs] == ["serial", "ray_packed", "serial"]
    assert job_metadata(job_spec(jobs[1]))["preset"] == "ray_packed"


def _metas(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(m) for m in read_rows(folder)["metadata"]]


@pytest.mark.slow  # real jobs (~7 s); the fast equivalents: test_a_job_stores_its_preset_and_hashes_as_before, test_a_paired_job_config_names_each_resident_by_its_preset
def test_a_standalone_and_a_paired_job_store_their_presets_in_their_rows(tmp_path: Path):
    one = run_cli("scenario=gym", "budget=smoke", "workers=2", "backend=serial", "budget.repetitions=1",
                  run_dir=tmp_path / "standalone")
    assert one.returncode == 0, one.stderr[-3000:]
    assert {m.get("preset") for m in _metas(tmp_path / "standalone")} == {"serial"}
    two = run_cli("compare", "scenario=gym", "budget=smoke", "workers=2", "backends=[serial,serial]",
                  "compare.extra_work=[0,0.05]", "budget.warmup_rounds=5", "compare.block_rounds=20",
                  "compare.max_seconds=0.5", "compare.min_cycles=6", run_dir=tmp_path / "paired")
    assert two.returncode == 0, two.stderr[-3000:]
    assert {m.get("preset") for m in _metas(tmp_path / "paired")} == {"serial"}
    rep = make_report([tmp_path / "paired"], figures=False)
    (job,) = rep.paired
    assert sorted(job.labels) == ["serial:-", "serial:-#2 +5%"] and not rep.presets.fallback
    assert "serial +5%" in to_markdown(rep)
