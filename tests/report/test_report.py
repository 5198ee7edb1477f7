"""The report on small synthetic result sets with known answers, and the CLI end to end."""
from __future__ import annotations

import csv
import json
import math
import re
from pathlib import Path

import pandas as pd
import pytest

from harness.report import build_report, make_report
from harness.report.__main__ import main as cli_main
from harness.report.documents import to_html, to_markdown
from harness.report.readme import README_END, README_START
from harness.report.tables import warnings
from harness.results import COLUMNS

from tests.report.synthetic import Jobs


def _summary(rep, scenario: str, label: str, workers: int = 2) -> pd.Series:
    s = rep.analysis.summary
    sel = s[(s["scenario"] == scenario) & (s["label"] == label) & (s["workers"] == workers)]
    assert len(sel) == 1, sel
    return sel.iloc[0]


def _gym_pair(jobs: Jobs, workers: int = 2) -> None:
    jobs.write("gym", "serial", "-", 1, [1000, 1010, 990, 1005, 995])
    jobs.write("gym", "reactor", "processes", workers, [1800, 1810, 1790, 1805, 1795])
    jobs.write("gym", "ray", "actors", workers, [100, 101, 99, 102, 98])


def test_medians_efficiency_and_significant_speedup(jobs: Jobs) -> None:
    _gym_pair(jobs)
    rep = make_report([jobs.root], figures=False)
    reactor = _summary(rep, "gym", "reactor:processes")
    assert reactor["median"] == 1800
    assert reactor["ci_low"] <= 1800 <= reactor["ci_high"]
    assert reactor["n_ok"] == 5 and not reactor["unstable"]
    # ceiling = serial 1000/s x min(2 workers, 2 cores)
    assert reactor["ceiling"] == pytest.approx(2000)
    assert reactor["efficiency"] == pytest.approx(0.9)
    sp = rep.analysis.speedups
    r = sp[(sp["numerator"] == "reactor:processes") & (sp["denominator"] == "ray:actors")].iloc[0]
    assert r["ratio"] == pytest.approx(18.0)
    assert r["significant"] and r["headline"]
    back = sp[(sp["numerator"] == "ray:actors") & (sp["denominator"] == "reactor:processes")].iloc[0]
    assert back["ratio"] == pytest.approx(1 / 18.0)
    gm = rep.analysis.geomeans
    assert gm[(gm["scenario"] == "all")]["geomean"].iloc[0] == pytest.approx(18.0)
    paper = rep.paper.set_index("scenario")
    assert paper.loc["gym", "measured_value"] == pytest.approx(18.0)
    assert paper.loc["gym", "paper_value"] == pytest.approx(1.21)
    assert "cores: 2 (paper 32)" in paper.loc["gym", "this_machine"]
    assert "no atari rows" in paper.loc["atari", "how"]


def test_overlapping_backends_are_not_significant(jobs: Jobs) -> None:
    jobs.write("gym", "reactor", "processes", 2, [100, 110, 95, 105, 98])
    jobs.write("gym", "ray", "actors", 2, [102, 97, 108, 99, 104])
    rep = make_report([jobs.root], figures=False)
    sp = rep.analysis.speedups
    assert not sp["significant"].any()
    assert "not significant" in to_html(rep)  # the full speedup table (collapsed)


def test_differing_checksums_make_the_configuration_invalid(jobs: Jobs) -> None:
    jobs.write("gym", "reactor", "processes", 2, [500, 510, 505], checksums=["a", "b", "c"])
    jobs.write("gym", "ray", "actors", 2, [50, 51, 49], checksums=["a", "X", "c"])
    # another configuration (other workers) with equal checksums stays valid
    jobs.write("gym", "reactor", "processes", 1, [300, 301, 302], checksums=["a", "b", "c"])
    jobs.write("gym", "ray", "actors", 1, [30, 31, 32], checksums=["a", "b", "c"])
    rep = make_report([jobs.root], figures=False)
    v = rep.analysis.validity.set_index("config")
    assert sorted(v["valid"].tolist()) == [False, True]
    bad = v[~v["valid"]].iloc[0]
    assert "rep 1" in bad["detail"] and "ray:actors=X" in bad["detail"]
    sp = rep.analysis.speedups
    assert set(sp["workers"]) == {1}  # no speedup for the invalid configuration
    md = to_markdown(rep)
    assert "**INVALID**" in md and "no speedup: checksums differ" in md
    assert any("invalid" in w for w in warnings(rep))


def test_error_and_timeout_rows_are_listed_with_messages(jobs: Jobs) -> None:
    jobs.write("gym", "reactor", "processes", 2, [500, 510], failure=("error", "RuntimeError: worker 1 died"))
    jobs.write("gym", "ray", "actors", 2, [], failure=("timeout", "measurement exceeded timeout_s=120"))
    rep = make_report([jobs.root], figures=False)
    f = rep.analysis.failures
    assert sorted(f["status"]) == ["error", "timeout"]
    assert "RuntimeError: worker 1 died" in set(f["error"])
    md = to_markdown(rep)
    assert "worker 1 died" in md and "timeout_s=120" in md
    ray = _summary(rep, "gym", "ray:actors")
    assert ray["n_ok"] == 0 and ray["n_timeout"] == 1 and math.isnan(ray["median"])
    assert len(rep.analysis.speedups) == 0


def test_two_hosts_of_one_kind_of_machine_are_pooled_with_a_warning(jobs: Jobs) -> None:
    jobs.write("gym", "reactor", "processes", 2, [500, 510, 505])
    jobs.write("gym", "ray", "actors", 2, [50, 51, 49], meta={"hostname": "elsewhere"})
    rep = make_report([jobs.root], figures=False)
    assert len(rep.analysis.mixed) == 1 and len(rep.analysis.speedups)
    w = " ".join(warnings(rep))
    assert "mixed environment" in w and "elsewhere" in w


def test_results_of_different_machines_are_grouped_by_machine(jobs: Jobs) -> None:
    for host, cores, scale in (("box", 2, 1), ("big", 64, 10)):
        meta = {"hostname": host, "cpu_count": cores}
        jobs.write("gym", "reactor", "processes", 2, [500 * scale, 510 * scale, 505 * scale], meta=meta)
        jobs.write("gym", "ray", "actors", 2, [50 * scale, 51 * scale, 49 * scale], meta=meta)
    rep = make_report([jobs.root], figures=False)
    assert len(rep.analysis.mixed) == 0  # never two machines in one comparison
    configs = sorted(set(rep.analysis.summary["config"]))
    assert len(configs) == 2 and any("@ 64x" in c for c in configs) and any("@ 2x" in c for c in configs)
    sp = rep.analysis.speedups
    assert len(sp) and set(sp["config"]) == set(configs)
    assert "rows come from 2 machines" in " ".join(warnings(rep))


def test_mixed_versions_warn(jobs: Jobs) -> None:
    jobs.write("gym", "reactor", "processes", 2, [500, 510, 505])
    jobs.write("gym", "ray", "actors", 2, [50, 51, 49], meta={"versions": {"gymnasium": "1.0.0", "ray": "2.9.0"}})
    rep = make_report([jobs.root], figures=False)
    assert "software stacks" in rep.analysis.mixed["mixed"].iloc[0]


def test_partial_data_says_what_is_missing(jobs: Jobs) -> None:
    jobs.write("gym", "reactor", "processes", 2, [500])  # one backend, a single repetition
    rep = make_report([jobs.root], figures=True)
    w = " ".join(warnings(rep))
    assert "no standalone comparison" in w and "ray:actors" in w and "unstable" in w
    assert "1 repetition" in _summary(rep, "gym", "reactor:processes")["unstable_reasons"]
    assert any("two or more worker counts" in n for n in rep.figure_notes)


def test_only_error_rows_and_no_files(jobs: Jobs, tmp_path: Path) -> None:
    jobs.write("gym", "ray", "actors", 2, [], failure=("error", "boom"))
    rep = make_report([jobs.root], figures=True)
    assert any("no row has status ok" in w for w in warnings(rep))
    assert rep.plots == []
    empty = make_report([tmp_path / "nothing-here"], figures=True)
    assert any("no results.csv" in w for w in warnings(empty))
    to_markdown(empty)


def test_latest_run_supersedes_older_runs(jobs: Jobs) -> None:
    jobs.write("gym", "ray", "actors", 2, [10, 10, 10], started_at="2026-01-01T00:00:00+00:00")
    jobs.write("gym", "ray", "actors", 2, [50, 51, 49], started_at="2026-02-01T00:00:00+00:00")
    rep = make_report([jobs.root], figures=False)
    assert _summary(rep, "gym", "ray:actors")["median"] == 50
    assert rep.superseded_runs == 1
    pooled = make_report([jobs.root], all_runs=True, figures=False)
    assert _summary(pooled, "gym", "ray:actors")["n_ok"] == 6


def test_trials_are_pooled_and_each_trial_keeps_its_latest_run(jobs: Jobs) -> None:
    jobs.write("gym", "ray", "actors", 2, [10, 10, 10], started_at="2026-01-01T00:00:00+00:00", meta={"trial": 0})
    jobs.write("gym", "ray", "actors", 2, [50, 51, 49], started_at="2026-02-01T00:00:00+00:00", meta={"trial": 0})
    jobs.write("gym", "ray", "actors", 2, [70, 71, 69], started_at="2026-02-01T00:01:00+00:00", meta={"trial": 1})
    rep = make_report([jobs.root], figures=False)
    s = _summary(rep, "gym", "ray:actors")
    assert s["n_ok"] == 6 and s["median"] == 60  # trials 0 (latest run) and 1 pooled
    assert rep.superseded_runs == 1  # the first run of trial 0


def test_microbenchmark_overhead_and_dqn_breakdown(jobs: Jobs) -> None:
    for pb in (0, 1000, 100000):
        p = {"num_clients": 4, "payload_bytes": pb, "work": "busy", "work_us": 100.0}
        jobs.write("object_size", "reactor", "processes", 2, [100, 101, 99], params=p, round_work_ms=0.1,
                   latency_ms=0.1 + 0.05, env_id="-", num_envs=None)
    ex = [{"sampling_s": 1.0, "communication_s": 0.5, "training_s": 0.25}] * 3
    jobs.write("dqn", "reactor", "processes", 2, [10, 11, 10.5], extras=ex, env_id="Blackjack-v1",
               params={"minibatch": 500}, num_envs=None)
    rep = make_report([jobs.root], figures=True)
    obj = rep.analysis.summary[rep.analysis.summary["scenario"] == "object_size"]
    assert obj["overhead_ms"].tolist() == pytest.approx([0.05] * 3)
    names = {p.name for p in rep.plots}
    assert {"overhead_vs_payload", "dqn_phases", "dqn_wall_time", "latency_cdf"} <= names


def test_cli_writes_every_file_and_the_readme_section(jobs: Jobs, tmp_path: Path) -> None:
    _gym_pair(jobs)
    jobs.write("gym", "reactor", "processes", 1, [900, 905, 910, 895, 900])
    jobs.write("gym", "ray", "actors", 1, [50, 51, 49, 50, 50])
    readme = tmp_path / "README.md"
    readme.write_text(f"# Title\n\nbefore\n\n{README_START}\nold text\n{README_END}\n\nafter\n")
    out = tmp_path / "out"
    assert cli_main([str(jobs.root), "--out", str(out), "--readme", str(readme)]) == 0
    html_text = (out / "report.html").read_text()
    assert "data:image/png;base64," in html_text
    assert not re.search(r"(src|href)=['\"]https?:", html_text)  # self-contained
    md = (out / "report.md").read_text()
    for link in re.findall(r"\]\((figures/[^)]+)\)", md):
        assert (out / link).exists(), link
    assert (out / "figures" / "throughput_vs_workers.png").exists()
    assert not list((out / "figures").glob("*.svg"))  # one format: PNG
    with (out / "summary.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert {r["label"] for r in rows} == {"serial:-", "reactor:processes", "ray:actors"}
    assert "speedup_over_ray_actors" in rows[0]
    text = readme.read_text()
    assert text.startswith("# Title\n\nbefore\n\n") and text.endswith("\n\nafter\n")
    assert "old text" not in text and "reactor / ray" in text and "box" in text
    assert "| 18x [" in text  # the headline ratio 1800 / 100 at workers=2, with its interval
    assert "fastest: reactor (" in text  # the verdict in words, backends by their presets
    assert cli_main([str(jobs.root), "--out", str(out), "--no-figures", "--readme", str(readme)]) == 0
    assert readme.read_text() == text  # regenerating changes nothing
    # a README without the markers is refused, not rewritten
    bare = tmp_path / "BARE.md"
    bare.write_text("no markers\n")
    assert cli_main([str(jobs.root), "--out", str(out), "--no-figures", "--readme", str(bare)]) == 2
    assert bare.read_text() == "no markers\n"


def test_reads_real_columns_only(jobs: Jobs) -> None:
    path = jobs.write("gym", "serial", "-", 1, [1000, 1001, 999]) / "results.csv"
    header = path.read_text().splitlines()[0].split(",")
    assert tuple(header) == COLUMNS
    rep = make_report([path], figures=False)  # a single file works too
    assert len(rep.results.rows) == 3
    assert json.loads(rep.results.rows["params"].iloc[0]) == {"env_id": "CartPole-v1", "num_envs": 4}


def test_a_damaged_file_does_not_stop_the_report(jobs: Jobs) -> None:
    _gym_pair(jobs)
    broken = jobs.root / "99_broken" / "results.csv"
    broken.parent.mkdir(parents=True)
    broken.write_bytes(b"scenario,backend\n\xff\xfe\x00garbage")
    truncated = jobs.write("gym", "ray", "compiled", 2, [300, 301, 299]) / "results.csv"
    truncated.write_text(truncated.read_text()[:-40])  # cut mid-row, as an interrupted write would
    rep = make_report([jobs.root], figures=False)
    assert any("99_broken" in w for w in warnings(rep))
    assert _summary(rep, "gym", "reactor:processes")["median"] == 1800
    to_markdown(rep)
    # a row whose status is not in the contract's vocabulary is named, not silently dropped
    odd = jobs.write("gym", "vector", "-", 2, [400, 401, 399]) / "results.csv"
    lines = odd.read_text().splitlines()
    lines[1] = lines[1].replace(",ok,", ",weird,", 1)
    odd.write_text("\n".join(lines) + "\n")
    assert any("unknown status" in w for w in warnings(make_report([jobs.root], figures=False)))


def test_report_md_opens_with_verdicts_and_leaves_detail_to_html_and_summary(jobs: Jobs, tmp_path: Path) -> None:
    _gym_pair(jobs)
    for w, scale in ((1, 0.5), (4, 1.2)):
        jobs.write("gym", "reactor", "processes", w, [1800 * scale, 1810 * scale, 1790 * scale])
        jobs.write("gym", "ray", "actors", w, [100 * scale, 101 * scale, 99 * scale])
    out = tmp_path / "out"
    files = build_report([jobs.root], out=out, embed_figures=False)
    md = files.markdown.read_text()
    titles = re.findall(r"(?m)^## (.+)$", md)
    assert titles[:5] == ["The answer", "Every backend against serial", "Every backend against serial: the numbers",
                          "Headline", "Verdicts"]
    assert "![Every backend against serial]" in md or "relative_to_serial.png" in md
    # per-configuration detail: not in report.md, collapsed in report.html, every row in summary.csv
    assert "All speedups" not in titles and not any(t.startswith("Scenario") for t in titles)
    assert "## Per-configuration detail" in md and "- All speedups:" in md
    html_text = files.html.read_text()
    assert re.search(r"<details id='speedups'><summary>All speedups \(\d+ rows\)</summary>", html_text)
    assert "<details id='scenario-gym'><summary>Scenario gym" in html_text
    assert len(pd.read_csv(files.summary)) == len(make_report([jobs.root], figures=False).analysis.summary)
    # archived form: figures linked, not embedded, and every link resolves
    assert "base64" not in html_text
    for link in re.findall(r"src='(figures/[^']+)'", html_text):
        assert (out / link).exists(), link


def test_long_tables_are_cut_in_markdown_only(jobs: Jobs) -> None:
    from harness.report.compose import MD_ROWS
    for i in range(MD_ROWS + 5):
        jobs.write("gym", "ray", "actors", 2, [], failure=("error", f"boom {i}"), params={"env_id": "x", "i": i})
    rep = make_report([jobs.root], figures=False)
    md = to_markdown(rep)
    assert len(re.findall(r"\| boom \d+ \|", md)) == MD_ROWS and "5 more rows in report.html" in md
    assert len(re.findall(r"<td>boom \d+</td>", to_html(rep))) == MD_ROWS + 5


def test_without_a_folder_the_report_reads_the_latest_sweep_only(tmp_path: Path, monkeypatch) -> None:
    from harness.report.__main__ import DEFAULT_DIR

    monkeypatch.chdir(tmp_path)
    assert cli_main(["--no-figures"]) == 2  # no sweep yet: says so, writes nothing
    assert not (tmp_path / "results").exists()
    latest = Jobs(tmp_path / DEFAULT_DIR)
    latest.write("gym", "serial", "-", 1, [1000, 1010, 990])
    reference = Jobs(tmp_path / "results" / "reference" / "old-run")
    reference.write("gym", "ray", "actors", 2, [50, 51, 49])
    assert cli_main(["--no-figures"]) == 0
    summary = pd.read_csv(tmp_path / DEFAULT_DIR / "report" / "summary.csv")
    assert list(summary["label"]) == ["serial:-"]
    # results/ as a whole: the sweeps, never the reference runs below it; a reference run is read by name
    assert set(make_report([tmp_path / "results"], figures=False).results.rows["label"]) == {"serial:-"}
    named = make_report([tmp_path / "results" / "reference" / "old-run"], figures=False)
    assert set(named.results.rows["label"]) == {"ray:actors"}


def test_no_geometric_mean_mixes_rl_workloads_and_microbenchmarks(jobs: Jobs) -> None:
    _gym_pair(jobs)  # reactor / ray = 18x on gym
    p = {"num_clients": 2, "payload_bytes": 0}
    jobs.write("actors", "reactor", "processes", 2, [50000, 50100, 49900], env_id="-", num_envs=None, params=p)
    jobs.write("actors", "ray", "actors", 2, [100, 101, 99], env_id="-", num_envs=None, params=p)  # 500x
    jobs.write("dqn", "reactor", "processes", 2, [20, 20.1, 19.9], env_id="Blackjack-v1", num_envs=None,
               params={"minibatch": 250})
    jobs.write("dqn", "ray", "actors", 2, [10, 10.1, 9.9], env_id="Blackjack-v1", num_envs=None,
               params={"minibatch": 250})  # 2x
    from harness.report.tables import geomean_table

    rows = geomean_table(make_report([jobs.root], figures=False)).rows
    scopes = {r[1]: r[2] for r in rows if r[0] == "reactor:processes / ray:actors"}
    assert "all" not in scopes  # the analysis's mean across every scenario is never shown
    assert scopes["RL workloads (gym, dqn)"] == "6x"  # sqrt(18 * 2), the actors' 500x left out
    assert "microbenchmarks (actors)" not in scopes  # one microbenchmark: no mean to take
    assert scopes["actors"] == "500x"
