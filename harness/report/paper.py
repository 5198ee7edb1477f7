"""The paper's reported results, as data, and the measured ones beside them.

Source of every number below: J. Kwok, M. Lohstroh, E. A. Lee, "Efficient Parallel Reinforcement Learning
Framework Using the Reactor Model", SPAA 2024 (arXiv:2312.04704), abstract and evaluation: Lingua Franca
against Ray on one 32-core node -- 1.21x Gym and 11.62x Atari simulation throughput, 31.2% less training
time for synchronized parallel Q-learning, 5.12x multi-agent inference (10 agents). The settings of the
authors' benchmark code are data in `harness.report.authors` (with their source files); each paper row lists
how the measured rows' resolved configs differ from them.

Where the run holds paired jobs (`harness compare`) with the reactor and a Ray layout, a measured cell is read from
them: the median of per-cycle ratios with its interval (`harness.report.intervals.median_interval`) and the rule's
word on it (`harness.report.intervals.verdict`), as the answer reads a paired job. A cell falls back to standalone
jobs only where no paired job holds its pair, and every cell says which kind it is.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np
import pandas as pd

from harness.labels import BackendLabel, PresetNames
from harness.report.authors import differences
from harness.report.intervals import median_interval, verdict, word_phrase
from harness.report.paired import PairedJob, cycle_ratios
from harness.report.stats import geometric_mean

PAPER_CITATION = ("Kwok, Lohstroh, Lee: Efficient Parallel Reinforcement Learning Framework Using the Reactor "
                  "Model, SPAA 2024, arXiv:2312.04704")
PAPER_CORES = 32
#: the paper compared Lingua Franca with Ray actors; here that is reactor:processes over ray:actors (rendered labels)
PAPER_PAIR = (BackendLabel("reactor", "processes").render(), BackendLabel("ray", "actors").render())
#: what a measured cell says it was read from
PAIRED, STANDALONE = "paired", "standalone"


@dataclass(frozen=True)
class PaperResult:
    scenario: str
    claim: str
    #: "speedup" (throughput ratio, x) or "time_change" (fraction, negative = less time)
    kind: str
    value: float
    settings: str
    #: only configurations whose params match these values are compared (e.g. 10 agents)
    match: tuple[tuple[str, Any], ...] = ()


PAPER_RESULTS: tuple[PaperResult, ...] = (
    PaperResult("gym", "Gym simulation throughput, LF / Ray", "speedup", 1.21,
                "OpenAI Gym (old step API), CartPole-v1, Blackjack-v1, Pendulum-v0; 15 envs; 10,000 rounds"),
    PaperResult("atari", "Atari simulation throughput, LF / Ray", "speedup", 11.62,
                "Pong-v4, MsPacman-v4, SpaceInvaders-v4; 15 envs; 10,000 rounds; every env reset after every "
                "step; actions from the full action space (LF)"),
    PaperResult("dqn", "Synchronized parallel Q-learning training time, LF vs Ray", "time_change", -0.312,
                "Blackjack-v1; 16 rollout workers x 100 steps; replay-buffer actor, minibatch = its first 250, "
                "500, 1,000 or 2,000 entries; 1,000 rounds"),
    PaperResult("marl", "Multi-agent inference throughput, 10 agents, LF / Ray", "speedup", 5.12,
                "ma-gym TrafficJunction10-v1, 10 agents, one policy each", match=(("num_agents", 10),)),
)


def _fmt_value(kind: str, value: float) -> str:
    if not np.isfinite(value):
        return "-"
    return f"{value:.2f}x" if kind == "speedup" else f"{value:+.1%} time"


def _versions(rows: pd.DataFrame) -> str:
    seen: set[str] = set()
    for meta in rows["meta"]:
        v = meta.get("versions", {}) if isinstance(meta, dict) else {}
        for pkg in ("gymnasium", "ale-py", "ray", "torch", "pettingzoo", "mpe2"):
            if v.get(pkg) and v.get(pkg) != "-":
                seen.add(f"{pkg} {v[pkg]}")
    return ", ".join(sorted(seen)) or "unknown"


def _config_name(rows: pd.DataFrame, config: str) -> str:
    """The env and the parameters that tell this configuration apart from its scenario's others."""
    r = rows[rows["config"] == config]
    if not len(r):
        return config
    own = r["params_dict"].iloc[0]
    others = [p for p in rows["params_dict"]]
    keys = sorted(k for k in own if k not in ("env_id", "num_envs") and any(o.get(k) != own.get(k) for o in others))
    env = r["env_id"].iloc[0]
    text = " ".join([*([env] if env not in ("-", "") else []), *(f"{k}={own[k]}" for k in keys)])
    return text or r["scenario"].iloc[0]


def best_ray(summary: Optional[pd.DataFrame], speedups: pd.DataFrame, configs: list[str],
             reactor: str = PAPER_PAIR[0]) -> str:
    """``reactor`` over the fastest Ray layout measured in each configuration of standalone jobs (by median
    throughput, any mode and packing): the geometric mean and each configuration's ratio with its interval."""
    if summary is None or not configs:
        return "-"
    parts, ratios = [], []
    for c in configs:
        ray = summary[(summary["config"] == c) & (summary["n_ok"] > 0)]
        ray = ray[[BackendLabel.parse(lab).name == "ray" for lab in ray["label"]]]
        if "equal_work" in ray:
            ray = ray[ray["equal_work"].astype(bool)]
        if not len(ray):
            continue
        best = str(ray.sort_values("median", ascending=False)["label"].iloc[0])
        sp = speedups[(speedups["config"] == c) & (speedups["numerator"] == reactor) & (speedups["denominator"] == best)]
        if not len(sp):
            continue
        r = sp.iloc[0]
        ratios.append(float(r["ratio"]))
        parts.append(f"{r['ratio']:.2f}x [{r['ci_low']:.2f}, {r['ci_high']:.2f}] over {best}")
    if not ratios:
        return "-"
    return (f"{_fmt_value('speedup', geometric_mean(ratios))} ({STANDALONE}; geometric mean; "
            + "; ".join(parts) + ")")


# ------------------------------------------------------------------------------------------ paired jobs

def _job_rows(job: PairedJob, paired_rows: Optional[pd.DataFrame]) -> pd.DataFrame:
    if paired_rows is None or not len(paired_rows) or "job" not in paired_rows:
        return pd.DataFrame()
    return paired_rows[paired_rows["job"] == job.job]


def _paired_jobs(pr: PaperResult, paired: Optional[list[PairedJob]],
                 paired_rows: Optional[pd.DataFrame]) -> list[tuple[PairedJob, pd.DataFrame]]:
    """The paired jobs of the paper result's scenario whose parameters match it, with their rows."""
    out = []
    for job in paired or []:
        rows = _job_rows(job, paired_rows)
        if job.scenario != pr.scenario or not len(rows):
            continue
        params = rows["params_dict"].iloc[0] if isinstance(rows["params_dict"].iloc[0], dict) else {}
        if all(params.get(k) == v for k, v in pr.match):
            out.append((job, rows))
    return out


def _resident(job: PairedJob, label: str) -> Optional[str]:
    """The job's column for ``label`` (its first resident on the harness's interpreter), if it holds one."""
    want = BackendLabel.parse(label)
    return next((lab for lab in job.labels if lab in job.table and BackendLabel.parse(lab) == want), None)


def fastest_paired_ray(job: PairedJob) -> Optional[str]:
    """The job's fastest Ray layout by median block throughput (any mode and packing; never an A/A copy or another
    interpreter's resident)."""
    rays = [lab for lab in job.labels if lab in job.table]
    rays = [lab for lab in rays if (b := BackendLabel.parse(lab)).name == "ray" and b.copy == 1 and not b.interpreter]
    return max(rays, key=lambda lab: float(job.table[lab].median())) if rays else None


@dataclass(frozen=True)
class PairedReading:
    """One paired job's reading of ``numerator`` over ``denominator``: the median of per-cycle ratios, its interval
    and the rule's word on it at the job's margin."""

    job: PairedJob
    rows: pd.DataFrame
    numerator: str
    denominator: str
    median: float
    low: float
    high: float
    cycles: int
    word: str

    def text(self, kind: str = "speedup") -> str:
        said = word_phrase(self.word, self.job.margin, self.cycles)
        if kind == "speedup":
            value = (f"{self.median:.2f}x [{self.low:.2f}, {self.high:.2f}]" if np.isfinite(self.low)
                     else f"{self.median:.2f}x (no interval)")
        else:  # equal rounds: time is the inverse of throughput, so the interval's ends swap
            value = (f"{1 / self.median - 1:+.1%} time [{1 / self.high - 1:+.1%}, {1 / self.low - 1:+.1%}]"
                     if np.isfinite(self.low) and self.low > 0 else f"{1 / self.median - 1:+.1%} time (no interval)")
        return f"{value}, {said}, {self.cycles} cycles"


def paired_reading(job: PairedJob, rows: pd.DataFrame, a: str, b: Optional[str]) -> Optional[PairedReading]:
    """``a`` over ``b`` within the job's cycles (the answer's reading: per-cycle ratios over the whole job, a ratio
    within a cycle cancels a host shift), None when the job does not hold both."""
    if b is None:
        return None
    ca, cb = _resident(job, a), _resident(job, b)
    if ca is None or cb is None:
        return None
    r = cycle_ratios(job.table, ca, cb)
    if not r.size:
        return None
    m = median_interval(r)
    return PairedReading(job, rows, ca, cb, m.median, m.low, m.high, int(r.size), verdict(m.low, m.high, job.margin))


def _at_most_workers(readings: list[PairedReading]) -> list[PairedReading]:
    if not readings:
        return []
    wmax = max(r.job.workers for r in readings)
    return [r for r in readings if r.job.workers == wmax]


def _paired_cell(readings: list[PairedReading], kind: str, over: bool = False) -> tuple[float, str]:
    """(speedup, text) of paired readings at the largest worker count: one reading with its interval, several
    as their geometric mean with each one's."""
    rows = pd.concat([r.rows for r in readings], ignore_index=True)
    names = PresetNames.from_rows(rows)  # the presets the jobs were run with (today's only where none was stored)
    each = "; ".join(f"{_config_name(rows, r.job.config)} [{r.job.job.split(':', 1)[-1]}]: {r.text(kind)}"
                     + (f" over {BackendLabel.parse(r.denominator).preset_name(names=names)}" if over else "")
                     for r in readings)
    ratio = geometric_mean([r.median for r in readings])
    return ratio, f"{len(readings)} paired job(s) at workers={readings[0].job.workers}: {each}"


def side_by_side(rows: pd.DataFrame, speedups: pd.DataFrame, pair: tuple[str, str] = PAPER_PAIR,
                 summary: Optional[pd.DataFrame] = None, paired: Optional[list[PairedJob]] = None,
                 paired_rows: Optional[pd.DataFrame] = None) -> pd.DataFrame:
    """One row per paper result: the paper's value and settings, and what this machine measured, with how.

    The measured value is ``pair``'s speedup at the largest worker count measured for that pair (the paper used
    every core); DQN's time change is 1 / speedup - 1 (equal rounds, so time is the inverse of throughput). It is
    read from the paired jobs (``paired``, their rows ``paired_rows``) that hold both of ``pair``: the median of
    per-cycle ratios with its interval, the geometric mean where several jobs hold it; only where none does, from
    the standalone jobs' speedups (the geometric mean over valid configurations). "Against Ray at its best" is read
    the same way: paired jobs holding the reactor and any Ray layout first, else standalone jobs. Each cell names
    its kind (``measured_source``, ``best_ray_source``: "paired", "standalone" or "")."""
    out = []
    for pr in PAPER_RESULTS:
        jobs = _paired_jobs(pr, paired, paired_rows)
        paper_pair = _at_most_workers([r for job, jrows in jobs if (r := paired_reading(job, jrows, *pair))])
        best_pair = _at_most_workers([r for job, jrows in jobs
                                      if (r := paired_reading(job, jrows, pair[0], fastest_paired_ray(job)))])
        srows = rows[(rows["scenario"] == pr.scenario)] if len(rows) and "scenario" in rows else rows.iloc[0:0]
        for key, val in pr.match if len(srows) else ():
            srows = srows[np.array([p.get(key) == val for p in srows["params_dict"]], dtype=bool)]
        sel = speedups[(speedups["scenario"] == pr.scenario) & (speedups["numerator"] == pair[0])
                       & (speedups["denominator"] == pair[1]) & speedups["config"].isin(set(srows["config"]))] \
            if len(speedups) and len(srows) else pd.DataFrame()
        measured, note, cores, used, at_best = math.nan, "", "-", 0, "-"
        source, best_source = "", ""
        used_rows: list[pd.DataFrame] = []
        if paper_pair:
            ratio, note = _paired_cell(paper_pair, pr.kind)
            measured = ratio if pr.kind == "speedup" else (1.0 / ratio - 1.0 if ratio > 0 else math.nan)
            source, note = PAIRED, f"{PAIRED}: {note}"
            used_rows += [r.rows for r in paper_pair]
        elif not len(srows) and not jobs:
            note = f"no {pr.scenario} rows" + (f" with {dict(pr.match)}" if pr.match else "")
        elif not len(sel):
            labels = sorted(set(srows.loc[srows["status"] == "ok", "label"])) if len(srows) else []
            for _, jrows in jobs:
                labels += [lab for lab in jrows["label"] if lab not in labels]
            note = (f"no valid {pair[0]} vs {pair[1]} comparison (backends with ok rows: "
                    f"{', '.join(sorted(set(labels))) or 'none ok'})")
            used_rows += [srows] + [jrows for _, jrows in jobs]
        else:
            wmax = sel["workers"].max()
            sel = sel[sel["workers"] == wmax]
            ratio = geometric_mean(sel["ratio"])
            used = len(sel)
            measured = ratio if pr.kind == "speedup" else (1.0 / ratio - 1.0 if ratio > 0 else math.nan)
            sig = int(sel["significant"].sum())
            each = "; ".join(f"{_config_name(srows, c)}: {r:.2f}x{'' if s else ' (n.s.)'}"
                             for c, r, s in zip(sel["config"], sel["ratio"], sel["significant"]))
            source = STANDALONE
            note = (f"{STANDALONE}: geometric mean of {used} configuration(s) at workers={int(wmax)}, {sig} "
                    f"significant (Mann-Whitney U, p<0.05): {each}")
            used_rows.append(srows[srows["config"].isin(set(sel["config"]))])
        if best_pair:
            ratio, text = _paired_cell(best_pair, "speedup", over=True)
            at_best, best_source = f"{_fmt_value('speedup', ratio)} ({PAIRED}; {text})", PAIRED
            if not paper_pair:
                used_rows += [r.rows for r in best_pair]
        elif source == STANDALONE:
            at_best = best_ray(summary, speedups, sorted(set(sel["config"])), pair[0])
            best_source = STANDALONE if at_best != "-" else ""
        used_frame = pd.concat([u for u in used_rows if len(u)], ignore_index=True) if any(len(u) for u in used_rows) \
            else srows
        cpu = pd.to_numeric(used_frame["cpu_count"], errors="coerce").dropna() if len(used_frame) else []
        if len(cpu):
            cores = ", ".join(str(int(c)) for c in sorted(set(cpu)))
        envs = ", ".join(sorted(set(used_frame["env_id"]) - {"-", ""})) if len(used_frame) else ""
        differs = [f"cores: {cores} (paper {PAPER_CORES})", f"envs: {envs or '-'}",
                   f"versions: {_versions(used_frame) if len(used_frame) else 'unknown'}"]
        rounds = used_frame["rounds"] if "rounds" in used_frame else [None] * len(used_frame)
        listed = differences(pr.scenario, zip(used_frame["params_dict"], rounds)) if len(used_frame) else []
        shown = _fmt_value(pr.kind, measured)
        out.append({"scenario": pr.scenario, "claim": pr.claim, "paper": _fmt_value(pr.kind, pr.value),
                    "paper_value": pr.value, "paper_settings": f"{PAPER_CORES} cores; {pr.settings}",
                    "measured": f"{shown} ({source})" if source and shown != "-" else shown,
                    "measured_value": measured, "measured_source": source, "how": note,
                    "best_ray": at_best, "best_ray_source": best_source,
                    "this_machine": "; ".join(differs), "differences": listed})
    return pd.DataFrame(out)


def paper_result(scenario: str) -> Optional[PaperResult]:
    """The paper's result for a scenario, if it reported one."""
    return next((p for p in PAPER_RESULTS if p.scenario == scenario), None)
