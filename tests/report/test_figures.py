"""Figures that cannot mislead: every picture titled with its workload and unit, ratio bars drawn from 1, one
shared axis in the opening picture, bounds as labelled markers, a style per backend, no two-point curves."""
from __future__ import annotations

from pathlib import Path

from harness.report.build import make_report
from harness.report.figures import KNOWN_STYLES, color, marker
from tests.report.synthetic import Jobs


def _run(jobs: Jobs) -> None:
    jobs.write("gym", "serial", "-", 2, [1000, 1010, 990, 1005, 995])
    jobs.write("gym", "reactor", "processes", 2, [1800, 1810, 1790, 1805, 1795])
    jobs.write("gym", "ray", "actors", 2, [100, 101, 99, 102, 98])
    jobs.write("gym", "capacity", "-", 2, [1900, 1910, 1890, 1905, 1895])
    jobs.write("gym", "serial", "-", 1, [1000, 1010, 990, 1005, 995])
    jobs.write("gym", "reactor", "processes", 1, [900, 905, 910, 895, 900])
    jobs.write("gym", "ray", "actors", 1, [50, 51, 49, 50, 50])
    for pb in (0, 1000):  # two payload sizes: points, never a line through two points
        p = {"num_clients": 4, "payload_bytes": pb, "work": "busy", "work_us": 100.0}
        jobs.write("object_size", "reactor", "processes", 2, [100, 101, 99], params=p, round_work_ms=0.1,
                   latency_ms=0.15, env_id="-", num_envs=None)


def test_every_picture_is_titled_with_its_workload_and_unit(jobs: Jobs) -> None:
    _run(jobs)
    rep = make_report([jobs.root], figures=True)
    assert rep.plots
    for p in rep.plots:
        p.png()
        title = p.figure._suptitle.get_text()
        assert any(s in title for s in ("gym", "object_size", "RL workloads")), title
        assert any(u in title for u in ("/s", "ms", "unit", "(s", "us ")), title


def test_ratio_bars_start_at_one_and_the_opening_picture_shares_one_axis(jobs: Jobs) -> None:
    _run(jobs)
    rep = make_report([jobs.root], figures=True)
    bars = next(p for p in rep.plots if p.name == "speedups").figure.axes[0].patches
    assert bars and all(abs(b.get_y() - 1.0) < 1e-9 for b in bars)  # from 1, up or down
    opening = next(p for p in rep.plots if p.name == "relative_to_serial").figure
    assert len([ax for ax in opening.axes if ax.get_visible()]) == 1  # one axis for every configuration
    labels = opening.axes[0].get_legend_handles_labels()[1]
    assert any(lab.startswith("measured ceiling") for lab in labels) and "serial (1x)" in labels
    assert not any(":" in lab.split(" ")[0] for lab in labels)  # presets, not backend:variant


def test_no_two_point_curves(jobs: Jobs) -> None:
    _run(jobs)
    rep = make_report([jobs.root], figures=True)
    for p in rep.plots:
        for ax in p.figure.axes:
            for line in ax.get_lines():
                if len(line.get_xdata()) == 2 and line.get_linestyle() not in ("None", "none", ""):
                    xs = list(line.get_xdata())
                    # interval whiskers and reference lines are two-point segments by design; a data curve is not
                    assert p.name not in ("overhead_vs_payload", "overhead_vs_clients"), (p.name, xs)


def test_every_backend_has_its_own_colour_and_marker() -> None:
    styles = list(KNOWN_STYLES.values())
    assert len({c for c, _ in styles}) == len(styles) and len({m for _, m in styles}) == len(styles)
    assert color("reactor:threads ft") == color("reactor:threads")
    # an A/A copy is drawn apart from its backend (tests/report/test_labels_typed.py: and an injected copy)
    assert marker("serial:-#2") != marker("serial:-") and color("serial:-#2") != color("serial:-")


def test_a_figure_is_written_as_a_palette_png_a_third_of_the_full_colour_size():
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    from PIL import Image

    from harness.report.figures import Plot

    fig, ax = plt.subplots(figsize=(6, 3))
    for i in range(6):
        ax.plot(np.arange(50), np.cumsum(np.random.default_rng(i).normal(size=50)), label=f"line {i}")
    ax.legend()
    plot = Plot("lines", "six lines", fig)
    png = plot.png()
    full = io.BytesIO()
    fig.savefig(full, format="png", dpi=90)
    image = Image.open(io.BytesIO(png))
    assert image.mode == "P" and image.size == Image.open(io.BytesIO(full.getvalue())).size
    assert len(png) < 0.6 * len(full.getvalue())
    plt.close(fig)
