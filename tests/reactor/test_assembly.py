"""The assembly phase on its own: names, levels, precedence edges, fan-out tables, placement and the
diagram, checked without running anything."""
from __future__ import annotations

from reactor_backend import (Input, LogicalAction, Output, Reactor, Timer, assemble, assign_workers, diagram,
                             msec, reaction, startup)
from reactor_backend.model import Bank


class Stage(Reactor):
    inp = Input()
    out = Output()

    @reaction(inp, effects=[out])
    def fwd(self):
        self.out.set(self.inp.value)


class Head(Reactor):
    out = Output()
    t = Timer(period=msec(1))
    a = LogicalAction()

    @reaction(t, effects=[out, a])
    def emit(self):
        self.out.set(1)

    @reaction(a)
    def later(self):
        pass


class Inner(Reactor):
    inp = Input()

    def __init__(self):
        super().__init__()
        self.leaf = Stage()
        self.connect(self.inp, self.leaf.inp)  # pass-through: flattened at assembly


class Prog(Reactor):
    def __init__(self, n=4):
        super().__init__()
        self.head = Head()
        self.workers = self.bank(Stage, n)
        self.tail = Stage()
        self.nest = self.bank(Inner, 2)
        self.connect(self.head.out, self.workers.inp, broadcast=True)
        self.connect(self.workers[0].out, self.tail.inp, after=msec(2))

    @reaction("workers.out", effects=["nest[0].inp"])
    def gather(self):
        pass


def test_names_levels_edges_and_fanout():
    main = Prog()
    prog = assemble(main)
    names = [r.name for r in prog.reactors]
    assert names == ["main", "main.head", "main.workers[0]", "main.workers[1]", "main.workers[2]",
                     "main.workers[3]", "main.tail", "main.nest[0]", "main.nest[0].leaf", "main.nest[1]",
                     "main.nest[1].leaf"]
    lv = {r.full_name: r.level for r in prog.reactions}
    assert lv["main.head.emit"] == 0 and lv["main.head.later"] == 1
    assert all(lv[f"main.workers[{i}].fwd"] == 1 for i in range(4))
    assert lv["main.gather"] == 2 and lv["main.nest[0].leaf.fwd"] == 3
    assert lv["main.tail.fwd"] == 0  # behind an after delay: no precedence edge
    assert [r.index for r in prog.reactions] == list(range(len(prog.reactions)))
    assert [rx.level for rx in prog.reactions] == sorted(rx.level for rx in prog.reactions)
    assert sum(len(level) for level in prog.levels) == len(prog.reactions)
    head_out = main.head.out
    assert [p.full_name for p in head_out.fanout] == [f"main.workers[{i}].inp" for i in range(4)]
    assert {r.full_name for r in head_out.reactions} == {f"main.workers[{i}].fwd" for i in range(4)}
    w0 = main.workers[0].out
    assert [(d.full_name, delay, phys) for d, delay, phys in w0.delayed] == [("main.tail.inp", msec(2), False)]
    assert "main.tail.fwd" in {r.full_name for r in prog.downstream_reactions(w0)}
    assert "main.tail.fwd" not in {r.full_name for r in prog.readers(w0)}
    assert [p.full_name for p in main.nest[0].inp.fanout] == ["main.nest[0].leaf.inp"]
    idx = {r.full_name: r.index for r in prog.reactions}
    assert (idx["main.head.emit"], idx["main.head.later"]) in prog.edges
    assert prog.writers[main.head.out.id][0].full_name == "main.head.emit"
    assert prog.writers[main.tail.inp.id] is None


def test_assign_workers_default_rule_and_hints():
    main = Prog(n=4)
    prog = assemble(main)
    pl = assign_workers(prog, 2)
    assert pl[main] == 0 and pl[main.head] == 0 and pl[main.tail] == 0
    assert [pl[m] for m in main.workers] == [0, 0, 1, 1]
    assert [pl[m] for m in main.nest] == [0, 1] and pl[main.nest[1].leaf] == 1  # children follow
    assert set(assign_workers(prog, 1).values()) == {0}
    assert [assign_workers(prog, 4)[m] for m in main.workers] == [0, 1, 2, 3]

    main2 = Prog(n=4)
    main2.tail.place(1)
    main2.workers.place([3, 2, 1, 0])
    pl2 = assign_workers(assemble(main2), 4)
    assert pl2[main2.tail] == 1 and [pl2[m] for m in main2.workers] == [3, 2, 1, 0]


def test_bank_index_and_views():
    main = Prog(n=3)
    assert [m.bank_index for m in main.workers] == [0, 1, 2]
    assert main.tail.bank_index is None and isinstance(main.workers, Bank)
    assert len(main.workers.inp) == 3 and main.workers.out[1] is main.workers[1].out


def test_diagram_contains_reactors_ports_and_delays():
    prog = assemble(Prog(n=3))
    full = diagram(prog, collapse=False)
    for text in (full.dot, full.mermaid):
        assert "main.workers[1] : Stage" in text and "after 2ms" in text and "reaction fwd @L1" in text
    assert full.dot.startswith("digraph") and full.mermaid.startswith("flowchart LR")
    assert full.dot.count("{") == full.dot.count("}")
    short = diagram(prog)  # banks drawn once, parallel channel edges merged with a count
    for text in (short.dot, short.mermaid):
        assert "main.workers[*] : Stage ×3" in text and "main.workers[1]" not in text and "×3" in text
        assert "main.nest[*].leaf : Stage ×2" in text
    assert short.dot.count(" -> ") < full.dot.count(" -> ")


def test_startup_reaction_on_own_program_only():
    class M(Reactor):
        @reaction(startup)
        def s(self):
            pass

    prog = assemble(M())
    assert [r.full_name for r in prog.startup.reactions] == ["main.s"]
