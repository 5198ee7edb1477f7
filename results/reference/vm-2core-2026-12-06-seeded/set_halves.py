"""Within a set, do its first and second halves differ beyond sampling error (drift), as sets do (process offsets)?"""
import glob, json, sys, warnings
import numpy as np, pandas as pd
from scipy import stats
warnings.simplefilter('ignore')
chis, dfs = [], 0
for p in sorted(glob.glob(sys.argv[1] + '/job_*/results.csv')):
    d = pd.read_csv(p); d = d[(d.status == 'ok') & (d.backend == 'serial')]
    e = d.extra.map(json.loads); d = d.assign(epoch=[x.get('epoch') for x in e])
    a = d[d['copy'] == 1].groupby('cycle').agg(t=('throughput', 'median'), epoch=('epoch', 'first'))
    b = d[d['copy'] == 2].groupby('cycle').agg(t=('throughput', 'median'))
    j = a.join(b, lsuffix='_a', rsuffix='_b', how='inner'); j['lr'] = 100 * np.log(j.t_b / j.t_a)
    for ep, g in j.groupby('epoch'):
        x = g.lr.values
        if len(x) < 8: continue
        h = [x[: len(x) // 2], x[len(x) // 2:]]
        m = [np.median(v) for v in h]; se = [1.2533 * np.median(np.abs(v - np.median(v))) * 1.4826 / np.sqrt(len(v)) for v in h]
        w = 1 / np.array(se) ** 2; mu = (w * m).sum() / w.sum()
        chis.append(float((w * (np.array(m) - mu) ** 2).sum())); dfs += 1
print(f"halves within sets: chi2 {sum(chis):.0f} on {dfs} df (x{sum(chis) / dfs:.2f}, p {stats.chi2.sf(sum(chis), dfs):.2g})")
