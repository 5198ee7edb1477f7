"""The dataflow graph of a reactor program as Graphviz DOT and Mermaid text.

``diagram(main)`` shows reactors (nested as clusters / subgraphs), their ports, timers, actions and
reactions (``name @level``), and every flattened connection labelled with its delay (``after 10ms``,
``physical``). Reaction edges show triggers (solid) and effects (dashed). Render with
``dot -Tsvg`` or paste the Mermaid text into any Mermaid viewer.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from reactor_backend._core import Action, Port, Timer
from reactor_backend.assembly import Program, assemble


@dataclass(frozen=True)
class Diagram:
    """Text renderings of one program's dataflow graph."""

    dot: str
    mermaid: str

    def __str__(self) -> str:
        return self.dot


def _fmt_ns(ns: int) -> str:
    for unit, f in (("s", 10 ** 9), ("ms", 10 ** 6), ("us", 10 ** 3)):
        if ns >= f and ns % f == 0:
            return f"{ns // f}{unit}"
    return f"{ns}ns"


def _ident(prefix: str, i: int) -> str:
    return f"{prefix}{i}"


def diagram(main: Any) -> Diagram:
    """Build the diagram of ``main`` (a Reactor, assembled here, or an assembled ``Program``)."""
    prog = main if isinstance(main, Program) else assemble(main)
    rid = {r: i for i, r in enumerate(prog.reactors)}
    node: dict[int, str] = {}
    labels: dict[str, str] = {}
    owned: dict[int, list[str]] = {i: [] for i in range(len(prog.reactors))}

    for p in prog.ports:
        n = _ident("p", p.id)
        node[id(p)] = n
        labels[n] = f"{p.kind} {p.name}"
        owned[rid[p.owner]].append(n)
    for k, t in enumerate(prog.timers):
        n = _ident("t", k)
        node[id(t)] = n
        period = f" every {_fmt_ns(t.period)}" if t.period else ""
        labels[n] = f"timer {t.name} @{_fmt_ns(t.offset)}{period}"
        owned[rid[t.owner]].append(n)
    for a in prog.actions:
        n = _ident("a", a.id)
        node[id(a)] = n
        labels[n] = f"{'physical' if a.physical else 'logical'} action {a.name}"
        owned[rid[a.owner]].append(n)
    for rx in prog.reactions:
        n = _ident("r", rx.index)
        node[id(rx)] = n
        dl = f" deadline {_fmt_ns(rx.deadline)}" if rx.deadline >= 0 else ""
        labels[n] = f"reaction {rx.name} @L{rx.level}{dl}"
        owned[rid[rx.reactor]].append(n)
    special = {id(prog.startup): "startup", id(prog.shutdown): "shutdown"}

    children: dict[int, list[int]] = {i: [] for i in range(len(prog.reactors))}
    for r in prog.reactors:
        par = prog.parent[r]
        if par is not None:
            children[rid[par]].append(rid[r])

    conn_edges: list[tuple[str, str, str]] = []
    for c in prog.connections:
        label = ""
        if c.physical:
            label = "physical" + (f" after {_fmt_ns(c.delay)}" if c.delay else "")
        elif c.delay is not None:
            label = f"after {_fmt_ns(c.delay)}"
        conn_edges.append((node[id(c.src)], node[id(c.dst)], label))
    trig_edges: list[tuple[str, str]] = []
    eff_edges: list[tuple[str, str]] = []
    used_special: set[str] = set()
    for rx in prog.reactions:
        for t in rx.triggers:
            if id(t) in special:
                used_special.add(special[id(t)])
                trig_edges.append((special[id(t)], node[id(rx)]))
            else:
                trig_edges.append((node[id(t)], node[id(rx)]))
        for s in rx.sources:
            trig_edges.append((node[id(s)], node[id(rx)]))
        for e in rx.effects:
            eff_edges.append((node[id(rx)], node[id(e)]))

    # ---- DOT
    dot = ["digraph reactors {", "  rankdir=LR;", "  node [shape=box, fontsize=10];"]

    def dot_cluster(i: int, indent: str) -> None:
        r = prog.reactors[i]
        dot.append(f'{indent}subgraph cluster_{i} {{')
        dot.append(f'{indent}  label="{r.name} : {type(r).__name__}";')
        for n in owned[i]:
            shape = "ellipse" if n.startswith("r") else ("circle" if n.startswith(("t", "a")) else "box")
            dot.append(f'{indent}  {n} [label="{labels[n]}", shape={shape}];')
        for ch in children[i]:
            dot_cluster(ch, indent + "  ")
        dot.append(f"{indent}}}")

    dot_cluster(0, "  ")
    for s in sorted(used_special):
        dot.append(f'  {s} [shape=doublecircle, label="{s}"];')
    for a, b, lab in conn_edges:
        attrs = f'penwidth=2, label="{lab}"' if lab else "penwidth=2"
        dot.append(f"  {a} -> {b} [{attrs}];")
    for a, b in trig_edges:
        dot.append(f"  {a} -> {b};")
    for a, b in eff_edges:
        dot.append(f"  {a} -> {b} [style=dashed];")
    dot.append("}")

    # ---- Mermaid
    mm = ["flowchart LR"]

    def mm_cluster(i: int, indent: str) -> None:
        r = prog.reactors[i]
        mm.append(f'{indent}subgraph R{i}["{r.name} : {type(r).__name__}"]')
        for n in owned[i]:
            lab = labels[n].replace('"', "'")
            mm.append(f'{indent}  {n}(["{lab}"])' if n.startswith("r") else f'{indent}  {n}["{lab}"]')
        for ch in children[i]:
            mm_cluster(ch, indent + "  ")
        mm.append(f"{indent}end")

    mm_cluster(0, "  ")
    for s in sorted(used_special):
        mm.append(f"  {s}(({s}))")
    for a, b, lab in conn_edges:
        mm.append(f"  {a} ==>|{lab}| {b}" if lab else f"  {a} ==> {b}")
    for a, b in trig_edges:
        mm.append(f"  {a} --> {b}")
    for a, b in eff_edges:
        mm.append(f"  {a} -.-> {b}")
    return Diagram(dot="\n".join(dot) + "\n", mermaid="\n".join(mm) + "\n")
