"""One vocabulary: reports name backends by the preset a user types, derived from conf/backend/*.yaml (never a
table written by hand), and every string a person reads says it that way."""
from __future__ import annotations

from pathlib import Path

import yaml

from harness.labels import BackendLabel, preset_name, preset_names, preset_row, preset_table
from harness.report.build import make_report
from harness.report.documents import to_html, to_markdown
from harness.report.model import vocabulary
from tests.report.synthetic import Jobs


def test_every_preset_maps_back_to_itself_or_its_shorter_alias():
    """Each preset's composed (backend, variant) names that preset again, or a shorter preset that gives the same
    rows (``puffer_overwork`` rows are ``puffer`` rows): the table cannot drift from conf/."""
    folder = Path(__file__).resolve().parents[2] / "conf" / "backend"
    table = preset_table()
    assert len(table) >= 15 and {"reactor", "serial", "ray_packed", "ale_vector"} <= set(table.values())
    for preset in preset_names():
        row = preset_row(folder / f"{preset}.yaml")
        named = BackendLabel(*row).preset_name()
        assert named == preset or (len(named) <= len(preset) and preset_row(folder / f"{named}.yaml") == row), preset


def test_the_names_users_type():
    assert [preset_name(x) for x in ("serial:-", "reactor:processes", "reactor:threads", "ray:actors_packed",
                                     "ray:compiled", "capacity:lockstep", "serial:-#2", "reactor:threads ft")] == [
        "serial", "reactor", "reactor_threads", "ray_packed", "ray_compiled", "capacity_lockstep", "serial#2",
        "reactor_threads@ft"]
    assert preset_name("ray:actors_x9") == "ray:actors_x9"  # no preset gives it: the row's own label stays


def test_a_new_preset_is_picked_up_from_its_file(tmp_path: Path):
    for f in Path(__file__).resolve().parents[2].joinpath("conf", "backend").glob("*.yaml"):
        (tmp_path / f.name).write_text(f.read_text())
    (tmp_path / "reactor_fast.yaml").write_text(yaml.safe_dump({"defaults": ["reactor_schema"],
                                                                "executor": "processes", "max_processes": 3}))
    assert BackendLabel("reactor", "processes-max3").preset_name(tmp_path) == "reactor_fast"


def test_the_report_speaks_presets_everywhere_but_keeps_labels_in_its_files(tmp_path: Path):
    jobs = Jobs(tmp_path / "results")
    jobs.write("gym", "serial", "-", 2, [1000, 1010, 990, 1005, 995])
    jobs.write("gym", "reactor", "processes", 2, [1800, 1810, 1790, 1805, 1795])
    jobs.write("gym", "ray", "actors_packed", 2, [400, 401, 399, 402, 398])
    rep = make_report([jobs.root], figures=False)
    for text in (to_markdown(rep), to_html(rep)):
        assert "reactor:processes" not in text and "serial:-" not in text and "ray:actors_packed" not in text
        assert "ray_packed" in text and "reactor" in text
    assert set(rep.analysis.summary["label"]) == {"serial:-", "reactor:processes", "ray:actors_packed"}
    say = vocabulary(["serial:-", "serial:-#2", "reactor:threads ft"])
    assert say("serial:-#2 vs serial:- and reactor:threads ft") == "serial#2 vs serial and reactor_threads@ft"


def test_the_docs_name_every_backend_a_user_can_type():
    """README's backend list and docs/harness.md's table name every preset in conf/backend/ (the report speaks
    them; a user must find them)."""
    root = Path(__file__).resolve().parents[2]
    readme, harness_md = (root / "README.md").read_text(), (root / "docs" / "harness.md").read_text()
    missing = [(doc, p) for p in preset_names() for doc, text in (("README.md", readme), ("docs/harness.md", harness_md))
               if f"`{p}`" not in text]
    assert not missing, missing
