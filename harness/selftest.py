"""``python -m harness selftest``: what this machine can resolve, checked against known answers.

A harness that prints "95%" must show that its intervals keep the promise on the machine at hand. The
self-test runs paired jobs (`harness.compare`) whose answer is known:

* **A/A**: one backend against an identical copy of itself (``backends=[serial,serial]``): any verdict is
  false. Over many jobs the share of false verdicts estimates the real error rate of the intervals (about
  5% promised), with its own binomial (Clopper-Pearson) interval.
* **Injected effects**: further copies that spend a calibrated extra share of their round time
  (``compare.extra_work``, `harness.child.ExtraWork`): each must be called slower. The detection rate per
  effect says how small a difference this machine resolves in ``selftest.seconds``.

Every job holds the A/A pair and the effects as residents of one paired job (``backends=[b, b, b, b]``,
``compare.extra_work=[0, 0, e1, e2]``), so they sample the same seconds of the host. The same A/A pair is
also measured the old way, as standalone jobs one after the other (two ``python -m harness`` jobs, a ratio
of medians with a percentile bootstrap), for contrast. Each job's per-cycle ratios are read again with the
interval the harness used before (a percentile bootstrap of the median, cycles independent) so the report
shows how often that interval would have called a false winner on the same data.

Results: ``<out>/job_<i>/`` (each paired job's rows), ``<out>/standalone_<i>/`` and ``<out>/selftest.json``,
whose summary the report shows as "What this machine can resolve" (`harness.report.resolution`).

    python -m harness selftest [selftest.jobs=10] [selftest.seconds=30] [selftest.effects=[0.02,0.05]]
        [selftest.standalone=true] [selftest.out=results/selftest/<time>] [scenario=gym workers=2 ...]
    python -m harness selftest --reanalyze <out>     (read the jobs again with this version's statistics)
    python -m harness selftest --latest-line         (the newest self-test's line, as `make bench` prints it)
"""
from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Optional

import numpy as np
import pandas as pd

from harness.labels import BackendLabel
from harness.metadata import job_metadata
from harness.report import stats

ROOT = Path(__file__).resolve().parents[1]
SELFTEST_FILE = "selftest.json"
#: detection rate an effect needs to count as resolved
DETECTION_GOAL = 0.80


@dataclass
class SelftestSettings:
    """``selftest.*`` options."""

    jobs: int = 10
    seconds: float = 30.0
    effects: list[float] = field(default_factory=lambda: [0.02, 0.05])
    backend: str = "serial"
    standalone: bool = True
    out: str = ""
    #: the margin (resolution floor) verdicts are read with besides margin 0
    margin: float = 0.01
    #: residents restarted every this many seconds, in reverse start order (``compare.respawn_s``; 0: never):
    #: an offset a resident owes to its process then changes sides within each job
    respawn_s: float = 20.0
    confidence: float = 0.95


def parse_args(argv: list[str]) -> tuple[SelftestSettings, list[str]]:
    """``selftest.*`` options and the overrides passed on to every job; a misspelt ``selftest.`` key or a bad
    value raises ValueError naming it before anything runs."""
    settings = SelftestSettings()
    known = {f for f in asdict(settings)}
    passed = []
    for arg in argv:
        key, eq, value = arg.partition("=")
        if not key.startswith("selftest."):
            if not eq:
                raise ValueError(f"{arg!r}: expected key=value")
            if key in ("backends", "compare.extra_work"):
                raise ValueError(f"{key} is set by the self-test (use selftest.backend and selftest.effects)")
            passed.append(arg)
            continue
        name = key[len("selftest."):]
        if name not in known or not eq:
            raise ValueError(f"{arg!r}: unknown self-test option (known: {', '.join(sorted(known))})")
        try:
            if name == "effects":
                parsed: Any = [float(v) for v in value.strip("[]").split(",") if v.strip()]
                if any(not 0 < v <= 1 for v in parsed):
                    raise ValueError("each effect must be in (0, 1]")
            elif name in ("jobs",):
                parsed = int(value)
                if parsed < 1:
                    raise ValueError("must be >= 1")
            elif name in ("seconds", "margin", "confidence", "respawn_s"):
                parsed = float(value)
                can_be_0 = name in ("margin", "respawn_s")
                if parsed < 0 or (parsed == 0 and not can_be_0):
                    raise ValueError("must be >= 0" if can_be_0 else "must be > 0")
            elif name == "standalone":
                if value.lower() not in ("true", "false"):
                    raise ValueError("must be true or false")
                parsed = value.lower() == "true"
            else:
                parsed = value
        except ValueError as exc:
            raise ValueError(f"{arg!r}: {exc}") from None
        setattr(settings, name, parsed)
    return settings, passed


def _python() -> str:
    return sys.executable


def compare_command(settings: SelftestSettings, passed: list[str], job_dir: Path) -> list[str]:
    n = 2 + len(settings.effects)
    backends = ",".join([settings.backend] * n)
    shares = ",".join(["0", "0", *(f"{e:g}" for e in settings.effects)])
    return [_python(), "-m", "harness", "compare", *passed, f"backends=[{backends}]",
            f"compare.extra_work=[{shares}]", f"compare.max_seconds={settings.seconds:g}",
            "compare.precision=1e-9", f"compare.margin={settings.margin:g}", f"compare.respawn_s={settings.respawn_s:g}",
            f"compare.confidence={settings.confidence:g}", "quiet=true", f"hydra.run.dir={job_dir}"]


def standalone_command(settings: SelftestSettings, passed: list[str], job_dir: Path) -> list[str]:
    return [_python(), "-m", "harness", *passed, f"backend={settings.backend}", "quiet=true", "resume=false",
            f"hydra.run.dir={job_dir}"]


def _run(cmd: list[str], log: Path) -> None:
    with log.open("w") as fh:
        done = subprocess.run(cmd, cwd=ROOT, stdout=fh, stderr=subprocess.STDOUT)
    if done.returncode != 0:
        tail = log.read_text()[-3000:]
        raise RuntimeError(f"self-test job failed (exit {done.returncode}): {' '.join(cmd)}\n{tail}")


# ---------------------------------------------------------------- reading one job

def pair_ratios(rows: pd.DataFrame, num: str, den: str) -> np.ndarray:
    """Per-cycle throughput ratios ``num`` / ``den`` of a paired job's rows, in cycle order."""
    ok = rows[rows["status"] == "ok"].copy()
    ok["label"] = [BackendLabel.from_row(b, v, c).render() for b, v, c in zip(ok["backend"], ok["variant"], ok["copy"])]
    table = ok.pivot_table(index="cycle", columns="label", values="throughput", aggfunc="first").dropna()
    return (table[num] / table[den]).to_numpy(float)


def read_pair(r: np.ndarray, confidence: float, margin: float) -> dict[str, Any]:
    """One pair's readings: the harness's interval (order statistics, dependence-aware), the same without the
    dependence correction, and the percentile bootstrap the harness used before, each with its verdict."""
    new = stats.median_interval(r, confidence)
    plain = stats.median_interval(r, confidence, dependent=False)
    old = stats.median_ci(r, confidence=confidence)
    return {"cycles": int(r.size), "median": new.median, "low": new.low, "high": new.high, "n_eff": new.n_eff,
            "half_width": stats.half_width(*new.as_tuple()),
            "verdict": stats.verdict(new.low, new.high), "verdict_margin": stats.verdict(new.low, new.high, margin),
            "independent_low": plain.low, "independent_high": plain.high,
            "verdict_independent": stats.verdict(plain.low, plain.high),
            "bootstrap_low": old[1], "bootstrap_high": old[2],
            "verdict_bootstrap": stats.verdict(old[1], old[2]) if r.size >= 2 else stats.TOO_FEW}


def read_job(job_dir: Path, settings: SelftestSettings) -> dict[str, Any]:
    from harness.report.load import load_results

    rows = load_results([job_dir]).rows
    first = BackendLabel.parse(rows["label"].iloc[0]).first_copy()
    out: dict[str, Any] = {"job": job_dir.name}
    out["aa"] = read_pair(pair_ratios(rows, str(BackendLabel(first.name, first.variant, first.interpreter, 2)),
                                      str(first)), settings.confidence, settings.margin)
    for i, e in enumerate(settings.effects):
        lab = BackendLabel(first.name, first.variant, first.interpreter, 3 + i)
        out[f"effect_{e:g}"] = read_pair(pair_ratios(rows, str(lab), str(first)), settings.confidence,
                                         settings.margin)
        extra = rows[rows["label"] == str(lab)]["extra_dict"]
        out[f"effect_{e:g}"]["calibrated_ms_per_round"] = float(np.median(
            [x.get("extra_work_ms_per_round", math.nan) for x in extra])) if len(extra) else math.nan
    meta = rows["meta"].iloc[0]
    out["started_at"] = meta.get("started_at")
    out["load_avg"] = meta.get("load_avg")
    return out


def read_standalone(a_dir: Path, b_dir: Path, confidence: float) -> dict[str, Any]:
    """The old way: two standalone jobs one after the other, a ratio of medians with a percentile bootstrap."""
    from harness.report.load import load_results

    a = load_results([a_dir]).rows
    b = load_results([b_dir]).rows
    x = b.loc[b["status"] == "ok", "throughput"].to_numpy(float)
    y = a.loc[a["status"] == "ok", "throughput"].to_numpy(float)
    sp = stats.speedup(x, y, confidence=confidence)
    return {"ratio": sp.ratio, "low": sp.low, "high": sp.high, "n": [int(y.size), int(x.size)],
            "verdict": stats.verdict(sp.low, sp.high)}


# ---------------------------------------------------------------- the summary

def rate(k: int, n: int, confidence: float = 0.95) -> dict[str, Any]:
    """k of n with its exact (Clopper-Pearson) binomial interval."""
    if n == 0:
        return {"k": 0, "n": 0, "rate": math.nan, "low": math.nan, "high": math.nan}
    ci = __import__("scipy.stats", fromlist=["binomtest"]).binomtest(k, n).proportion_ci(confidence, "exact")
    return {"k": int(k), "n": int(n), "rate": k / n, "low": float(ci.low), "high": float(ci.high)}


def _called(v: str) -> bool:
    return v in (stats.FASTER, stats.SLOWER)


def summarize(jobs: list[dict[str, Any]], standalone: list[dict[str, Any]], settings: SelftestSettings,
              machine: dict[str, Any]) -> dict[str, Any]:
    aa = [j["aa"] for j in jobs]
    s: dict[str, Any] = {"settings": asdict(settings), "machine": machine, "jobs": len(jobs),
                         "started": jobs[0].get("started_at") if jobs else None,
                         "ended": jobs[-1].get("started_at") if jobs else None}
    s["aa_false"] = {key: rate(sum(_called(a[key]) for a in aa), len(aa))
                     for key in ("verdict", "verdict_margin", "verdict_independent", "verdict_bootstrap")}
    s["aa_too_few"] = int(sum(a["verdict"] == stats.TOO_FEW for a in aa))
    s["aa_half_width_median"] = float(np.median([a["half_width"] for a in aa])) if aa else math.nan
    meds = np.array([a["median"] for a in aa], dtype=float)
    # the jobs are independent: an order-statistic interval of their A/A medians bounds the systematic offset
    # between identical residents (placement, layout, start order), whatever each job's own noise
    offset = stats.median_interval(meds, settings.confidence, dependent=False)
    s["aa_offset"] = {"median": offset.median, "low": offset.low, "high": offset.high,
                      "abs_p50": float(np.median(np.abs(meds - 1))) if meds.size else math.nan,
                      "abs_p95": float(np.quantile(np.abs(meds - 1), 0.95)) if meds.size else math.nan}
    # the floor: the largest systematic offset the jobs cannot exclude (a verdict inside it is not about code);
    # without enough jobs for an interval, the spread of single jobs stands in
    s["floor"] = (max(offset.high - 1.0, 1.0 - offset.low) if offset.enough else s["aa_offset"]["abs_p95"])
    s["effects"] = {}
    smallest = None
    for e in settings.effects:
        reads = [j[f"effect_{e:g}"] for j in jobs]
        det = rate(sum(r["verdict"] == stats.SLOWER for r in reads), len(reads))
        det_m = rate(sum(r["verdict_margin"] == stats.SLOWER for r in reads), len(reads))
        s["effects"][f"{e:g}"] = {"detected": det, "detected_margin": det_m,
                                  "measured_median": float(np.median([r["median"] for r in reads])),
                                  "expected": 1.0 / (1.0 + e),
                                  "half_width_median": float(np.median([r["half_width"] for r in reads]))}
        if det["rate"] >= DETECTION_GOAL and (smallest is None or e < smallest):
            smallest = e
    s["smallest_detected"] = smallest
    if standalone:
        s["standalone_false"] = rate(sum(_called(x["verdict"]) for x in standalone), len(standalone))
        s["standalone_ratios"] = [x["ratio"] for x in standalone]
    s["line"] = summary_line(s)
    return s


def summary_line(s: dict[str, Any]) -> str:
    """One line for `make bench`'s output and the report's opening."""
    f = s["aa_false"]["verdict"]
    parts = [f"A/A false verdicts {f['k']}/{f['n']} ({f['rate']:.0%}, 95% CI {f['low']:.0%}-{f['high']:.0%})",
             f"A/A interval +-{s['aa_half_width_median'] * 100:.1f}% after {s['settings']['seconds']:g} s",
             f"floor {s['floor'] * 100:.1f}%"]
    for e, d in s["effects"].items():
        parts.append(f"{float(e) * 100:g}% effect detected {d['detected']['k']}/{d['detected']['n']}")
    if "standalone_false" in s:
        g = s["standalone_false"]
        parts.append(f"standalone A/A (old way) false verdicts {g['k']}/{g['n']}")
    cpu = s["machine"].get("cpu_model", "?")
    return f"What this machine resolves ({cpu}, {s['machine'].get('cpu_count', '?')} CPUs): " + "; ".join(parts)


def latest_summary(root: Path = ROOT / "results" / "selftest") -> Optional[Path]:
    """The newest ``selftest.json`` under ``root`` (None when the self-test never ran here)."""
    found = sorted(root.glob(f"**/{SELFTEST_FILE}"), key=lambda p: p.stat().st_mtime)
    return found[-1] if found else None


def reanalyze(out: Path) -> dict[str, Any]:
    """Read a finished self-test's job folders again (with this version's statistics) and rewrite its
    ``selftest.json``: the measurement stays, the reading is redone."""
    old = json.loads((out / SELFTEST_FILE).read_text())
    settings = SelftestSettings(**old["settings"])
    jobs = [read_job(d, settings) for d in sorted(out.glob("job_*")) if d.is_dir() and (d / "results.csv").exists()]
    standalone = [read_standalone(d / "a", d / "b", settings.confidence) for d in sorted(out.glob("standalone_*"))
                  if (d / "b" / "results.csv").exists()]
    summary = summarize(jobs, standalone, settings, old["machine"])
    summary["per_job"], summary["standalone"] = jobs, standalone
    (out / SELFTEST_FILE).write_text(json.dumps(summary, indent=1, default=str) + "\n")
    return summary


def main(argv: list[str]) -> int:
    if argv and argv[0] == "--reanalyze" and len(argv) == 2:
        print(reanalyze(Path(argv[1]))["line"])
        return 0
    if argv and argv[0] == "--latest-line":
        path = latest_summary()
        print(json.loads(path.read_text())["line"] + f" [{path.parent}]" if path else
              "What this machine resolves: no self-test here yet (make selftest)")
        return 0
    try:
        settings, passed = parse_args(argv)
    except ValueError as exc:
        print(f"selftest: {exc}", file=sys.stderr)
        return 2
    out = Path(settings.out or ROOT / "results" / "selftest" / datetime.now().strftime("%Y-%m-%d_%H-%M-%S"))
    out.mkdir(parents=True, exist_ok=True)
    check = [_python(), "-m", "harness", "compare", *passed, f"backends=[{settings.backend},{settings.backend}]",
             "--cfg", "job"]
    done = subprocess.run(check, cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:  # a bad key or value fails here, before any job runs
        print(f"selftest: {done.stderr.strip()[-2000:]}", file=sys.stderr)
        return 2
    machine = {k: v for k, v in job_metadata({}).items() if k in ("cpu_model", "cpu_count", "hostname", "git_sha")}
    jobs, standalone = [], []
    t0 = time.monotonic()
    for i in range(settings.jobs):
        job_dir = out / f"job_{i:03d}"
        _run(compare_command(settings, passed, job_dir), out / f"job_{i:03d}.log")
        jobs.append(read_job(job_dir, settings))
        if settings.standalone:
            a, b = out / f"standalone_{i:03d}" / "a", out / f"standalone_{i:03d}" / "b"
            _run(standalone_command(settings, passed, a), out / f"standalone_{i:03d}_a.log")
            _run(standalone_command(settings, passed, b), out / f"standalone_{i:03d}_b.log")
            standalone.append(read_standalone(a, b, settings.confidence))
        aa = jobs[-1]["aa"]
        print(f"selftest {i + 1}/{settings.jobs} ({time.monotonic() - t0:.0f} s): A/A {aa['median']:.4f} "
              f"[{aa['low']:.4f}, {aa['high']:.4f}] {aa['verdict']}; "
              + "; ".join(f"{e:g}: {jobs[-1][f'effect_{e:g}']['median']:.4f} {jobs[-1][f'effect_{e:g}']['verdict']}"
                          for e in settings.effects), file=sys.stderr, flush=True)
        summary = summarize(jobs, standalone, settings, machine)
        summary["per_job"] = jobs
        summary["standalone"] = standalone
        (out / SELFTEST_FILE).write_text(json.dumps(summary, indent=1, default=str) + "\n")
    print(summary["line"])
    print(f"-> {out / SELFTEST_FILE}")
    return 0
