"""Assembly phase: turn a tree of reactor instances into a validated ``Program``, the plan an executor runs.

A program is not frozen: its reactors hold user state, and the processes executor marks which reactions
run in each process (``reaction.local``) and which process schedules delayed events while it runs, then
restores them; per-run scheduling state lives in the core and the executor, so the same program runs
again under any executor (``tests/reactor/test_plan.py``).

Assembly and execution are separate phases (as in reactor-rs / reactor-cpp). ``assemble(main)``
does everything knowable before the first tag: naming, resolving reaction declarations, flattening
connections across the hierarchy, checking the rules (widths, directions, one writer per port,
declared effects), building the precedence graph, computing levels (Kahn) and detecting causality
cycles, and precomputing the fan-out tables the compiled core uses at run time.
Where each reactor runs under the processes executor is computed apart, from the assembled program
(`reactor_backend.placement.assign_workers`).

The ``Program`` object (what an executor consumes)
--------------------------------------------------
- ``main``: the top-level reactor; ``reactors``: every reactor in preorder (parents before children).
  ``reactor.name`` is its stable hierarchical name (``main``, ``main.count``, ``main.workers[3]``);
  ``parent[reactor]`` its container (``None`` for main).
- ``ports``: every port *channel* (a multiport of width n contributes n ``_core.Port`` objects);
  ``port.id`` is its index here, ``port.owner`` its reactor, ``port.kind`` ``"input"|"output"``.
  Per port, precomputed: ``port.fanout`` (ports that receive its value through zero-delay
  connections, transitively), ``port.delayed`` (``(dest_port, delay_ns, physical)`` for delayed and
  physical connections leaving it or its fan-out) and ``port.reactions`` (reactions triggered when it
  becomes present, directly or through the fan-out), sorted by global order.
- ``connections``: flattened channel-level ``Connection(src, dst, delay, physical)``; ``delay`` is
  ``None`` for a plain connection, an int (ns) for ``after=``.
- ``reactions``: every ``_core.Reaction`` in global order (``reaction.index`` = position): sorted
  by level, then inherited deadline (earliest first; none last), then reactor preorder, then
  declaration order. Each has ``reactor``, ``name``, ``full_name`` (``main.count.emit``), ``level``,
  ``triggers``, ``sources``, ``effects`` (flattened objects), ``deadline`` (ns or -1, this
  instance's), ``inherited_deadline`` (the earliest deadline of it and every reaction downstream,
  or -1), ``priority`` (rank in LF's single-threaded order: inherited deadline, then level, then
  as above; the inline executor runs reactions in this order) and ``local`` (False: not run in
  this process).
- ``levels``: ``levels[k]`` is the tuple of reactions at level k; reactions of one level never depend
  on each other and may run in parallel.
- ``edges``: precedence edges ``(upstream.index, downstream.index)``.
- ``timers``, ``actions``: every timer / action; ``startup``, ``shutdown``: the special triggers.
- ``triggers``: everything the core binds to (ports, actions, timers, startup, shutdown).
- ``writers[port.id]``: reactions that may ``set()`` that port (via effects) or ``None``;
  ``readers(port)``: reactions that trigger on or read the port or any port of its fan-out;
  ``downstream_reactions(port)``: every reaction that can observe a value set on ``port`` (through
  zero-delay and delayed connections).
- ``banks``: ``(container, attribute name, Bank)`` for every bank.

For the processes executor: ``placement.assign_workers(program, n)`` maps each reactor to a worker
(0..n-1; worker 0 is the calling process). A reaction runs where its reactor lives. A port value
must cross processes when ``program.readers(port)`` (or ``downstream_reactions`` for delayed paths)
contains a reaction placed on another worker than the port's writer.
"""
from __future__ import annotations

import re
import types
from dataclasses import dataclass, field
from typing import Any, Iterable

from reactor_backend._core import Action, ModeState, Port, Reaction, SpecialTrigger, Timer, Trigger
from reactor_backend.errors import AssemblyError, CausalityError
from reactor_backend.model import (Bank, BankPortView, Mode, MultiPort, ReactionDecl, Reactor, State, _Special,
                                   _Transition, class_declarations, interleaved, reset, resolve_param,
                                   shutdown, startup)

_NO_DEADLINE = 1 << 62  # sorts after every real deadline


@dataclass(frozen=True)
class Connection:
    """One flattened channel-level connection."""

    src: Port
    dst: Port
    delay: int | None
    physical: bool
    owner: Reactor  # the reactor whose connect() made it
    mode: ModeState | None = None  # the owner's mode it was declared in (``in_mode``), or None

    def __repr__(self) -> str:
        d = "" if self.delay is None else f" after {self.delay}ns"
        p = " physical" if self.physical else ""
        return f"<Connection {self.src.full_name} -> {self.dst.full_name}{d}{p}>"


@dataclass(frozen=True)
class Program:
    """The assembled, validated program (see the module docstring for every field)."""

    main: Reactor
    reactors: tuple[Reactor, ...]
    parent: dict[Reactor, Reactor | None]
    ports: tuple[Port, ...]
    actions: tuple[Action, ...]
    timers: tuple[Timer, ...]
    connections: tuple[Connection, ...]
    reactions: tuple[Reaction, ...]
    levels: tuple[tuple[Reaction, ...], ...]
    edges: tuple[tuple[int, int], ...]
    startup: SpecialTrigger
    shutdown: SpecialTrigger
    triggers: tuple[Trigger, ...]
    writers: tuple[tuple[Reaction, ...] | None, ...]
    banks: tuple[tuple[Reactor, str, Bank], ...]
    has_physical_actions: bool
    _readers: dict[int, tuple[Reaction, ...]] = field(default_factory=dict, repr=False)

    @property
    def n_levels(self) -> int:
        return len(self.levels)

    def readers(self, port: Port) -> tuple[Reaction, ...]:
        """Reactions that trigger on or read ``port`` or any port in its zero-delay fan-out."""
        return self._readers.get(port.id, ())

    def downstream_reactions(self, port: Port) -> tuple[Reaction, ...]:
        """Every reaction that can observe a value set on ``port`` (zero-delay and delayed paths)."""
        seen_ports: set[int] = set()
        out: dict[int, Reaction] = {}
        stack = [port]
        while stack:
            p = stack.pop()
            if p.id in seen_ports:
                continue
            seen_ports.add(p.id)
            for r in self.readers(p):
                out[r.index] = r
            for dst, _delay, _phys, *_mode in p.delayed:
                stack.append(dst)
        return tuple(out[i] for i in sorted(out))

    def reactor_named(self, name: str) -> Reactor:
        for r in self.reactors:
            if r.name == name:
                return r
        raise KeyError(name)


# ---------------------------------------------------------------------------------------------
# naming and containment

def _children(reactor: Reactor) -> list[tuple[str, Reactor, Bank | None]]:
    out: list[tuple[str, Reactor, Bank | None]] = []
    seen_banks: set[int] = set()
    for attr, val in list(vars(reactor).items()):
        if isinstance(val, Reactor):
            out.append((attr, val, None))
        elif isinstance(val, Bank):
            seen_banks.add(id(val))
            out.extend((f"{attr}[{i}]", m, val) for i, m in enumerate(val.members))
        elif isinstance(val, (list, tuple)) and val and all(isinstance(v, Reactor) for v in val):
            out.extend((f"{attr}[{i}]", m, None) for i, m in enumerate(val))
    for k, b in enumerate(reactor._banks):
        if id(b) not in seen_banks:
            out.extend((f"_bank{k}[{i}]", m, b) for i, m in enumerate(b.members))
    return out


def _bank_attrs(reactor: Reactor) -> list[tuple[str, Bank]]:
    out = []
    seen = set()
    for attr, val in vars(reactor).items():
        if isinstance(val, Bank):
            out.append((attr, val))
            seen.add(id(val))
    for k, b in enumerate(reactor._banks):
        if id(b) not in seen:
            out.append((f"_bank{k}", b))
    return out


_PATH_PART = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)((?:\[\d+\])*)$")


def _resolve_path(reactor: Reactor, path: str) -> Any:
    obj: Any = reactor
    for part in path.split("."):
        m = _PATH_PART.match(part)
        if not m:
            raise AssemblyError(f"{reactor.name}: cannot parse port path {path!r}")
        try:
            obj = getattr(obj, m.group(1))
            for idx in re.findall(r"\[(\d+)\]", m.group(2)):
                obj = obj[int(idx)]
        except (AttributeError, IndexError, TypeError) as exc:
            raise AssemblyError(f"{reactor.name}: {path!r} does not name a port ({exc})") from None
    return obj


def _flatten(obj: Any, where: str) -> list[Any]:
    """Ports / multiports / bank views / lists of them -> list of channels (or actions/timers)."""
    if isinstance(obj, (Port, Action, Timer)):
        return [obj]
    if isinstance(obj, (MultiPort, BankPortView, interleaved)):
        return list(obj.channels)
    if isinstance(obj, (list, tuple)):
        out: list[Any] = []
        for o in obj:
            out.extend(_flatten(o, where))
        return out
    raise AssemblyError(f"{where}: {obj!r} is not a port, multiport, bank port or action")


# ---------------------------------------------------------------------------------------------

def assemble(main: Reactor) -> Program:
    """Validate and flatten ``main`` into a ``Program`` (raises ``AssemblyError``/``CausalityError``).

    The phases, in order (each a function below): hierarchy and names, the triggers each reactor
    owns, reactions, one writer per port, connections flattened to channels, fan-out tables, the
    precedence graph with its levels, then the global order and the tables the core reads.
    """
    if not isinstance(main, Reactor):
        raise AssemblyError(f"run() needs a Reactor instance, got {main!r}")
    if main.__dict__.get("_assembled"):
        raise AssemblyError(f"{main.name}: this reactor instance was already assembled (build a new one)")
    reactors, parent = _name_hierarchy(main)
    _enclosing_modes(reactors, parent)
    banks = [(r, attr, b) for r in reactors for attr, b in _bank_attrs(r)]
    ports, actions, timers = _collect_triggers(reactors)
    start_t = SpecialTrigger(main, "startup")
    shut_t = SpecialTrigger(main, "shutdown")

    def is_child(owner: Reactor, of: Reactor) -> bool:
        return parent.get(owner) is of

    reactions, by_reactor = _build_reactions(reactors, is_child, start_t, shut_t)
    writers = _bind_writers(reactions)
    conns = _flatten_connections(reactors, writers, is_child)
    closure = _fanout_tables(ports, conns)
    _check_mode_leaks(conns, closure)
    succ, levels_of = _precedence(reactions, by_reactor, closure)
    preorder = {r: i for i, r in enumerate(reactors)}
    sorted_rx, levels, edges = _global_order(reactions, succ, levels_of, preorder)
    readers = _trigger_tables(ports, actions, timers, (start_t, shut_t), sorted_rx, closure)

    main.__dict__["_assembled"] = True
    writer_table = tuple(tuple(sorted(writers[p.id], key=lambda x: x.index)) if p.id in writers else None
                         for p in ports)
    return Program(
        main=main, reactors=tuple(reactors), parent=parent, ports=tuple(ports), actions=tuple(actions),
        timers=tuple(timers), connections=tuple(conns), reactions=sorted_rx, levels=levels, edges=edges,
        startup=start_t, shutdown=shut_t,
        triggers=tuple(ports) + tuple(actions) + tuple(timers) + (start_t, shut_t),
        writers=writer_table, banks=tuple(banks),
        has_physical_actions=any(a.physical for a in actions), _readers=readers)


def _name_hierarchy(main: Reactor) -> tuple[list[Reactor], dict[Reactor, Reactor | None]]:
    """Phase 1: every reactor in preorder, named hierarchically, with its container."""
    reactors: list[Reactor] = []
    parent: dict[Reactor, Reactor | None] = {}
    main.__dict__["_name"] = "main"
    parent[main] = None
    stack: list[Reactor] = [main]
    while stack:
        r = stack.pop()
        reactors.append(r)
        kids = []
        for attr, child, _bank in _children(r):
            if child in parent:
                continue  # a reference to an already contained reactor, not containment
            parent[child] = r
            child.__dict__["_name"] = f"{r.name}.{attr}"
            kids.append(child)
        stack.extend(reversed(kids))
    return reactors, parent


def _enclosing_modes(reactors: list[Reactor], parent: dict[Reactor, Reactor | None]) -> None:
    """Phase 1b: each reactor's enclosing mode (``_enclosing_mode``): the container's mode it was
    created in (``in_mode``), else its container's enclosing mode; None outside every mode."""
    for r in reactors:  # preorder: containers first
        own = r.__dict__.get("_in_mode")
        par = parent[r]
        if own is not None and own.reactor is not par:
            raise AssemblyError(f"{r.name} was created in mode {own.name} of {own.reactor.name}, "
                                f"but is contained by {par.name if par is not None else 'nothing'}")
        enc = own if own is not None else (par.__dict__.get("_enclosing_mode") if par is not None else None)
        r.__dict__["_enclosing_mode"] = enc


def _collect_triggers(reactors: list[Reactor]) -> tuple[list[Port], list[Action], list[Timer]]:
    """Phase 2: the port channels, actions and timers each reactor owns (ids assigned), with their
    per-instance parameters (timer offset/period, action min_delay/min_spacing) resolved."""
    ports: list[Port] = []
    actions: list[Action] = []
    timers: list[Timer] = []
    for r in reactors:
        decls, _ = class_declarations(type(r))
        _bind_modes(r, decls)
        for decl in decls:
            obj = r.__dict__[decl.name]
            if isinstance(obj, MultiPort):
                ports.extend(obj.channels)
            elif isinstance(obj, Port):
                ports.append(obj)
            elif isinstance(obj, Action):
                decl._resolve(r, obj)
                actions.append(obj)
            elif isinstance(obj, Timer):
                decl._resolve(r, obj)
                timers.append(obj)
    for i, p in enumerate(ports):
        p.id = i
    for i, a in enumerate(actions):
        a.id = i
    return ports, actions, timers


def _mode_of(r: Reactor, decl: Mode | None, where: str) -> ModeState | None:
    """The instance's state of a class-level ``Mode`` declaration (checked to be this class's)."""
    if decl is None:
        return None
    mine = isinstance(decl, Mode) and any(d is decl for d in class_declarations(type(r))[0])
    state = r.__dict__.get(decl.name) if mine else None
    if not isinstance(state, ModeState):
        raise AssemblyError(f"{where}: {decl!r} is not a mode of {type(r).__name__}")
    return state


def _bind_modes(r: Reactor, decls: list) -> None:
    """Modes of one reactor: exactly one initial; nested in the enclosing mode (if any); timers,
    logical actions and reset states attached to their mode: their own ``mode=``, else the mode
    that contains the reactor (so everything inside a mode's contained reactors belongs to it)."""
    enc = r.__dict__.get("_enclosing_mode")
    modes = [d for d in decls if isinstance(d, Mode)]
    if modes:
        initial = [d for d in modes if d.initial]
        if len(initial) != 1:
            raise AssemblyError(f"{r.name}: a modal reactor needs exactly one Mode(initial=True), "
                                f"got {len(initial)}")
        r.__dict__["_current_mode"] = r.__dict__[initial[0].name]
        r.__dict__["_modes"] = tuple(r.__dict__[d.name] for d in modes)
        for d in modes:
            state = r.__dict__[d.name]
            state.parent = enc
            # a nested modal reactor's initial mode is active only while its enclosing mode is
            state.active = state.entered = d.initial and (enc is None or enc.active)
        if enc is not None:
            enc.nested.append(r)
    for decl in decls:
        if isinstance(decl, Mode):
            continue
        mode_decl = getattr(decl, "mode", None)
        where = f"{r.name}.{decl.name}"
        state = _mode_of(r, mode_decl, where) if mode_decl is not None else enc
        if isinstance(decl, State):
            if callable(decl.initial):
                r.__dict__[decl.name] = decl.initial_value(r)
            if decl.reset:
                if state is None:
                    raise AssemblyError(f"{where}: a reset State needs a mode (mode=, or a container's in_mode)")
                state.reset_states.append((r, decl.name, decl))
            continue
        if state is None:
            continue
        obj = r.__dict__[decl.name]
        if isinstance(obj, Timer):
            obj.mode = state
            state.timers = state.timers + (obj,)
        elif isinstance(obj, Action):
            obj.mode = state
            state.actions = state.actions + (obj,)


def _build_reactions(reactors: list[Reactor], is_child, start_t: SpecialTrigger, shut_t: SpecialTrigger
                     ) -> tuple[list[Reaction], dict[Reactor, list[Reaction]]]:
    """Phase 3: one ``Reaction`` per declared reaction, its triggers/sources/effects resolved."""
    reactions: list[Reaction] = []
    by_reactor: dict[Reactor, list[Reaction]] = {}
    for r in reactors:
        _, rdecls = class_declarations(type(r))
        if len(rdecls) > 64:
            raise AssemblyError(f"{r.name}: more than 64 reactions in one reactor are not supported")
        mine = []
        for li, rd in enumerate(rdecls):
            where = f"{r.name}.{rd.name}"
            if rd.deadline is not None and rd.handler is None:
                raise AssemblyError(f"{where}: a deadline needs a handler (@{rd.name}.deadline_handler)")
            fn = types.MethodType(rd.fn, r)
            handler = types.MethodType(rd.handler, r) if rd.handler is not None else None
            deadline = -1 if rd.deadline is None else resolve_param(r, rd.deadline, f"{rd.name}.deadline")
            rx = Reaction(fn, handler, r, rd.name, li, deadline, r._ctx)
            rx.full_name = where
            rx.mode = _mode_of(r, rd.mode, where) if rd.mode is not None else r.__dict__.get("_enclosing_mode")
            trig = []
            for spec in rd.triggers:
                if spec is reset:
                    if rx.mode is None:
                        raise AssemblyError(f"{where}: the reset trigger needs a mode-local reaction (mode=) "
                                            f"or a reactor inside a mode")
                    trig.append(rx.mode.reset_timer)
                    continue
                trig.extend(_resolve_spec(r, spec, where, "trigger", is_child, start_t, shut_t))
            srcs = []
            for spec in rd.sources:
                srcs.extend(_resolve_spec(r, spec, where, "source", is_child, start_t, shut_t))
            effs = []
            transitions = {}
            for spec in rd.effects:
                if isinstance(spec, (Mode, _Transition)):
                    target = spec.mode if isinstance(spec, _Transition) else spec
                    transitions[_mode_of(r, target, where)] = getattr(spec, "kind", "reset")
                    continue
                effs.extend(_resolve_spec(r, spec, where, "effect", is_child, start_t, shut_t))
            rx.transitions = transitions or None
            if not trig:
                raise AssemblyError(f"{where}: a reaction needs at least one trigger")
            rx.triggers = tuple(trig)
            rx.sources = tuple(srcs)
            rx.effects = tuple(effs)
            mine.append(rx)
            reactions.append(rx)
        by_reactor[r] = mine
        r._ctx.reactions = tuple(mine)
    return reactions, by_reactor


def _bind_writers(reactions: list[Reaction]) -> dict[int, list[Reaction]]:
    """Phase 4: one writing reactor per port and action; effect masks for the run-time checks."""
    writers: dict[int, list[Reaction]] = {}
    for rx in reactions:
        for e in rx.effects:
            if isinstance(e, Port):
                if e.wctx is not None and e.wctx is not rx.ctx:
                    raise AssemblyError(f"{e.full_name} has two writers: {writers[e.id][0].full_name} "
                                        f"and {rx.full_name}")
                e.wctx = rx.ctx
                e.allowed_mask |= (1 << rx.local_index)
                writers.setdefault(e.id, []).append(rx)
            elif isinstance(e, Action):
                if e.wctx is not None and e.wctx is not rx.ctx:
                    raise AssemblyError(f"{e.full_name}: only reactions of its own reactor may schedule it")
                e.wctx = rx.ctx
                e.allowed_mask |= (1 << rx.local_index)
    return writers


def _flatten_connections(reactors: list[Reactor], writers: dict[int, list[Reaction]], is_child
                         ) -> list[Connection]:
    """Phase 5: every ``connect`` flattened to channel-level connections, directions and widths checked."""
    conns: list[Connection] = []
    dst_seen: dict[int, Connection] = {}
    for r in reactors:
        for (src, dst, after, physical, broadcast, mode) in r._connections:
            where = f"{r.name}.connect({_describe(src)}, {_describe(dst)})"
            s = _flatten(src, where)
            d = _flatten(dst, where)
            _check_mode_scope(r, s, d, mode, after, physical, where)
            for p in s:
                if not isinstance(p, Port):
                    raise AssemblyError(f"{where}: {p.full_name} is not a port")
                if not ((p.owner is r and p.kind == "input") or (is_child(p.owner, r) and p.kind == "output")):
                    raise AssemblyError(f"{where}: source {p.full_name} must be an input of {r.name} "
                                        f"or an output of a reactor it contains")
            for q in d:
                if not isinstance(q, Port):
                    raise AssemblyError(f"{where}: {q.full_name} is not a port")
                if not ((q.owner is r and q.kind == "output") or (is_child(q.owner, r) and q.kind == "input")):
                    raise AssemblyError(f"{where}: destination {q.full_name} must be an output of {r.name} "
                                        f"or an input of a reactor it contains")
            if not s or not d:
                raise AssemblyError(f"{where}: empty side (width 0)")
            if len(s) != len(d):
                if not broadcast:
                    raise AssemblyError(f"{where}: width mismatch: {len(s)} source channels, {len(d)} "
                                        f"destination channels (use broadcast=True to repeat the source)")
                if len(d) % len(s) != 0:
                    raise AssemblyError(f"{where}: broadcast needs the destination width ({len(d)}) to be "
                                        f"a multiple of the source width ({len(s)})")
            for i, q in enumerate(d):
                p = s[i % len(s)]
                if q.id in dst_seen and not _exclusive(dst_seen[q.id].mode, mode):
                    raise AssemblyError(f"{q.full_name} has two writers: {dst_seen[q.id]!r} and {where}")
                if q.id in writers and not all(_exclusive(w.mode, mode) for w in writers[q.id]):
                    raise AssemblyError(f"{q.full_name} has two writers: reaction {writers[q.id][0].full_name} "
                                        f"and {where}")
                c = Connection(p, q, after, physical, r, mode)
                dst_seen[q.id] = c
                conns.append(c)
    return conns


def _exclusive(a: ModeState | None, b: ModeState | None) -> bool:
    """Two different modes of one reactor: what belongs to them never runs at one tag, so both may
    drive one port (LF's MultipleOutputFeeder tests; a zero-delay connection in a mode starts in a
    reactor of that mode, which sets nothing while the mode is inactive)."""
    return a is not None and b is not None and a is not b and a.reactor is b.reactor


def _check_mode_scope(r: Reactor, s: list, d: list, mode: ModeState | None, after: int | None,
                      physical: bool, where: str) -> None:
    """A connection reaches only reactors of its own scope (LF: a mode's instances are referenced
    inside that mode only). In a mode: a zero-delay one must reach a reactor of the mode (a direct
    pass-through between ports of ``r`` would stay active while the mode is not); a delayed one must
    leave a reactor of the mode (its events live with the mode); physical ones are not supported."""
    for p in list(s) + list(d):
        if isinstance(p, Port) and p.owner is not r and p.owner.__dict__.get("_in_mode") is not mode:
            other = p.owner.__dict__.get("_in_mode")
            raise AssemblyError(f"{where}: {p.full_name} belongs to "
                                f"{'mode ' + other.name if other is not None else 'no mode'} of {r.name}, "
                                f"the connection to {'mode ' + mode.name if mode is not None else 'no mode'}")
    if mode is None:
        return
    if physical:
        raise AssemblyError(f"{where}: physical connections inside a mode are not supported")
    if after is None:
        if all(p.owner is r for p in list(s) + list(d) if isinstance(p, Port)):
            raise AssemblyError(f"{where}: a zero-delay connection inside a mode must reach a reactor created "
                                f"in that mode (a direct pass-through between {r.name}'s own ports is not "
                                f"supported)")
    elif any(isinstance(p, Port) and p.owner is r for p in s):
        raise AssemblyError(f"{where}: a delayed connection inside a mode must start at an output of a reactor "
                            f"created in that mode")


def _inside(r: Reactor, mode: ModeState) -> bool:
    """``r`` is created in ``mode`` or in a mode nested in it (at any depth)."""
    m = r.__dict__.get("_enclosing_mode")
    while m is not None:
        if m is mode:
            return True
        m = m.parent
    return False


def _check_mode_leaks(conns: list[Connection], closure: dict[int, list[Port]]) -> None:
    """A zero-delay connection that enters a mode from outside must not lead, through zero-delay
    connections alone (a pass-through inside a contained reactor), back out of the mode: that value
    would flow while the mode is inactive (connections are not switched at run time)."""
    for c in conns:
        if c.mode is None or c.delay is not None or c.physical or _inside(c.src.owner, c.mode):
            continue
        for q in closure[c.dst.id]:
            if not _inside(q.owner, c.mode):
                raise AssemblyError(f"{c!r} (mode {c.mode.name}): its value reaches {q.full_name}, outside the "
                                    f"mode, through zero-delay connections only; a pass-through out of a mode "
                                    f"is not supported (put a reaction on the way)")


def _fanout_tables(ports: list[Port], conns: list[Connection]) -> dict[int, list[Port]]:
    """Phase 6: per port, its zero-delay fan-out (transitive) and the delayed edges leaving it."""
    direct: dict[int, list[Port]] = {}
    delayed_edges: dict[int, list[tuple[Port, int, bool]]] = {}
    for c in conns:
        if c.delay is None and not c.physical:
            direct.setdefault(c.src.id, []).append(c.dst)
        else:
            edge = (c.dst, c.delay or 0, c.physical) if c.mode is None else (c.dst, c.delay or 0, c.physical, c.mode)
            delayed_edges.setdefault(c.src.id, []).append(edge)
    closure: dict[int, list[Port]] = {}
    for p in ports:
        out: list[Port] = []
        seen = {p.id}
        st = list(reversed(direct.get(p.id, [])))
        while st:
            q = st.pop()
            if q.id in seen:
                continue
            seen.add(q.id)
            out.append(q)
            st.extend(reversed(direct.get(q.id, [])))
        closure[p.id] = out
        p.fanout = tuple(out)
        dl = []
        for q in [p] + out:
            dl.extend(delayed_edges.get(q.id, []))
        p.delayed = tuple(dl)
    return closure


def _port_readers(reactions: list[Reaction]) -> tuple[dict[int, list[Reaction]], dict[int, list[Reaction]]]:
    """Per port id: the reactions it triggers, and those that trigger on or read it."""
    triggered_by: dict[int, list[Reaction]] = {}
    read_by: dict[int, list[Reaction]] = {}
    for rx in reactions:
        for t in rx.triggers:
            if isinstance(t, Port):
                triggered_by.setdefault(t.id, []).append(rx)
        for t in rx.triggers + rx.sources:
            if isinstance(t, Port):
                read_by.setdefault(t.id, []).append(rx)
    return triggered_by, read_by


def _precedence(reactions: list[Reaction], by_reactor: dict[Reactor, list[Reaction]],
                closure: dict[int, list[Port]]) -> tuple[list[set[int]], list[int]]:
    """Phase 7: the precedence graph (declaration order + port dependencies) and its levels."""
    _, read_by = _port_readers(reactions)
    n = len(reactions)
    pos = {id(rx): i for i, rx in enumerate(reactions)}
    succ: list[set[int]] = [set() for _ in range(n)]
    for r, mine in by_reactor.items():
        own = {id(r.__dict__[d.name]) for d in class_declarations(type(r))[0] if isinstance(d, Mode)}
        if not own:
            for a, b in zip(mine, mine[1:]):
                succ[pos[id(a)]].add(pos[id(b)])
            continue
        # reactions of two different modes of one reactor never run at one tag: not ordered (LF)
        for k, b in enumerate(mine):
            for a in mine[:k]:
                if not (id(a.mode) in own and id(b.mode) in own and a.mode is not b.mode):
                    succ[pos[id(a)]].add(pos[id(b)])
    for rx in reactions:
        i = pos[id(rx)]
        for e in rx.effects:
            if isinstance(e, Port):
                for q in [e] + closure[e.id]:
                    for rd in read_by.get(q.id, ()):
                        succ[i].add(pos[id(rd)])
    return succ, _levels(reactions, succ)


def _global_order(reactions: list[Reaction], succ: list[set[int]], levels_of: list[int],
                  preorder: dict[Reactor, int]
                  ) -> tuple[tuple[Reaction, ...], tuple[tuple[Reaction, ...], ...], tuple[tuple[int, int], ...]]:
    """Phase 8a: the global order (level, inherited deadline, reactor preorder, declaration order),
    LF's single-threaded order (``priority``: inherited deadline first), levels and edges."""
    n = len(reactions)
    inherited = _inherited_deadlines(reactions, succ, levels_of)
    order = sorted(range(n), key=lambda i: (levels_of[i], inherited[i], preorder[reactions[i].reactor],
                                            reactions[i].local_index))
    for new_i, old_i in enumerate(order):
        reactions[old_i].level = levels_of[old_i]
        reactions[old_i].index = new_i
        reactions[old_i].inherited_deadline = -1 if inherited[old_i] == _NO_DEADLINE else inherited[old_i]
    by_priority = sorted(range(n), key=lambda i: (inherited[i], levels_of[i], preorder[reactions[i].reactor],
                                                  reactions[i].local_index))
    for rank, i in enumerate(by_priority):
        reactions[i].priority = rank
    sorted_rx = tuple(reactions[i] for i in order)
    edges = tuple(sorted((reactions[i].index, reactions[j].index) for i in range(n) for j in succ[i]))
    n_levels = (max(levels_of) + 1) if n else 0
    by_level: list[list[Reaction]] = [[] for _ in range(n_levels)]
    for rx in sorted_rx:
        by_level[rx.level].append(rx)
    return sorted_rx, tuple(tuple(lv) for lv in by_level), edges


def _inherited_deadlines(reactions: list[Reaction], succ: list[set[int]], levels_of: list[int]) -> list[int]:
    """Each reaction's deadline for ordering: the earliest of its own and every reaction downstream
    of it (LF's inferred deadline: work that feeds a deadline is urgent too); none: ``_NO_DEADLINE``."""
    inherited = [rx.deadline if rx.deadline >= 0 else _NO_DEADLINE for rx in reactions]
    for i in sorted(range(len(reactions)), key=lambda k: -levels_of[k]):  # successors first
        for j in succ[i]:
            if inherited[j] < inherited[i]:
                inherited[i] = inherited[j]
    return inherited


def _trigger_tables(ports: list[Port], actions: list[Action], timers: list[Timer], specials: tuple,
                    sorted_rx: tuple[Reaction, ...], closure: dict[int, list[Port]]
                    ) -> dict[int, tuple[Reaction, ...]]:
    """Phase 8b: what each trigger makes ready (``.reactions``, in global order); readers per port."""
    triggered_by, read_by = _port_readers(list(sorted_rx))
    readers: dict[int, tuple[Reaction, ...]] = {}
    for p in ports:
        trig: dict[int, Reaction] = {}
        rd: dict[int, Reaction] = {}
        for q in [p] + closure[p.id]:
            for rx in triggered_by.get(q.id, ()):
                trig[rx.index] = rx
            for rx in read_by.get(q.id, ()):
                rd[rx.index] = rx
        p.reactions = tuple(trig[i] for i in sorted(trig))
        readers[p.id] = tuple(rd[i] for i in sorted(rd))
    other_trig: dict[int, dict[int, Reaction]] = {}
    for rx in sorted_rx:
        for t in rx.triggers:
            if not isinstance(t, Port):
                other_trig.setdefault(id(t), {})[rx.index] = rx
    for obj in list(actions) + list(timers) + list(specials):
        trig = other_trig.get(id(obj), {})
        obj.reactions = tuple(trig[i] for i in sorted(trig))
    modes = {id(rx.mode): rx.mode for rx in sorted_rx if rx.mode is not None}
    for mode in modes.values():
        # what entering the mode triggers: its startup reactions (first entry) and reset reactions
        mode.startup_timer.reactions = tuple(rx for rx in specials[0].reactions if rx.mode is mode)
        trig = other_trig.get(id(mode.reset_timer), {})
        mode.reset_timer.reactions = tuple(trig[i] for i in sorted(trig))
    return readers


def _describe(obj: Any) -> str:
    if isinstance(obj, (list, tuple)):
        return "[" + ", ".join(_describe(o) for o in obj) + "]"
    fn = getattr(obj, "full_name", None)
    if isinstance(fn, str):
        return fn
    return repr(obj)


def _resolve_spec(r: Reactor, spec: Any, where: str, role: str, is_child, start_t: SpecialTrigger,
                  shut_t: SpecialTrigger) -> list[Any]:
    if spec is startup or spec is shutdown:
        if role != "trigger":
            raise AssemblyError(f"{where}: {spec} can only be a trigger")
        return [start_t if spec is startup else shut_t]
    if isinstance(spec, _Special):
        raise AssemblyError(f"{where}: unknown special trigger {spec!r}")
    if isinstance(spec, str):
        obj = _resolve_path(r, spec)
    elif hasattr(spec, "_instantiate"):  # a class-level declaration
        obj = r.__dict__.get(spec.name)
        decls, _ = class_declarations(type(r))
        if obj is None or spec not in decls:
            raise AssemblyError(f"{where}: {spec!r} is not declared by {type(r).__name__}")
    elif isinstance(spec, ReactionDecl):
        raise AssemblyError(f"{where}: a reaction cannot be a {role}")
    else:
        obj = spec
    items = _flatten(obj, where)
    for it in items:
        if isinstance(it, Timer):
            if role != "trigger" or it.owner is not r:
                raise AssemblyError(f"{where}: timer {it.full_name} can only trigger its own reactor's reactions")
        elif isinstance(it, Action):
            if it.owner is not r:
                raise AssemblyError(f"{where}: action {it.full_name} belongs to another reactor")
        elif isinstance(it, Port):
            if role == "effect":
                ok = (it.owner is r and it.kind == "output") or (is_child(it.owner, r) and it.kind == "input")
                if not ok:
                    raise AssemblyError(f"{where}: cannot write {it.full_name} (effects are own outputs "
                                        f"or inputs of contained reactors)")
            else:
                ok = (it.owner is r and it.kind == "input") or (is_child(it.owner, r) and it.kind == "output")
                if not ok:
                    raise AssemblyError(f"{where}: cannot {role} on {it.full_name} ({role}s are own inputs "
                                        f"or outputs of contained reactors)")
    return items


def _levels(reactions: list[Reaction], succ: list[set[int]]) -> list[int]:
    """Longest-path levels by Kahn's algorithm; raises CausalityError naming a cycle."""
    n = len(reactions)
    indeg = [0] * n
    for i in range(n):
        for j in succ[i]:
            indeg[j] += 1
    level = [0] * n
    ready = [i for i in range(n) if indeg[i] == 0]
    done = 0
    while ready:
        i = ready.pop()
        done += 1
        for j in succ[i]:
            if level[i] + 1 > level[j]:
                level[j] = level[i] + 1
            indeg[j] -= 1
            if indeg[j] == 0:
                ready.append(j)
    if done < n:
        remaining = {i for i in range(n) if indeg[i] > 0}
        cycle = _find_cycle(remaining, succ)
        names = [reactions[i].full_name for i in cycle]
        raise CausalityError("causality loop: " + " -> ".join(names + names[:1])
                             + " (break it with an after= delay or an action)", names)
    return level


def _find_cycle(nodes: set[int], succ: list[set[int]]) -> list[int]:
    start = min(nodes)
    # walk forward inside `nodes` until a node repeats (every remaining node has a predecessor in it)
    pred: dict[int, set[int]] = {i: set() for i in nodes}
    for i in nodes:
        for j in succ[i]:
            if j in nodes:
                pred[j].add(i)
    path: list[int] = []
    seen: dict[int, int] = {}
    cur = start
    while cur not in seen:
        seen[cur] = len(path)
        path.append(cur)
        cur = min(pred[cur])
    cyc = path[seen[cur]:]
    cyc.reverse()
    return cyc
