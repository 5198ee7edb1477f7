"""Per job, the self-test's reading under two regime rules: every host regime (selftest_per_host_regime.json, as the
run printed it) and the regimes the report reads since 2026-12-06 (selftest.json after --reanalyze: split only where a
host shift moved a ratio between contenders). Writes a compact CSV and prints the counts.

    python rules.py <selftest folder> <out.csv>
"""
import csv, json, sys
from pathlib import Path

import numpy as np

from harness import selftest
from harness.report import stats


def per_job(path: Path):
    s = json.loads(path.read_text())
    jobs = s["per_job"]
    clear = np.array([selftest.clearance(j["aa"]) for j in jobs])
    loo = np.array([selftest.measured_margin(np.delete(clear, i)) for i in range(len(jobs))])
    effects = sorted(k for k in jobs[0] if k.startswith("effect_"))
    out = []
    for i, j in enumerate(jobs):
        row = {"job": j["job"], "cycles": j["cycles"], "regimes": j["regimes"], "aa_clearance": round(clear[i], 5),
               "loo_margin": round(loo[i], 5),
               "aa_word": selftest.job_word(selftest._regimes(j["aa"]), loo[i])}
        for e in effects:
            row[f"{e}_word"] = selftest.job_word(selftest._regimes(j[e]), loo[i])
        out.append(row)
    return s, out


def main(folder: str, dest: str) -> None:
    folder = Path(folder)
    host_s, host = per_job(folder / "selftest_per_host_regime.json")
    read_s, read = per_job(folder / "selftest.json")
    rows = []
    for h, r in zip(host, read):
        assert h["job"] == r["job"]
        rows.append({"job": h["job"], "cycles": h["cycles"], "host_regimes": h["regimes"], "read_regimes": r["regimes"],
                     **{f"{k}_host": v for k, v in h.items() if k not in ("job", "cycles", "regimes")},
                     **{f"{k}_read": v for k, v in r.items() if k not in ("job", "cycles", "regimes")}})
    with open(dest, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    for name, s, jobs in (("every host regime", host_s, host), ("read regimes", read_s, read)):
        n = len(jobs)
        called = sum(j["aa_word"] in (stats.FASTER, stats.SLOWER, "faster and slower") for j in jobs)
        dets = {k[:-5]: sum(j[k] == stats.SLOWER for j in jobs) for k in jobs[0] if k.startswith("effect_")}
        print(f"{name}: margin {s['margin']['value'] * 100:.2f}%, split {sum(j['regimes'] > 1 for j in jobs)}/{n}, "
              f"A/A called at the leave-one-out margin {called}/{n}, "
              + ", ".join(f"{k} slower {v}/{n}" for k, v in dets.items()))


if __name__ == "__main__":
    main(*sys.argv[1:])
