"""Process 0's and the busiest other process's CPU per round, gym at 16 members on 16 processes, the program as
the backend of the checkout on PYTHONPATH builds it (its `local_members` rule; before it existed: process 0's one
member gathered apart). Prints "p0 busiest server-class". Alternate two checkouts with it, e.g.:

    cd CHECKOUT && PYTHONPATH=$PWD python /path/to/ab_local.py $PWD 20000
"""
import sys

sys.path.insert(0, sys.argv[1] + "/results/reference/vm-2core-2026-12-06-p0-gather")
import floor  # noqa: E402  (its Window clock)
from backends._reactor_program import RoundProgram  # noqa: E402
from reactor_backend import assemble, run  # noqa: E402
from reactor_backend.processes import Breakdown  # noqa: E402
from scenarios.configs import GymConfig  # noqa: E402
from scenarios.gym import GymScenario  # noqa: E402

try:
    from backends._bank_split import local_members
except ImportError:
    def local_members(split):
        return 1

R, N = int(sys.argv[2]), 16
scenario = GymScenario(GymConfig(num_envs=N), seed=1)
server, bd = scenario.make_server(), Breakdown()
clock = floor.Window(bd, R)
split = list(range(N))
top = RoundProgram(scenario, server, clock, R, bank_split=split, n_local=local_members(split))
run(assemble(top), executor="processes", workers=N, breakdown=bd, copy_arrays=False)
n = R - R // 5
cpu = [bd.parts({k: b[k] - a[k] for k in b})["cpu"] / n / 1e3 for a, b in zip(clock.first, clock.last)]
print(f"{cpu[0]:.2f} {max(cpu[1:]):.2f} {type(top.server).__name__}")
