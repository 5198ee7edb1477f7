"""The report opens with its answer: the first screen of report.html (1400x900) holds one line per RL workload
with its ratio, interval and share of the ceiling. Checked twice: on the HTML's structure (fast, always), and in
a real browser (headless Chromium lays the page out; skipped, with the reason, where none is installed), on
the reference runs of `make bench-paired` and of a full `make bench` (`make report-check`)."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from harness.report.answer import answers
from harness.report.build import build_report, make_report
from harness.report.documents import to_html, to_markdown
from harness.results import ResultsWriter, make_row
from tests.report.synthetic import Jobs

REPO = Path(__file__).resolve().parents[2]
REFERENCE = REPO / "results" / "reference"
#: the reference runs the browser check reads: a `make bench-paired` run (paired jobs only) and a full sweep
RUNS = ("vm-2core-2026-12-04-bench-paired/run-1", "vm-2core-2026-12-02n")
WIDTH, HEIGHT = 1400, 900


class _Outline(HTMLParser):
    """The order of the page's top-level parts (h1, p, section ids, div ids) and the answer table's rows."""

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self.rows: list[str] = []
        self._in_answer = self._in_row = False
        self._depth = 0
        self._cell: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag in ("section", "details", "div") and a.get("id"):
            self.parts.append(f"{tag}#{a['id']}")
            self._in_answer = a.get("id") == "answer"
        elif tag in ("h1",):
            self.parts.append(tag)
        if self._in_answer and tag == "tr":
            self._in_row, self._cell = True, []

    def handle_endtag(self, tag):
        if tag == "section":
            self._in_answer = False
        if self._in_row and tag == "tr":
            self._in_row = False
            self.rows.append(" | ".join(self._cell))

    def handle_data(self, data):
        if self._in_row and data.strip():
            self._cell.append(data.strip())


def _paired_job(folder: Path) -> None:
    rng = np.random.default_rng(3)
    writer = ResultsWriter(folder)
    base = {"scenario": "atari", "workers": 2, "num_envs": 15, "env_id": "ALE/Pong-v5", "budget": "local", "seed": 0,
            "threads_per_worker": 1, "params": {"num_envs": 15}, "unit": "env_steps",
            "metadata": {"hostname": "box", "cpu_model": "Test CPU", "cpu_count": 2, "started_at": "2026-01-01T00:00"}}
    block = 0
    for cycle in range(30):
        serial = 2000 * rng.uniform(0.7, 1.3)
        for (b, v), k in ((("serial", "-"), 1.0), (("reactor", "processes"), 1.8), (("capacity", "lockstep"), 1.9)):
            tp = serial * k * rng.normal(1, 0.02)
            writer.append(make_row({**base, "backend": b, "variant": v}, repetition=cycle, cycle=cycle, block=block,
                                   status="ok", units=1000, seconds=1000 / tp, throughput=tp, checksum=f"c{cycle}",
                                   extra={"paired": True, "block_rounds": 50}))
            block += 1


def test_the_page_opens_with_one_answer_row_per_rl_workload(jobs: Jobs) -> None:
    jobs.write("gym", "serial", "-", 2, [1000, 1010, 990, 1005, 995])
    jobs.write("gym", "reactor", "processes", 2, [1800, 1810, 1790, 1805, 1795])
    jobs.write("gym", "capacity", "-", 2, [1900, 1910, 1890, 1905, 1895])
    jobs.write("actors", "reactor", "processes", 2, [50000, 50100, 49900], env_id="-", num_envs=None,
               params={"num_clients": 2, "payload_bytes": 0})
    _paired_job(jobs.root / "paired")
    rep = make_report([jobs.root], figures=False)
    outline = _Outline()
    outline.feed(to_html(rep))
    assert outline.parts[:2] == ["h1", "section#answer"], outline.parts[:4]  # nothing before the answer
    header, *rows = outline.rows
    assert header.startswith("workload | who wins")
    assert len(rows) == 2  # gym (standalone) and atari (paired); the actors microbenchmark is not an RL row
    gym = next(r for r in rows if r.startswith("gym"))
    assert "reactor, 1.80x [" in gym and "over serial" in gym and "95% measured" in gym
    atari = next(r for r in rows if r.startswith("atari"))
    assert "paired, 30 cycles" in atari and re.search(r"1\.[78]\dx \[", atari) and "% synchronized" in atari
    assert outline.parts.index("section#micro") > outline.parts.index("section#verdicts")
    md = to_markdown(rep)
    assert "(none)" not in md and "no speedups" not in md  # every empty section says why


_PROBE = """<script>
const rows = [...document.querySelectorAll('#answer tbody tr')];
document.body.setAttribute('data-probe', JSON.stringify({height: window.innerHeight, width: window.innerWidth,
  rows: rows.map(r => ({bottom: r.getBoundingClientRect().bottom, text: r.innerText}))}));
</script></body>"""


def _browser() -> str | None:
    return next((b for b in (shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")) if b), None)


@pytest.mark.parametrize("run", RUNS)
def test_the_first_screen_holds_the_answer_in_a_browser(run: str, tmp_path: Path) -> None:
    browser = _browser()
    if browser is None:
        pytest.skip("no headless browser (chromium) on this machine: `apt-get install chromium` to run this check")
    folder = REFERENCE / run
    if not folder.exists():
        pytest.skip(f"reference run {run} not in this checkout")
    files = build_report([folder], out=tmp_path / "report", figures=False)
    page = tmp_path / "probe.html"
    page.write_text(files.html.read_text().replace("</body>", _PROBE, 1))
    out = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                          f"--window-size={WIDTH},{HEIGHT}", "--dump-dom", page.as_uri()],
                         capture_output=True, text=True, timeout=180)
    m = re.search(r"data-probe=\"([^\"]+)\"", out.stdout)
    assert m, out.stderr[-2000:]
    probe = json.loads(m.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    expected = answers(make_report([folder], figures=False))
    assert len(probe["rows"]) == len(expected) >= 5
    for row, a in zip(probe["rows"], expected):
        assert row["bottom"] <= probe["height"] <= HEIGHT, (row, probe["height"])  # on the first screen
        assert a.workload in row["text"] and re.search(r"\d\.\d+x \[", row["text"]) and "%" in row["text"]
