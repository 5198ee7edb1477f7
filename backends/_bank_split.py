"""The reactor backend's bank split: which worker process runs each member of the scenario's worker bank.

Under the processes executor process 0 runs the server as well as its share of the bank. Where the server's
gather is split (`backends._reactor_program.SplitGatherServerReactor`) its cost decides how many members process 0
should keep: `measure_role_costs` times one member's step and the server's gather on throwaway roles,
`predicted_round` models a round from those costs for a contiguous split, and `split_by_cost` picks the split
whose predicted round is shortest. The result is one process index per bank member, handed to the program
as its bank split (`RoundProgram`'s ``bank_split``); the runtime's own placement rules are
`reactor_backend.placement`'s.
"""
from __future__ import annotations

from backends.base import split_messages
from reactor_backend.placement import even_part
from scenarios.base import Broadcast, Scenario


def predicted_round(first: int, members: int, processes: int, step: float, gather: float, *,
                    split_gather: bool, handoff: float) -> float:
    """The round a contiguous bank split with ``first`` members on process 0 (which runs the server) and the
    rest in even parts on the others should take.

    Process 0 steps its members while the others, after the scatter's hand-off, step theirs; the round
    ends with the gather of whatever is still to gather once the last results are in. With
    ``split_gather`` process 0 gathers its own members' results as soon as they are stepped, so only the
    other processes' part of the gather follows the last results; without it the whole gather does.

    Args:
        first: the members on process 0.
        members: the bank's width.
        processes: the worker processes, process 0 included.
        step: one member's step (any unit, the same for ``gather`` and ``handoff``).
        gather: the server's gather per member.
        split_gather: whether process 0 gathers its own members' results before the others'.
        handoff: a round's two hand-offs (scatter, results) together.
    """
    rest = members - first
    largest = -(-rest // (processes - 1)) if rest and processes > 1 else 0
    remote = handoff + largest * step if rest else 0.0
    if split_gather:
        return max(first * (step + gather), remote) + rest * gather
    return max(first * step, remote) + members * gather


def split_by_cost(members: int, processes: int, step: float, gather: float, *, split_gather: bool,
                  handoff: float) -> list[int]:
    """The process of each bank member, contiguous, for the shortest `predicted_round` with at most the
    even split's share on process 0 (which also runs the server); of equally short rounds the one nearest
    the even split. A costly streaming gather (a server that reads every byte of every result) moves members
    off process 0, a cheap one (the env workloads', whose workers encode their own results) does not pay for
    the longer wait of the others; the cap keeps every process working
    when steps are shorter than a hand-off (one process would be faster: that is serial's result).

    Args:
        members: the bank's width.
        processes: the worker processes, process 0 included.
        step, gather, split_gather, handoff: as for `predicted_round`.

    Returns:
        The process of each member, in bank order.
    """
    if processes <= 1 or members == 0:
        return [0] * members
    even = -(-members // processes)  # what the even contiguous split puts on process 0

    def key(first: int) -> tuple[float, int]:
        return (predicted_round(first, members, processes, step, gather,
                                split_gather=split_gather, handoff=handoff), abs(first - even))

    first = min(range(even + 1), key=key)
    rest = members - first
    out = [0] * first
    out.extend(1 + even_part(i, rest, processes - 1) for i in range(rest))
    return out


def local_members(bank_split: list[int]) -> int:
    """The members process 0 gathers in a reaction of its own before the others' results (the split gather,
    `backends._reactor_program.SplitGatherServerReactor`): its members where they lead the bank and number at
    least two, else 0 (one gather of everything). With one member the split's own reaction and level cost process 0
    more than the one result's fold they move off the round's end (counted with `scripts/round_instructions.py`:
    `results/reference/vm-2core-2026-12-06-p0-gather/README.md`).

    Args:
        bank_split: the worker process of each bank member, in bank order.
    """
    n_local = bank_split.count(0)
    if n_local < 2 or bank_split[:n_local] != [0] * n_local:
        return 0
    return n_local


def measure_role_costs(scenario: Scenario, max_rounds: int = 10, budget_s: float = 0.3) -> tuple[float, float]:
    """Seconds per round of one worker's ``step`` and of the server's ``scatter`` + ``gather`` of
    ``num_workers`` results, measured on throwaway roles in this process (medians after one
    warm-up round; the real roles and their checksum are untouched). Only for scenarios whose roles have no
    side effects (``scenario.facts.side_effects`` False).

    Args:
        scenario: the scenario whose roles are measured.
        max_rounds: the most timed rounds.
        budget_s: stop after the round that ends past this many seconds (at least two timed rounds).

    Returns:
        ``(step seconds, server seconds)``, medians per round.
    """
    import time

    server = scenario.make_server()
    worker = scenario.make_worker(0)
    n = scenario.num_workers
    steps, serves = [], []
    try:
        deadline = time.perf_counter() + budget_s
        for i in range(max_rounds + 1):
            t0 = time.perf_counter()
            msgs = server.scatter()
            msg = msgs.value if isinstance(msgs, Broadcast) else split_messages(msgs, n)[0]
            t1 = time.perf_counter()
            result = worker.step(msg)
            t2 = time.perf_counter()
            server.gather([result] * n)
            t3 = time.perf_counter()
            if i > 0:
                steps.append(t2 - t1)
                serves.append((t1 - t0) + (t3 - t2))
            if i > 1 and t3 > deadline:
                break
    finally:
        worker.close()
        server.close()
    steps.sort()
    serves.sort()
    return steps[len(steps) // 2], serves[len(serves) // 2]
