"""Per-regime (as shipped) vs pooled vs pooled-unless-regimes-disagree verdicts, on a selftest.json."""
import gzip, json, sys
import numpy as np

def load(p):
    return json.load(gzip.open(p) if p.endswith('.gz') else open(p))

def parts(r, rule):
    regs = r.get('regimes') or [r]
    pooled = [dict(low=r['low'], high=r['high'])]
    if rule == 'regime' or len(regs) == 1:
        return regs if rule == 'regime' else (pooled if len(regs) == 1 else regs)
    if rule == 'pooled':
        return pooled
    # agree: every pair of regime intervals overlaps
    ok = all(a['low'] <= b['high'] and b['low'] <= a['high'] for a in regs for b in regs if a is not b
             and a.get('low') is not None and b.get('low') is not None)
    return pooled if ok else regs

def clearance(r, rule):
    c = 0.0
    for p in parts(r, rule):
        lo, hi = p.get('low'), p.get('high')
        if lo is None or hi is None: continue
        c = max(c, lo - 1, 1 - hi)
    return c

def slower(r, rule, m):
    ps = [p for p in parts(r, rule) if p.get('low') is not None]
    s = any(p['high'] < 1 - m for p in ps); f = any(p['low'] > 1 + m for p in ps)
    return s and not f

def main(path):
    d = load(path); jobs = d['per_job']
    effects = sorted(k for k in jobs[0] if k.startswith('effect_'))
    print(path, len(jobs), 'jobs; split jobs', sum(j['regimes'] > 1 for j in jobs))
    for rule in ('regime', 'pooled', 'agree'):
        cl = np.array([clearance(j['aa'], rule) for j in jobs])
        n = len(cl)
        loo = np.array([np.quantile(np.delete(cl, i), 0.95) for i in range(n)])
        m_all = np.quantile(cl, 0.95)
        out = [f"{rule:7s} margin {m_all*100:.2f}%", f"AA>0 {int((cl>0).sum())}/{n}",
               f"AA called@1% {int((cl>0.01).sum())}", f"AA called@LOO {int((cl>loo).sum())}"]
        for e in effects:
            det1 = sum(slower(j[e], rule, 0.01) for j in jobs)
            detm = sum(slower(j[e], rule, loo[i]) for i, j in enumerate(jobs))
            out.append(f"{e[7:]}: @1% {det1} @LOO {detm}")
        print('  '.join(out))

for p in sys.argv[1:]:
    main(p)
