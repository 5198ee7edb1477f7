"""Formatting: numbers, intervals and tables as strings. Numbers are formatted here and only here; a `Table`
holds strings and writes itself as Markdown or HTML (`harness.report.documents` lays the tables out)."""
from __future__ import annotations

import html
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from harness.report.stats import ALPHA


def num(x: Any, digits: int = 3) -> str:
    """A number with ``digits`` significant digits and thousands separators; ``-`` for missing."""
    try:
        v = float(x)
    except (TypeError, ValueError):
        return "-"
    if not math.isfinite(v):
        return "-"
    if v == 0:
        return "0"
    if v.is_integer() and abs(v) >= 1:
        return f"{int(v):,}"
    mag = math.floor(math.log10(abs(v)))
    decimals = max(0, digits - 1 - mag)
    return f"{v:,.{decimals}f}"


def interval(lo: Any, hi: Any) -> str:
    return f"[{num(lo)}, {num(hi)}]" if num(lo) != "-" else "-"


def ratio(med: Any, lo: Any, hi: Any) -> str:
    """``1.25x [1.16, 1.31]`` (``-`` when not measured; no interval when it has none)."""
    if num(med) == "-":
        return "-"
    return f"{num(med)}x {interval(lo, hi)}" if num(lo) != "-" else f"{num(med)}x (no interval)"


def percent(x: Any) -> str:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return "-"
    return f"{v:.0%}" if math.isfinite(v) else "-"


def ratio_text(r: pd.Series, compact: bool = False) -> str:
    """``3.21x [2.9, 3.5]`` plus significance (``compact``: ``(p=0.008)`` or ``(n.s.)``)."""
    if not np.isfinite(r["ratio"]):
        return "-"
    if compact:
        return (f"{num(r['ratio'])}x {interval(r['ci_low'], r['ci_high'])} "
                + (f"(p={r['p_value']:.2g})" if r["significant"] else "(n.s.)"))
    # a test says little beyond its resolution: the smallest p its sample sizes can give
    res = f"; smallest p reachable at n={r['n_a']}+{r['n_b']}: {r['min_p']:.2g}"
    sig = f"p={r['p_value']:.2g}{res}" if r["significant"] else (
        f"not significant (p={r['p_value']:.2g}" + (f"; n={r['n_a']}+{r['n_b']} cannot reach p<{ALPHA})"
                                                   if r["min_p"] >= ALPHA else f"{res})"))
    return f"{num(r['ratio'])}x {interval(r['ci_low'], r['ci_high'])}, {sig}"


def _marked(cells: list[str], cls: str, mark: str) -> list[str]:
    """Invalid rows say so in words too (red alone is lost in a plain-text or colour-blind reading)."""
    return [mark + cells[0], *cells[1:]] if cls == "invalid" and cells else cells


#: what an empty table says when nothing more specific is known
NONE = "(none)"


@dataclass
class Table:
    """A rendered table: header, cells (strings), per-row CSS class (``invalid``, ``unstable``, ``paired``...)
    and what to say when it has no rows (``empty``: e.g. "no standalone rows: ...")."""

    header: list[str]
    rows: list[list[str]]
    classes: list[str] = field(default_factory=list)
    empty: str = NONE

    def markdown(self) -> str:
        if not self.rows:
            return f"_{self.empty}_\n"
        esc = lambda s: str(s).replace("|", "\\|").replace("\n", " ")  # noqa: E731
        lines = ["| " + " | ".join(map(esc, self.header)) + " |", "|" + "---|" * len(self.header)]
        for cells, cls in zip(self.rows, self.classes or [""] * len(self.rows)):
            cells = _marked(cells, cls, "**INVALID** ")
            lines.append("| " + " | ".join(map(esc, cells)) + " |")
        return "\n".join(lines) + "\n"

    def html(self) -> str:
        if not self.rows:
            return f"<p><em>{html.escape(self.empty)}</em></p>"
        head = "".join(f"<th>{html.escape(h)}</th>" for h in self.header)
        body = []
        for cells, cls in zip(self.rows, self.classes or [""] * len(self.rows)):
            cells = _marked(cells, cls, "INVALID: ")
            tds = "".join(f"<td>{html.escape(str(c))}</td>" for c in cells)
            body.append(f'<tr class="{cls}">{tds}</tr>' if cls else f"<tr>{tds}</tr>")
        return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
