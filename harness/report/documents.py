"""Writing the report: a self-contained HTML page and a Markdown page with linked figures, from the sections of
`harness.report.compose`. Every string a person reads passes through the report's vocabulary
(`harness.report.model.vocabulary`: backends by the preset a user types)."""
from __future__ import annotations

import html
import re
from typing import Callable, Optional

from harness.report.compose import WARNINGS_BEFORE, section_empty, sections
from harness.report.figures import Plot
from harness.report.fmt import Table
from harness.report.model import Report, counts, report_machine, report_vocabulary
from harness.report.tables import warnings

CSS = """body{font-family:system-ui,sans-serif;margin:1em 2em;max-width:1400px;color:#222}
h1{font-size:1.35em;margin:.1em 0}h2{font-size:1.2em;margin:.8em 0 .3em}p.head{margin:.1em 0;font-size:12px;color:#444}
table{border-collapse:collapse;margin:.5em 0 1.5em;font-size:13px}th,td{border:1px solid #ccc;padding:3px 6px;
text-align:left;vertical-align:top}th{background:#f3f3f3}tr.invalid td{background:#fdd;color:#a00}
tr.failed td{background:#fff3f0}tr.unstable td:nth-child(8){color:#a60}tr.paired td{background:#f2f7fc}
#answer table{font-size:13px;margin-top:.3em}#answer td{padding:2px 5px}#answer td:first-child{font-weight:600}
#answer p{margin:.2em 0}.warn{background:#fff8e1;border:1px solid
#e0c060;padding:.5em 1em}figure{margin:1em 0}img{max-width:100%}figcaption{font-size:13px;color:#555}
summary{cursor:pointer;font-weight:600}p.note{font-size:13px;color:#555;margin-top:-1em}"""


def _anchor(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


def _html_figure(p: Plot, figure_dir: Optional[str], say: Callable[[str], str]) -> str:
    src = f"{figure_dir}/{p.name}.png" if figure_dir else f"data:image/png;base64,{p.png_base64()}"
    return (f"<figure><img alt='{html.escape(say(p.title))}' src='{html.escape(src)}'>"
            f"<figcaption><strong>{html.escape(say(p.title))}.</strong> {html.escape(say(p.caption))}</figcaption>"
            "</figure>")


def _said(t: Table, say: Callable[[str], str]) -> Table:
    return Table([say(h) for h in t.header], [[say(str(c)) for c in row] for row in t.rows], t.classes,
                 say(t.empty))


def to_html(rep: Report, figure_dir: Optional[str] = None) -> str:
    """The HTML page. Without ``figure_dir`` it is self-contained (figures embedded as base64 PNG); with it,
    figures are linked (``<figure_dir>/<name>.png``, relative to the page), which keeps archived reports small.
    Per-configuration detail is collapsed (``<details>``)."""
    say = report_vocabulary(rep)
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>reactorbench report</title>"
             f"<style>{CSS}</style></head><body><h1>reactorbench report</h1>",
             f"<p class='head'>Machine: {html.escape(report_machine(rep))}. From {html.escape(', '.join(rep.sources))}: "
             f"{html.escape(counts(rep))}; generated {html.escape(rep.generated_at)}. How to read it: "
             "docs/report.md.</p>"]
    warns = [say(w) for w in warnings(rep)]
    for sec in sections(rep):
        if sec.key == WARNINGS_BEFORE and warns:  # after the answer and the picture, before the numbers
            parts.append("<div class='warn' id='warnings'><strong>Warnings and missing data</strong><ul>"
                         + "".join(f"<li>{html.escape(w)}</li>" for w in warns) + "</ul></div>")
        body = []
        if sec.intro:
            body.append(f"<p>{html.escape(say(sec.intro))}</p>")
        empty = say(section_empty(rep, sec))
        if isinstance(sec.content, Table):
            t = _said(sec.content, say)
            t.empty = empty if not t.rows else t.empty
            body.append(t.html())
        elif sec.content and isinstance(sec.content[0], str):
            body.append("<ul>" + "".join(f"<li>{html.escape(say(x))}</li>" for x in sec.content) + "</ul>")
        elif isinstance(sec.content, list):
            if rep.figure_notes and sec.key == "figures":
                body.append("<p>Not drawn:</p><ul>" + "".join(f"<li>{html.escape(say(n))}</li>"
                                                              for n in rep.figure_notes) + "</ul>")
            body += [_html_figure(p, figure_dir, say) for p in sec.content]
            if not sec.content and sec.key != "figures":
                body.append(f"<p><em>{html.escape(empty)}</em></p>")
        if sec.note:
            body.append(f"<p class='note'>{html.escape(say(sec.note))}</p>")
        ident = sec.key or _anchor(sec.title)
        if sec.detail:
            n = len(sec.content.rows) if isinstance(sec.content, Table) else len(sec.content)
            parts.append(f"<details id='{ident}'><summary>{html.escape(say(sec.title))} ({n} rows)</summary>"
                         f"{''.join(body)}</details>")
        else:
            parts.append(f"<section id='{ident}'><h2>{html.escape(say(sec.title))}</h2>" + "".join(body)
                         + "</section>")
    parts.append("</body></html>")
    return "\n".join(parts)


def to_markdown(rep: Report, figure_dir: str = "figures") -> str:
    """The Markdown page a person reads: the answer, the opening figure, the headline and the verdicts, the
    microbenchmarks, the paper; long tables are cut to `harness.report.compose.MD_ROWS` rows and
    per-configuration detail is left to summary.csv and report.html."""
    say = report_vocabulary(rep)
    lines = ["# reactorbench report", "",
             f"Machine: {report_machine(rep)}. From {', '.join(rep.sources)}: {counts(rep)}; generated "
             f"{rep.generated_at}. How to read it: docs/report.md.", ""]
    warns = [say(w) for w in warnings(rep)]
    detail: list[str] = []
    for sec in sections(rep):
        if sec.key == WARNINGS_BEFORE and warns:
            lines += ["**Warnings and missing data**", ""] + [f"- {w}" for w in warns] + [""]
        if sec.detail:
            n = len(sec.content.rows) if isinstance(sec.content, Table) else len(sec.content)
            detail.append(f"- {say(sec.title)}: {n} rows")
            continue
        lines += [f"## {say(sec.title)}", ""]
        if sec.intro:
            lines += [say(sec.intro), ""]
        empty = say(section_empty(rep, sec))
        if isinstance(sec.content, Table):
            t = _said(sec.content, say)
            t.empty = empty if not t.rows else t.empty
            if sec.md_rows is not None and len(t.rows) > sec.md_rows:
                shown = Table(t.header, t.rows[:sec.md_rows], t.classes[:sec.md_rows])
                lines += [shown.markdown(), f"_... and {len(t.rows) - sec.md_rows} more rows in report.html._", ""]
            else:
                lines.append(t.markdown())
        elif sec.content and isinstance(sec.content[0], str):
            shown = sec.content if sec.md_rows is None else sec.content[:sec.md_rows]
            lines += [f"- {say(x)}" for x in shown] + [""]
            if len(shown) < len(sec.content):
                lines += [f"_... and {len(sec.content) - len(shown)} more in report.html._", ""]
        elif isinstance(sec.content, list):
            if rep.figure_notes and sec.key == "figures":
                lines += ["Not drawn:", ""] + [f"- {say(n)}" for n in rep.figure_notes] + [""]
            shown = sec.content if sec.md_rows is None else sec.content[:sec.md_rows]
            said = None
            for p in shown:  # a caption that repeats the one above is said once (per-job figures share theirs)
                caption = "" if p.caption == said else f" {say(p.caption)}"
                said = p.caption
                lines += [f"![{say(p.title)}]({figure_dir}/{p.name}.png)", "", f"*{say(p.title)}.*{caption}", ""]
            if len(shown) < len(sec.content):
                lines += [f"_... and {len(sec.content) - len(shown)} more figures in report.html and {figure_dir}/._", ""]
            if not sec.content and sec.key != "figures":
                lines += [f"_{empty}_", ""]
        if sec.note:
            lines += [say(sec.note), ""]
    if detail:
        lines += ["## Per-configuration detail", "",
                  "One row per configuration and backend, with its speedups over the headline backends, in "
                  "`summary.csv`; every table below in full in `report.html` (collapsed):", ""] + detail + [""]
    return "\n".join(lines)
