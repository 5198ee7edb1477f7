# ab.py with breakdown optional (BD=0: none; wall only) and W from env; prints one line per run
import sys, time, os
sys.path.insert(0, os.environ['TREE'])
from backends._reactor_program import RoundProgram
from reactor_backend import assemble, run
from reactor_backend.processes import Breakdown
from scenarios.gym import GymScenario
class C: env_id=os.environ.get('ENV','CartPole-v1'); num_envs=int(os.environ.get('NENV','16')); seeding='distinct'
R=int(sys.argv[1]); W=int(os.environ.get('W','16')); WARM=R//5
use_bd = os.environ.get('BD','1')=='1'
bd=Breakdown() if use_bd else None
class Clk:
    n=0; snap=None
    def begin(self): pass
    def tick(self):
        self.n+=1
        if self.n==WARM:
            self.snap=bd.counters() if bd else None; self.t0=time.perf_counter()
        if self.n==R:
            self.end=bd.counters() if bd else None; self.t1=time.perf_counter()
sc=GymScenario(C(), 1); srv=sc.make_server(); clk=Clk()
N=C.num_envs
split=[i*W//N for i in range(N)]
top=RoundProgram(sc, srv, clk, R, bank_split=split, n_local=split.count(0))
run(assemble(top), executor='processes', workers=W, breakdown=bd, copy_arrays=False)
n=R-WARM
wall=(clk.t1-clk.t0)/n*1e6
label=os.environ['LABEL']
if bd:
    d=[bd.parts({k:e[k]-s[k] for k in e}) for s,e in zip(clk.snap, clk.end)]
    cpu=[x['cpu']/n/1e3 for x in d]
    print(f"{label} p0cpu {cpu[0]:.2f} othermax {max(cpu[1:]):.2f} ratio {cpu[0]/max(cpu[1:]):.3f} p0transport {d[0]['transport']/n/1e3:.2f} p1transport {d[1]['transport']/n/1e3:.2f} checksum {srv.checksum()[:8]} wall {wall:.2f}")
else:
    print(f"{label} p0cpu nan othermax nan ratio nan p0transport nan p1transport nan checksum {srv.checksum()[:8]} wall {wall:.2f}")
