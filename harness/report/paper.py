"""The paper's reported results, as data, and the measured ones beside them.

Source of every number below: J. Kwok, M. Lohstroh, E. A. Lee, "Efficient Parallel Reinforcement Learning
Framework Using the Reactor Model", SPAA 2024 (arXiv:2312.04704), abstract and evaluation: Lingua Franca
against Ray on one 32-core node -- 1.21x Gym and 11.62x Atari simulation throughput, 31.2% less training
time for synchronized parallel Q-learning, 5.12x multi-agent inference (10 agents). The settings of the
authors' benchmark code are data in `harness.report.authors` (with their source files); each paper row lists
how the measured rows' resolved configs differ from them.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np
import pandas as pd

from harness.report.authors import differences
from harness.report.stats import geometric_mean

PAPER_CITATION = ("Kwok, Lohstroh, Lee: Efficient Parallel Reinforcement Learning Framework Using the Reactor "
                  "Model, SPAA 2024, arXiv:2312.04704")
PAPER_CORES = 32
#: the paper compared Lingua Franca with Ray actors; here that is reactor:processes over ray:actors
PAPER_PAIR = ("reactor:processes", "ray:actors")


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
    """``reactor`` over the fastest Ray layout measured in each configuration (by median throughput, any
    mode and packing): the geometric mean and each configuration's ratio with its interval."""
    if summary is None or not configs:
        return "-"
    parts, ratios = [], []
    for c in configs:
        ray = summary[(summary["config"] == c) & summary["label"].str.startswith("ray:") & (summary["n_ok"] > 0)]
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
    return f"{_fmt_value('speedup', geometric_mean(ratios))} (geometric mean; " + "; ".join(parts) + ")"


def side_by_side(rows: pd.DataFrame, speedups: pd.DataFrame, pair: tuple[str, str] = PAPER_PAIR,
                 summary: Optional[pd.DataFrame] = None) -> pd.DataFrame:
    """One row per paper result: the paper's value and settings, and what this machine measured, with how.

    The measured value is the geometric mean of ``pair``'s speedups over the scenario's valid configurations
    at the largest worker count measured for that pair (the paper used every core); DQN's time change is
    1 / speedup - 1 (equal rounds, so time is the inverse of throughput).
    """
    out = []
    for pr in PAPER_RESULTS:
        srows = rows[(rows["scenario"] == pr.scenario)]
        for key, val in pr.match:
            srows = srows[np.array([p.get(key) == val for p in srows["params_dict"]], dtype=bool)]
        sel = speedups[(speedups["scenario"] == pr.scenario) & (speedups["numerator"] == pair[0])
                       & (speedups["denominator"] == pair[1]) & speedups["config"].isin(set(srows["config"]))]
        measured, note, cores, used, at_best = math.nan, "", "-", 0, "-"
        if not len(srows):
            note = f"no {pr.scenario} rows" + (f" with {dict(pr.match)}" if pr.match else "")
        elif not len(sel):
            labels = ", ".join(sorted(set(srows.loc[srows["status"] == "ok", "label"]))) or "none ok"
            note = f"no valid {pair[0]} vs {pair[1]} comparison (backends with ok rows: {labels})"
        else:
            wmax = sel["workers"].max()
            sel = sel[sel["workers"] == wmax]
            ratio = geometric_mean(sel["ratio"])
            used = len(sel)
            measured = ratio if pr.kind == "speedup" else (1.0 / ratio - 1.0 if ratio > 0 else math.nan)
            sig = int(sel["significant"].sum())
            each = "; ".join(f"{_config_name(srows, c)}: {r:.2f}x{'' if s else ' (n.s.)'}"
                             for c, r, s in zip(sel["config"], sel["ratio"], sel["significant"]))
            note = (f"geometric mean of {used} configuration(s) at workers={int(wmax)}, {sig} significant "
                    f"(Mann-Whitney U, p<0.05): {each}")
            srows = srows[srows["config"].isin(set(sel["config"]))]
            at_best = best_ray(summary, speedups, sorted(set(sel["config"])), pair[0])
        cpu = pd.to_numeric(srows["cpu_count"], errors="coerce").dropna()
        if len(cpu):
            cores = ", ".join(str(int(c)) for c in sorted(set(cpu)))
        envs = ", ".join(sorted(set(srows["env_id"]) - {"-", ""})) or "-"
        differs = [f"cores: {cores} (paper {PAPER_CORES})", f"envs: {envs}", f"versions: {_versions(srows)}"]
        rounds = srows["rounds"] if "rounds" in srows else [None] * len(srows)
        listed = differences(pr.scenario, zip(srows["params_dict"], rounds)) if len(srows) else []
        out.append({"scenario": pr.scenario, "claim": pr.claim, "paper": _fmt_value(pr.kind, pr.value),
                    "paper_value": pr.value, "paper_settings": f"{PAPER_CORES} cores; {pr.settings}",
                    "measured": _fmt_value(pr.kind, measured), "measured_value": measured, "how": note,
                    "best_ray": at_best,
                    "this_machine": "; ".join(differs), "differences": listed})
    return pd.DataFrame(out)


def paper_result(scenario: str) -> Optional[PaperResult]:
    """The paper's result for a scenario, if it reported one."""
    return next((p for p in PAPER_RESULTS if p.scenario == scenario), None)
