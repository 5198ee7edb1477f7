"""Placement: which worker process runs each reactor of an assembled program (the processes executor's).

A program is placed after assembly and before it runs; placement reads the program and changes nothing in
it. The hints it honours are declared on the model (``Reactor.place(w)``, ``Bank.place(...)``); the rules
are `assign_workers`'; `even_part` is the one definition of a bank's contiguous even split.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from reactor_backend.assembly import Program
    from reactor_backend.model import Bank, Reactor


def even_part(index: int, members: int, n_workers: int) -> int:
    """The worker of bank member ``index`` of ``members`` split into contiguous, even parts over ``n_workers``
    (the one definition of the even split: `assign_workers`' default, and what callers that place a bank
    themselves build on).

    Args:
        index: the member's position in its bank, ``0 <= index < members``.
        members: the bank's width.
        n_workers: the number of worker processes.
    """
    return (index * n_workers) // members


def assign_workers(program: Program, n_workers: int) -> dict[Reactor, int]:
    """Static placement of reactors onto ``n_workers`` processes (worker 0 = the calling process).

    Rules, in order: a reactor inside a mode (``in_mode``, at any depth) goes where its modal
    reactor goes (a transition changes the whole mode at once, in one process); an explicit hint
    (``Reactor.place(w)`` / ``Bank.place(...)``; taken modulo ``n_workers``) wins; a member of a bank whose
    container was not itself split goes to ``even_part(index, len(bank), n_workers)`` (contiguous, even
    parts); any other reactor inherits its container's worker (main: worker 0). Deterministic: same
    program, same placement.

    Args:
        program: an assembled program (`reactor_backend.assembly.assemble`).
        n_workers: the number of worker processes, at least 1.

    Returns:
        The worker of every reactor of ``program``.
    """
    if n_workers < 1:
        raise ValueError("n_workers must be >= 1")
    bank_of: dict[Reactor, tuple[Bank, int]] = {}
    for _, _, b in program.banks:
        for i, m in enumerate(b.members):
            bank_of[m] = (b, i)
    out: dict[Reactor, int] = {}
    split: dict[Reactor, bool] = {}
    for r in program.reactors:  # preorder: parents first
        par = program.parent[r]
        inherited = out[par] if par is not None else 0
        par_split = split[par] if par is not None else False
        enc = r.__dict__.get("_enclosing_mode")
        if enc is not None:
            # a mode's contents run where the modal reactor runs (transitions change them at once)
            out[r] = out[enc.reactor]
            split[r] = True
        elif r._place_hint is not None:
            out[r] = r._place_hint % n_workers
            split[r] = True
        elif r in bank_of and not par_split:
            b, i = bank_of[r]
            out[r] = even_part(i, len(b), n_workers)
            split[r] = True
        else:
            out[r] = inherited
            split[r] = par_split
    return out
