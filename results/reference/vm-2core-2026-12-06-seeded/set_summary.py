"""Per job, set (epoch) and pair of a self-test folder: the cycles' ratio median, its MAD and where the two ran.

    python set_summary.py SELFTEST_FOLDER OUT.csv.gz
Ratios are the copy's throughput over serial's in the same cycle (log, per cent); pair 2 is the A/A copy, 3 and 4
the injected +2% and +5% copies (their order in the self-test's residents). cpu1_* is the share of the set's cycles
whose block ran on CPU 1 (`extra.cpus`)."""
import glob, json, sys, warnings
import numpy as np, pandas as pd
warnings.simplefilter('ignore')
folder, out = sys.argv[1], sys.argv[2]
rows = []
for p in sorted(glob.glob(folder + '/job_*/results.csv')):
    d = pd.read_csv(p); d = d[(d.status == 'ok') & (d.backend == 'serial')]
    e = d.extra.map(json.loads)
    d = d.assign(epoch=[x.get('epoch') for x in e], cpu1=[float((x.get('cpus') or [0])[0] == 1) for x in e],
                 ew=[x.get('extra_work') for x in e])
    base = d[d['copy'] == 1].groupby('cycle').agg(t=('throughput', 'median'), cpu1=('cpu1', 'first'), epoch=('epoch', 'first'))
    for cn in sorted(set(d['copy']) - {1}):
        b = d[d['copy'] == cn].groupby('cycle').agg(t=('throughput', 'median'), cpu1=('cpu1', 'first'), ew=('ew', 'first'))
        j = base.join(b, lsuffix='_a', rsuffix='_b', how='inner')
        j['lr'] = 100 * np.log(j.t_b / j.t_a)
        for ep, g in j.groupby('epoch'):
            rows.append(dict(job=p.split('/')[-2], pair=int(cn), extra_work=float(g.ew.iloc[0]), epoch=int(ep), cycles=len(g),
                             median_pct=round(float(g.lr.median()), 4),
                             mad_pct=round(float(np.median(np.abs(g.lr - g.lr.median())) * 1.4826), 4),
                             cpu1_serial=round(float(g.cpu1_a.mean()), 3), cpu1_copy=round(float(g.cpu1_b.mean()), 3)))
pd.DataFrame(rows).to_csv(out, index=False)
print(len(rows), 'rows ->', out)
