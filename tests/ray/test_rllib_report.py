"""The report shows RLlib's rows as a labelled reference beside the verdicts, never inside them (synthetic
rows written through the real results contract, as backends/rllib.py writes them)."""
from __future__ import annotations

from harness.report.build import make_report
from harness.report.documents import to_html, to_markdown
from harness.report.readme import readme_section
from tests.report.synthetic import Jobs

RLLIB_EXTRA = {"equal_work_promised": False, "reference": "RLlib sampler, not equal work"}


def _tight(center: float, n: int = 6) -> list[float]:
    return [center * (1 + 0.002 * (i - n / 2)) for i in range(n)]


def test_rllib_is_named_and_labelled_beside_the_verdict_never_in_it(tmp_path):
    jobs = Jobs(tmp_path / "results")
    same = [f"s{i}" for i in range(6)]
    jobs.write("gym", "serial", "-", 2, _tight(1000), checksums=same)
    jobs.write("gym", "reactor", "processes", 2, _tight(1500), checksums=same)
    jobs.write("gym", "ray", "actors_packed", 2, _tight(400), checksums=same)
    # the fastest of all, but a reference: not the verdict's winner, not the best alternative
    jobs.write("gym", "rllib", "module", 2, _tight(5000), checksums=["rllib:not-equal-work"] * 6,
               extras=[RLLIB_EXTRA] * 6)
    rep = make_report([jobs.root], figures=False)
    assert rep.analysis.validity["valid"].all()
    (h,) = rep.analysis.headlines
    assert "rllib:module" not in h.medians and "rllib" not in h.verdict
    assert h.fastest == "reactor:processes" and h.best_alternative == "ray:actors_packed"
    (ref,) = rep.analysis.references
    assert (ref.label, ref.reference) == ("rllib:module", "RLlib sampler, not equal work")
    assert 4.9 < ref.vs_serial.ratio < 5.1
    md = to_markdown(rep)
    assert "## References (not the same work)" in md
    line = next(x for x in md.splitlines() if x.startswith("- ") and ": rllib (" in x)  # by its preset
    assert "RLlib sampler, not equal work" in line and "not in the verdict" in line and "of serial" in line
    assert "RLlib sampler, not equal work" in readme_section(rep)
    assert "NOT THE SAME WORK (RLlib sampler, not equal work; no verdict)" in to_html(rep)


def test_a_reference_stays_out_of_the_verdict_even_with_a_matching_checksum(tmp_path):
    jobs = Jobs(tmp_path / "results")
    same = [f"s{i}" for i in range(6)]
    jobs.write("gym", "serial", "-", 2, _tight(1000), checksums=same)
    jobs.write("gym", "rllib", "module", 2, _tight(3000), checksums=same, extras=[RLLIB_EXTRA] * 6)
    rep = make_report([jobs.root], figures=False)
    (h,) = rep.analysis.headlines
    assert h.medians.keys() == {"serial:-"} and h.best_alternative is None


def test_a_report_without_references_has_no_references_section(tmp_path):
    jobs = Jobs(tmp_path / "results")
    jobs.write("gym", "serial", "-", 2, _tight(1000))
    rep = make_report([jobs.root], figures=False)
    assert rep.analysis.references == [] and "References" not in to_markdown(rep)
