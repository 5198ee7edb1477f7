"""The dataflow graph of a reactor program as Graphviz DOT and Mermaid text.

``diagram(main)`` shows reactors (nested as clusters / subgraphs), their ports, timers, actions and
reactions (``name @level``), and the connections labelled with their delays (``after 10ms``,
``physical``). Reaction edges show triggers and sources (solid) and effects (dashed).

By default (``collapse=True``) the graph reads like an LF diagram: a bank is drawn once, as
``workers[*] : Worker ×4``, a multiport is one node (``output msgs[4]``) and parallel channel
connections are one edge labelled with their count (``×4``). ``collapse=False`` draws every bank
member and every channel. Render with ``dot -Tsvg`` or paste the Mermaid text into a Mermaid viewer.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from reactor_backend.assembly import Program, assemble


@dataclass(frozen=True)
class Diagram:
    """Text renderings of one program's dataflow graph."""

    dot: str
    mermaid: str

    def __str__(self) -> str:
        return self.dot


def _fmt_ns(ns: int) -> str:
    if ns == 0:
        return "0"
    for unit, f in (("s", 10 ** 9), ("ms", 10 ** 6), ("us", 10 ** 3)):
        if ns >= f and ns % f == 0:
            return f"{ns // f}{unit}"
    return f"{ns}ns"


def _conn_label(delay: int | None, physical: bool) -> str:
    if physical:
        return "physical" + (f" after {_fmt_ns(delay)}" if delay else "")
    if delay is not None:
        return f"after {_fmt_ns(delay)}"
    return ""


def diagram(main: Any, *, collapse: bool = True) -> Diagram:
    """Build the diagram of ``main``.

    Args:
        main: a Reactor (assembled here) or an assembled ``Program``.
        collapse: draw a bank once, a multiport as one node and parallel channels as one edge, as an LF
            diagram does (False: every bank member and every channel).
    """
    prog = main if isinstance(main, Program) else assemble(main)

    # ---- group reactors: one group per reactor, or per bank position when collapsing
    member_attr: dict[Any, str] = {}
    for _container, attr, bank in prog.banks:
        for m in bank.members:
            member_attr[m] = attr
    canon: dict[Any, str] = {}
    for r in prog.reactors:
        par = prog.parent[r]
        if par is None:
            canon[r] = "main"
        elif collapse and r in member_attr:
            canon[r] = f"{canon[par]}.{member_attr[r]}[*]"
        else:
            canon[r] = f"{canon[par]}.{r.name.rsplit('.', 1)[1]}"
    groups: list[str] = []
    group_size: dict[str, int] = {}
    group_type: dict[str, str] = {}
    group_parent: dict[str, str | None] = {}
    for r in prog.reactors:
        g = canon[r]
        if g not in group_size:
            groups.append(g)
            group_size[g] = 0
            group_type[g] = type(r).__name__
            par = prog.parent[r]
            group_parent[g] = canon[par] if par is not None else None
        group_size[g] += 1
    gid = {g: i for i, g in enumerate(groups)}

    # ---- nodes: (group, item name) -> node id, label, kind
    node_of: dict[tuple[str, str], str] = {}
    node_label: dict[str, str] = {}
    node_kind: dict[str, str] = {}
    owned: dict[str, list[str]] = {g: [] for g in groups}
    channels: dict[str, int] = {}

    def add(group: str, key: str, label: str, kind: str) -> str:
        k = (group, key)
        if k not in node_of:
            n = f"n{len(node_of)}"
            node_of[k] = n
            node_label[n] = label
            node_kind[n] = kind
            owned[group].append(n)
            channels[n] = 0
        return node_of[k]

    multiport_nodes: dict[str, str] = {}  # node -> group

    def port_node(p: Any) -> str:
        g = canon[p.owner]
        base = p.multiport.name if (collapse and p.multiport is not None) else p.name
        n = add(g, "port:" + base, f"{p.kind} {base}", "port")
        channels[n] += 1
        if collapse and p.multiport is not None:
            multiport_nodes[n] = g
        return n

    obj_node: dict[int, str] = {}
    for p in prog.ports:
        obj_node[id(p)] = port_node(p)
    for n, g in multiport_nodes.items():  # a multiport is one node labelled with its width
        node_label[n] += f"[{channels[n] // max(group_size[g], 1)}]"
    for t in prog.timers:
        period = f" every {_fmt_ns(t.period)}" if t.period else ""
        obj_node[id(t)] = add(canon[t.owner], "timer:" + t.name,
                              f"timer {t.name} @{_fmt_ns(t.offset)}{period}", "timer")
    for a in prog.actions:
        obj_node[id(a)] = add(canon[a.owner], "action:" + a.name,
                              f"{'physical' if a.physical else 'logical'} action {a.name}", "action")
    for rx in prog.reactions:
        dl = f" deadline {_fmt_ns(rx.deadline)}" if rx.deadline >= 0 else ""
        obj_node[id(rx)] = add(canon[rx.reactor], "reaction:" + rx.name, f"reaction {rx.name} @L{rx.level}{dl}",
                               "reaction")
    special = {id(prog.startup): "startup", id(prog.shutdown): "shutdown"}

    # ---- edges, aggregated
    conn_edges: dict[tuple[str, str, str], int] = {}
    for c in prog.connections:
        key = (obj_node[id(c.src)], obj_node[id(c.dst)], _conn_label(c.delay, c.physical))
        conn_edges[key] = conn_edges.get(key, 0) + 1
    dep_edges: dict[tuple[str, str], None] = {}
    eff_edges: dict[tuple[str, str], None] = {}
    used_special: set[str] = set()
    for rx in prog.reactions:
        me = obj_node[id(rx)]
        for t in rx.triggers + rx.sources:
            if id(t) in special:
                used_special.add(special[id(t)])
                dep_edges[(special[id(t)], me)] = None
            elif id(t) in obj_node:  # (a mode's reset trigger has no node)
                dep_edges[(obj_node[id(t)], me)] = None
        for e in rx.effects:
            eff_edges[(me, obj_node[id(e)])] = None

    def edge_label(label: str, count: int) -> str:
        if collapse and count > 1:
            return f"{label} ×{count}".strip()
        return label

    def group_title(g: str) -> str:
        mult = f" ×{group_size[g]}" if group_size[g] > 1 else ""
        return f"{g} : {group_type[g]}{mult}"

    children: dict[str, list[str]] = {g: [] for g in groups}
    for g in groups:
        if group_parent[g] is not None:
            children[group_parent[g]].append(g)  # type: ignore[index]

    # ---- DOT
    shapes = {"reaction": "ellipse", "timer": "circle", "action": "diamond", "port": "box"}
    dot = ["digraph reactors {", "  rankdir=LR;", "  node [shape=box, fontsize=10];"]

    def dot_cluster(g: str, indent: str) -> None:
        dot.append(f"{indent}subgraph cluster_{gid[g]} {{")
        dot.append(f'{indent}  label="{group_title(g)}";')
        for n in owned[g]:
            dot.append(f'{indent}  {n} [label="{node_label[n]}", shape={shapes[node_kind[n]]}];')
        for ch in children[g]:
            dot_cluster(ch, indent + "  ")
        dot.append(f"{indent}}}")

    dot_cluster("main", "  ")
    for s in sorted(used_special):
        dot.append(f'  {s} [shape=doublecircle, label="{s}"];')
    for (a, b, lab), cnt in conn_edges.items():
        lab = edge_label(lab, cnt)
        attrs = f'penwidth=2, label="{lab}"' if lab else "penwidth=2"
        dot.append(f"  {a} -> {b} [{attrs}];")
    for a, b in dep_edges:
        dot.append(f"  {a} -> {b};")
    for a, b in eff_edges:
        dot.append(f"  {a} -> {b} [style=dashed];")
    dot.append("}")

    # ---- Mermaid
    mm = ["flowchart LR"]

    def mm_cluster(g: str, indent: str) -> None:
        mm.append(f'{indent}subgraph G{gid[g]}["{group_title(g)}"]')
        for n in owned[g]:
            lab = node_label[n].replace('"', "'")
            mm.append(f'{indent}  {n}(["{lab}"])' if node_kind[n] == "reaction" else f'{indent}  {n}["{lab}"]')
        for ch in children[g]:
            mm_cluster(ch, indent + "  ")
        mm.append(f"{indent}end")

    mm_cluster("main", "  ")
    for s in sorted(used_special):
        mm.append(f"  {s}(({s}))")
    for (a, b, lab), cnt in conn_edges.items():
        lab = edge_label(lab, cnt)
        mm.append(f"  {a} ==>|{lab}| {b}" if lab else f"  {a} ==> {b}")
    for a, b in dep_edges:
        mm.append(f"  {a} --> {b}")
    for a, b in eff_edges:
        mm.append(f"  {a} -.-> {b}")
    return Diagram(dot="\n".join(dot) + "\n", mermaid="\n".join(mm) + "\n")
