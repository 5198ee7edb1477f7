"""dqn's synchronized ceiling on the 16-core run, read from its rows: per cycle, the ceiling over serial against
k x (serial's round over copy 0's round), each one's rollout and learner time per round, and the reactor's rollout
workers' time per rollout beside serial's and copy 0's (the same work in the same cycles)."""
import json, sys
from pathlib import Path
import numpy as np, pandas as pd
from harness.archive import read_archive, record_rows
from harness.report.intervals import median_interval
run = Path(sys.argv[1])
for rec in read_archive(run):
    if not rec['job'].startswith('paired/dqn/'):
        continue
    d = pd.DataFrame(record_rows(rec)); d = d[d.status == 'ok'].copy()
    d['ex'] = d.extra.map(json.loads); d['cycle'] = d.ex.map(lambda e: e['cycle'])
    w = int(rec['job'].split('/w')[1])
    n = int(d.num_envs.iloc[0])  # the bank: dqn's rollout workers
    rows = []
    for c, g in d.groupby('cycle'):
        by = {b: r for b, r in zip(g.backend, g.itertuples())}
        if not {'serial', 'capacity'} <= set(by):
            continue
        s, k = by['serial'], by['capacity']
        r = by.get('reactor')
        rows.append(dict(
            speedup=float(k.throughput) / float(s.throughput),
            s_roll=s.ex['rollout_total_s'] / s.ex['breakdown_rounds'] * 1e3,
            k_roll=k.ex['rollout_total_s'] / k.ex['breakdown_rounds'] * 1e3,
            s_train=s.ex['training_s'] / s.ex['breakdown_rounds'] * 1e3,
            k_train=k.ex['training_s'] / k.ex['breakdown_rounds'] * 1e3,
            s_cpu=s.ex['cpus'][0], k_cpu=k.ex['cpus'][0],
            r_roll=np.nan if r is None else r.ex['rollout_total_s'] / r.ex['breakdown_rounds'] * 1e3))
    t = pd.DataFrame(rows)
    t['pred'] = w * (t.s_roll + t.s_train) / (t.k_roll + t.k_train)
    sp, pr = median_interval(t.speedup.tolist(), dependent=False), median_interval(t.pred.tolist(), dependent=False)
    print(f"dqn w={w}: {len(t)} cycles; ceiling/serial {sp.median:.1f}x [{sp.low:.1f}, {sp.high:.1f}]; "
          f"{w} x serial round / copy 0's round {pr.median:.1f}x [{pr.low:.1f}, {pr.high:.1f}]; "
          f"rollouts per round serial {t.s_roll.median():.0f} ms, copy 0 {t.k_roll.median():.0f} ms; "
          f"learner serial {t.s_train.median():.2f} ms, copy 0 {t.k_train.median():.2f} ms; "
          f"serial on CPUs {sorted(set(t.s_cpu))}, copy 0 on {sorted(set(t.k_cpu))}; "
          f"per rollout: serial {t.s_roll.median() / n:.1f} ms, copy 0 {t.k_roll.median() / n:.1f}, "
          f"the reactor's workers {t.r_roll.median() / n:.1f}")
