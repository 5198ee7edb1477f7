"""What the report is made of: the `Report` (rows, analysis, figures, paired jobs) and its `Section`s, with the
names every part shares (a configuration's readable name, a backend's display name, the machine)."""
from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
import re
from typing import Any, Callable, Optional

import numpy as np
import pandas as pd

from harness.labels import BackendLabel, PresetNames
from harness.report.analysis import Analysis
from harness.report.figures import Plot, describe, natural_key, varying_params  # noqa: F401 (natural_key)
from harness.report.load import ResultSet

#: the RL workloads, in the order the report answers them; every other scenario is a microbenchmark
RL_SCENARIOS = ("gym", "atari", "dqn", "marl")


def is_rl(scenario: Any) -> bool:
    return str(scenario) in RL_SCENARIOS


def scenario_order(scenario: Any) -> int:
    """gym, atari, dqn, marl first (in that order), then the microbenchmarks."""
    s = str(scenario)
    return RL_SCENARIOS.index(s) if s in RL_SCENARIOS else len(RL_SCENARIOS)


@dataclass
class Report:
    """Everything the renderers need: the loaded rows, the analysis, the paper table and the figures."""

    results: ResultSet
    analysis: Analysis
    paper: pd.DataFrame
    plots: list[Plot]
    sources: list[str]
    superseded_runs: int = 0
    #: configuration -> readable name (computed on first use)
    names: Optional[dict[str, str]] = None
    #: figures that could not be drawn, and why
    figure_notes: list[str] = field(default_factory=list)
    #: paired jobs (`harness.report.paired.PairedJob`), analyzed apart from the standalone rows above, and
    #: their sections (`harness.report.paired_render`)
    paired: list = field(default_factory=list)
    paired_sections: list = field(default_factory=list)
    #: the paired jobs' rows (their machine, when no standalone row says it)
    paired_rows: Optional[pd.DataFrame] = None
    generated_at: str = field(default_factory=lambda: _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))
    #: the preset names the run's jobs were run with (`harness.labels.PresetNames`; read from the rows on first
    #: use of `presets`)
    preset_names: Optional[PresetNames] = None

    @property
    def presets(self) -> PresetNames:
        """The names the run stored for its backends (standalone and paired rows), today's ``conf/backend`` only
        for rows that stored none (`PresetNames.fallback`, said in the warnings)."""
        if self.preset_names is None:
            self.preset_names = PresetNames.from_rows(all_rows(self))
        return self.preset_names

    @property
    def standalone(self) -> bool:
        """Whether there are standalone jobs' rows (`make bench-paired` alone has none of RL workloads)."""
        return bool(len(self.results.rows))


@dataclass
class Section:
    """One part of the report. ``content``: a `Table`, a list of lines (bullets) or a list of `Plot`.

    ``detail``: per-configuration detail (hundreds of rows): collapsed in report.html and, in report.md, one
    line pointing to summary.csv and report.html. ``md_rows``: at most this many table rows in report.md.
    ``empty``: what an empty section says (default "(none)"). ``key``: a stable id (the HTML anchor).
    A new part of the report is one more `Section` in `harness.report.compose.sections`.
    """

    title: str
    intro: str
    content: Any
    detail: bool = False
    md_rows: Optional[int] = None
    empty: str = ""
    key: str = ""
    #: a paragraph after the content (what the reader needs once the content has been read)
    note: str = ""


def config_names(rows: pd.DataFrame) -> dict[str, str]:
    """Each configuration's readable name: scenario, env, workers, budget and the parameters that vary."""
    vary = varying_params(rows)
    out = {}
    for config, r0 in rows.drop_duplicates("config").set_index("config").iterrows():
        env = "" if r0["env_id"] in ("-", "") else f" {r0['env_id']}"
        w = int(r0["workers"]) if np.isfinite(r0["workers"]) else "-"
        extra = describe(r0["params_dict"], [k for k in vary.get(r0["scenario"], []) if k != "env_id"], 60)
        out[config] = f"{r0['scenario']}{env} w={w} {r0['budget']}{(' ' + extra) if extra else ''}".strip()
    return out


def name_of(rep: Report, config: str) -> str:
    """A configuration's readable name (standalone or paired rows)."""
    if rep.names is None:
        rows = rep.results.rows
        if rep.paired_rows is not None and len(rep.paired_rows):
            rows = pd.concat([rows, rep.paired_rows], ignore_index=True) if len(rows) else rep.paired_rows
        rep.names = config_names(rows) if len(rows) else {}
    return rep.names.get(config, config)


def backend_name(label: str, names: Optional[PresetNames] = None) -> str:
    """What the report calls a backend: the preset a user types (``reactor``, ``ray_packed``, ``serial#2``,
    ``serial +2%``; `harness.labels.BackendLabel.preset_name`), by the run's stored ``names`` (`Report.presets`);
    without them, by today's ``conf/backend``."""
    return BackendLabel.parse(label).preset_name(names=names)


def report_labels(rep: Report) -> list[str]:
    """Every backend label among the rows (standalone and paired)."""
    rows = all_rows(rep)
    return sorted(set(rows["label"])) if len(rows) and "label" in rows else []


def vocabulary(labels: list[str], presets: Optional[PresetNames] = None) -> Callable[[str], str]:
    """A function that rewrites text in the report's one vocabulary: every backend label among ``labels``
    (``reactor:processes``, ``serial:-#2``, ``serial:-#3 +2%``) becomes the preset a user types (``reactor``,
    ``serial#2``, ``serial +2%``; `backend_name` by the run's stored ``presets``). The report's statistics keep
    the labels (summary.csv, headline.csv); only what a person reads is rewritten, in one place
    (`harness.report.documents`, with `report_vocabulary`)."""
    names = {lab: backend_name(lab, presets) for lab in labels if ":" in lab}
    names = {k: v for k, v in names.items() if k != v}
    if not names:
        return lambda text: text
    pattern = re.compile(r"(?<![\w:@])(" + "|".join(re.escape(k) for k in sorted(names, key=len, reverse=True))
                         + r")(?![\w#@-])")
    return lambda text: pattern.sub(lambda m: names[m.group(1)], text)


def report_vocabulary(rep: Report) -> Callable[[str], str]:
    """The report's `vocabulary`: its labels, named as its run stored them (`Report.presets`)."""
    return vocabulary(report_labels(rep), rep.presets)


def machine_line(rows: pd.DataFrame) -> str:
    """``host (cpu, N cores, R GB RAM, os)`` for each machine among the rows."""
    seen = []
    for meta in rows.drop_duplicates("machine")["meta"]:
        seen.append(f"{meta.get('hostname', '?')} ({meta.get('cpu_model', '?')}, {meta.get('cpu_count', '?')} cores, "
                    f"{meta.get('ram_gb', '?')} GB RAM, {meta.get('os', '?')})")
    return "; ".join(seen) or "unknown machine"


def short_machine(meta: Any) -> str:
    """``vm, 2 cores`` (a line's machine, the full one is in the report's head)."""
    meta = meta if isinstance(meta, dict) else {}
    return f"{meta.get('hostname', '?')}, {meta.get('cpu_count', '?')} cores"


def all_rows(rep: Report) -> pd.DataFrame:
    """Standalone and paired rows together (for what both share: the machine, the dates)."""
    rows = rep.results.rows
    if rep.paired_rows is not None and len(rep.paired_rows):
        return pd.concat([rows, rep.paired_rows], ignore_index=True) if len(rows) else rep.paired_rows
    return rows


def report_machine(rep: Report) -> str:
    """The machine line, from the standalone rows and the paired jobs' rows."""
    rows = all_rows(rep)
    return machine_line(rows) if len(rows) else "unknown machine"


def counts(rep: Report) -> str:
    rows = rep.results.rows
    st = rows["status"].value_counts().to_dict() if len(rows) else {}
    jobs = rows["job"].nunique() if len(rows) else 0
    paired = (f"; and {len(rep.paired)} paired job(s) of {sum(j.cycles for j in rep.paired)} cycles"
              if rep.paired else "")
    return (f"{len(rep.results.files)} result file(s), {jobs} standalone job(s), {len(rows)} row(s): "
            + ", ".join(f"{st.get(k, 0)} {k}" for k in ("ok", "error", "timeout")) + paired)


#: what a standalone section says in a run of paired jobs only
NO_STANDALONE = "no standalone rows: this run has only paired jobs (their results are in the answer, the headline and the paired sections)"
