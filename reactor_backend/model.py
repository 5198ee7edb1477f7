"""The user-facing reactor model: declarations, ``Reactor``, multiports and banks.

A reactor class declares its interface as class attributes (``Input()``, ``Output()``, ``Timer()``,
``LogicalAction()``, ``PhysicalAction()``) and its behaviour as ``@reaction`` methods. Creating an
instance gives it its own port/action/timer objects (compiled, from ``_core``) under the same names,
so inside a reaction ``self.out`` is this instance's port. Reactors assigned to attributes in
``__init__`` (or created with ``self.bank``) are contained; ``self.connect`` records connections.
Nothing is checked here: the assembly phase (``assembly.assemble``) validates and flattens it all.

Heavy state (environments, models, buffers) belongs in a ``startup`` reaction, not in ``__init__``:
``__init__`` runs in the process that builds the program, while under the ``processes`` executor the
reactions (startup included) run in the worker process that owns the reactor, so state built at
startup is created where it is used and never copied.
"""
from __future__ import annotations

import itertools
import threading
from time import time_ns as _time_ns
from typing import Any, Callable, Iterable, Iterator, Sequence

from reactor_backend._core import Action as _Action
from reactor_backend._core import Port as _Port, port_values as _port_values
from reactor_backend._core import ModeState as _ModeState
from reactor_backend._core import ReactorCtx as _ReactorCtx
from reactor_backend._core import Timer as _Timer
from reactor_backend.timeutil import Tag

_decl_counter = itertools.count()

#: A time or width that may come from the instance: a constant, the name of an instance attribute
#: (read after ``__init__`` ran), or a callable ``f(self)``.
Param = Any


def resolve_param(reactor: "Reactor", spec: Param, what: str) -> int:
    """The integer value of ``spec`` for ``reactor`` (see ``Param``); raises ``AssemblyError``."""
    from reactor_backend.errors import AssemblyError
    try:
        if isinstance(spec, str):
            val = getattr(reactor, spec)
        elif callable(spec):
            val = spec(reactor)
        else:
            val = spec
        out = int(val)
    except (AttributeError, TypeError, ValueError) as exc:
        raise AssemblyError(f"{reactor.name}: {what}={spec!r} does not give an integer ({exc})") from None
    if out < 0:
        raise AssemblyError(f"{reactor.name}: {what} must be >= 0, got {out}")
    return out


def _const(spec: Param) -> int | None:
    """``spec`` as an int when it is a constant, else None (resolved per instance at assembly)."""
    if isinstance(spec, str) or callable(spec):
        return None
    return int(spec)


class _Decl:
    """Base of class-level declarations; knows its attribute name."""

    name: str = ""

    def __init__(self) -> None:
        self._order = next(_decl_counter)

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def _instantiate(self, reactor: "Reactor") -> Any:  # pragma: no cover - abstract
        raise NotImplementedError


class _PortDecl(_Decl):
    kind = "input"

    def __init__(self, width: int | str | Callable[["Reactor"], int] | None = None, *,
                 mutable: bool = False) -> None:
        """``width=None``: a single port; an int, the name of an instance attribute, or a callable
        ``f(self) -> int``: a multiport (the last two are resolved after ``__init__`` ran).
        ``mutable=True`` (inputs only): the reactions get their own copy of each value (LF's
        ``mutable input``); other inputs hand out values that must not be modified in place."""
        super().__init__()
        if mutable and self.kind != "input":
            raise TypeError("only an Input can be mutable")
        self.width = width
        self.mutable = bool(mutable)

    def _instantiate(self, reactor: "Reactor") -> Any:
        if self.width is None:
            return _Port(reactor, self.name, self.kind, -1, None, self.mutable)
        return MultiPort(reactor, self.name, self.kind, self.width, self.mutable)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


class Input(_PortDecl):
    """An input port (``width=n`` makes a multiport of n channels; ``mutable=True``: a private copy)."""

    kind = "input"


class Output(_PortDecl):
    """An output port (``width=n`` makes a multiport of n channels)."""

    kind = "output"


class Timer(_Decl):
    """Fires at ``offset`` after start, then every ``period`` (``period=0``: once). Either may be a
    ``Param``: an int, the name of an instance attribute, or ``f(self)`` (LF: ``timer t(offset, period)``
    with parameters)."""

    def __init__(self, offset: Param = 0, period: Param = 0, *, mode: "Mode | None" = None) -> None:
        """``mode``: a mode-local timer (runs only while that mode is active; see ``Mode``)."""
        super().__init__()
        self.offset = offset if _const(offset) is None else int(offset)
        self.period = period if _const(period) is None else int(period)
        self.mode = mode

    def _instantiate(self, reactor: "Reactor") -> Any:
        return _Timer(reactor, self.name, _const(self.offset) or 0, _const(self.period) or 0)

    def _resolve(self, reactor: "Reactor", timer: Any) -> None:
        """Assembly: per-instance values of the parameters."""
        timer.offset = resolve_param(reactor, self.offset, f"{self.name}.offset")
        timer.period = resolve_param(reactor, self.period, f"{self.name}.period")


class _ActionDecl(_Decl):
    physical = False

    def __init__(self, min_delay: Param = 0, min_spacing: Param | None = None, policy: str = "defer", *,
                 mode: "Mode | None" = None) -> None:
        super().__init__()
        if policy not in ("defer", "drop", "replace"):
            raise ValueError(f"policy must be 'defer', 'drop' or 'replace', not {policy!r}")
        self.mode = mode
        self.min_delay = min_delay if _const(min_delay) is None else int(min_delay)
        self.min_spacing = min_spacing if min_spacing is None or _const(min_spacing) is None else int(min_spacing)
        self.policy = policy

    def _instantiate(self, reactor: "Reactor") -> Any:
        spacing = -1 if self.min_spacing is None else (_const(self.min_spacing) or 0)
        return _Action(reactor, self.name, self.physical, _const(self.min_delay) or 0, spacing, self.policy)

    def _resolve(self, reactor: "Reactor", action: Any) -> None:
        """Assembly: per-instance values of the parameters."""
        action.min_delay = resolve_param(reactor, self.min_delay, f"{self.name}.min_delay")
        if self.min_spacing is not None:
            action.min_spacing = resolve_param(reactor, self.min_spacing, f"{self.name}.min_spacing")


class LogicalAction(_ActionDecl):
    """An action scheduled from reactions at ``now + min_delay + delay`` (LF's logical action).
    With ``min_spacing``, events closer than that to the previous one are deferred, dropped or
    replace it (``policy``). ``min_delay`` and ``min_spacing`` may be a ``Param``."""


class PhysicalAction(_ActionDecl):
    """An action scheduled from any thread at physical time ``now + min_delay + delay``; with
    ``min_spacing`` and ``policy`` as ``LogicalAction`` (LF: ``physical action a(min_delay,
    min_spacing, policy)``)."""

    physical = True


class _Special:
    """The ``startup`` and ``shutdown`` triggers."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


class Mode(_Decl):
    """A mode of a modal reactor (LF's ``mode``); exactly one per class is ``initial``. Reactions,
    timers and logical actions declared with ``mode=`` are active only while it is (see ``modes.py``)."""

    def __init__(self, initial: bool = False) -> None:
        super().__init__()
        self.initial = bool(initial)

    def _instantiate(self, reactor: "Reactor") -> Any:
        state = _ModeState(reactor, self.name, self.initial)
        state.startup_timer = _Timer(reactor, f"{self.name}.startup", 0, 0)
        state.reset_timer = _Timer(reactor, f"{self.name}.reset", 0, 0)
        return state

    def __repr__(self) -> str:
        return f"Mode({self.name!r})"


class State(_Decl):
    """A state variable declared at class level: ``count = State(0)``; each instance starts with its
    own (deep) copy of ``initial`` (or ``initial(self)`` for a callable, evaluated at assembly, after
    ``__init__``). ``reset=True`` (LF's ``reset state``): re-initialized whenever its mode is entered
    by a reset transition. Its mode is ``mode=`` when given, else the mode that contains the reactor
    (``with self.in_mode(...)`` in a container); history transitions leave it untouched."""

    def __init__(self, initial: Any = None, *, reset: bool = False, mode: "Mode | None" = None) -> None:
        super().__init__()
        self.initial = initial
        self.reset = bool(reset)
        self.mode = mode

    def initial_value(self, reactor: "Reactor") -> Any:
        """A fresh initial value (why deep: a list state must not share its initial object)."""
        import copy
        return self.initial(reactor) if callable(self.initial) else copy.deepcopy(self.initial)

    def _instantiate(self, reactor: "Reactor") -> Any:
        return None if callable(self.initial) else self.initial_value(reactor)

    def __repr__(self) -> str:
        return f"State({self.name!r}{', reset' if self.reset else ''})"


class _ModeScope:
    """``with self.in_mode(self.two):`` in ``__init__``: the reactors created and the connections made
    inside belong to mode ``two`` (LF: instances and connections declared inside ``mode Two {...}``)."""

    def __init__(self, reactor: "Reactor", mode: Any) -> None:
        self.reactor = reactor
        self.mode = mode

    def __enter__(self) -> "_ModeScope":
        d = self.reactor.__dict__
        if d.get("_scope_mode") is not None:
            raise TypeError("in_mode() scopes do not nest (a mode's contents belong to one mode)")
        self._before = {id(v) for v in d.values()}
        self._n_banks = len(d["_banks"])
        d["_scope_mode"] = self.mode
        return self

    def __exit__(self, *exc: Any) -> None:
        d = self.reactor.__dict__
        d["_scope_mode"] = None
        found: list[Reactor] = []
        for k, v in list(d.items()):
            if id(v) in self._before or k.startswith("_"):
                continue
            if isinstance(v, Reactor):
                found.append(v)
            elif isinstance(v, Bank):
                found.extend(v.members)
            elif isinstance(v, (list, tuple)) and v and all(isinstance(x, Reactor) for x in v):
                found.extend(v)
        for b in d["_banks"][self._n_banks:]:
            found.extend(b.members)
        for child in found:
            if child.__dict__.get("_in_mode") is None:
                child.__dict__["_in_mode"] = self.mode


class _Transition:
    """``reset(mode)`` / ``history(mode)`` in a reaction's effects: it may switch to that mode."""

    def __init__(self, mode: Mode, kind: str) -> None:
        if not isinstance(mode, Mode):
            raise TypeError(f"{kind}() takes a Mode declaration, not {mode!r}")
        self.mode = mode
        self.kind = kind

    def __repr__(self) -> str:
        return f"{self.kind}({self.mode.name})"


class _ResetSpecial(_Special):
    """``reset``: as a trigger, the mode was entered by a reset transition (LF's ``reaction(reset)``);
    ``reset(mode)`` in effects: a reset transition to ``mode``."""

    def __call__(self, mode: Mode) -> _Transition:
        return _Transition(mode, "reset")


def history(mode: Mode) -> _Transition:
    """In a reaction's effects: a transition to ``mode`` that resumes it where it was left."""
    return _Transition(mode, "history")


startup = _Special("startup")
shutdown = _Special("shutdown")
reset = _ResetSpecial("reset")


class ReactionDecl:
    """A method decorated with ``@reaction``: its triggers, sources, effects, deadline and handler."""

    def __init__(self, fn: Callable, triggers: tuple, sources: tuple, effects: tuple,
                 deadline: Param | None, mode: Mode | None = None) -> None:
        self.fn = fn
        self.mode = mode
        self.name = fn.__name__
        self.triggers = triggers
        self.sources = sources
        self.effects = effects
        self.deadline = deadline if deadline is None or _const(deadline) is None else int(deadline)
        self.handler: Callable | None = None
        self._order = next(_decl_counter)

    def deadline_handler(self, fn: Callable) -> Callable:
        """Decorator: ``fn`` runs instead of the body when the deadline is violated."""
        self.handler = fn
        return fn

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, objtype: type | None = None) -> Any:
        # Accessing a reaction on an instance gives the plain bound method (callable in tests).
        if obj is None:
            return self
        return self.fn.__get__(obj, objtype)


def reaction(*triggers: Any, sources: Iterable = (), effects: Iterable = (),
             deadline: Param | None = None, mode: Mode | None = None) -> Callable[[Callable], ReactionDecl]:
    """Declare a reaction: runs at most once per tag at which any trigger is present.

    Args:
        *triggers: ports, actions, timers, ``startup`` or ``shutdown`` whose presence runs it.
        sources: ports it reads without being triggered by them.
        effects: ports and actions it may set or schedule (any other raises at run time).
        deadline: ns after the tag's logical time; may be a ``Param`` (an instance attribute's name or
            ``f(self)``).
        mode: a mode-local reaction (see ``Mode``).
    """
    def wrap(fn: Callable) -> ReactionDecl:
        return ReactionDecl(fn, tuple(triggers), tuple(sources), tuple(effects), deadline, mode)
    return wrap


_class_cache: dict[type, tuple[list[_Decl], list[ReactionDecl]]] = {}


def class_declarations(cls: type) -> tuple[list[_Decl], list[ReactionDecl]]:
    """Declarations and reactions of a reactor class, base classes first, in declaration order."""
    got = _class_cache.get(cls)
    if got is not None:
        return got
    decls: dict[str, _Decl] = {}
    reactions: dict[str, ReactionDecl] = {}
    for klass in reversed(cls.__mro__):
        for name, val in vars(klass).items():
            if isinstance(val, _Decl):
                decls[name] = val
            elif isinstance(val, ReactionDecl):
                reactions.pop(name, None)
                reactions[name] = val
    got = (list(decls.values()), list(reactions.values()))
    _class_cache[cls] = got
    return got


class MultiPort:
    """A multiport: indexable, iterable channels with ``len()``."""

    def __init__(self, owner: "Reactor", name: str, kind: str, width: Any, mutable: bool = False) -> None:
        self.owner = owner
        self.name = name
        self.kind = kind
        self.mutable = mutable
        self._width_spec = width
        self._channels: list[_Port] | None = None
        if isinstance(width, int):
            self._make(width)

    def _make(self, width: int) -> None:
        if width < 0:
            raise ValueError(f"negative width for {self.name}")
        self._channels = [_Port(self.owner, f"{self.name}[{i}]", self.kind, i, self, self.mutable) for i in range(width)]

    @property
    def channels(self) -> list[_Port]:
        if self._channels is None:
            spec = self._width_spec
            width = getattr(self.owner, spec) if isinstance(spec, str) else spec(self.owner)
            self._make(int(width))
        return self._channels  # type: ignore[return-value]

    @property
    def width(self) -> int:
        return len(self.channels)

    def __len__(self) -> int:
        return len(self.channels)

    def __getitem__(self, i: int) -> _Port:
        return self.channels[i]

    def __iter__(self) -> Iterator[_Port]:
        return iter(self.channels)

    @property
    def values(self) -> list[Any]:
        """The values of all channels (``None`` where never set), in channel order."""
        channels = self._channels  # built: no `channels` call (a server's gather reads this every round)
        return _port_values(channels if channels is not None else self.channels)

    def present_indices(self) -> list[int]:
        return [i for i, p in enumerate(self.channels) if p.is_present]

    @property
    def full_name(self) -> str:
        return f"{getattr(self.owner, 'name', '?')}.{self.name}"

    def __repr__(self) -> str:
        return f"<MultiPort {self.full_name}>"


class BankPortView:
    """``bank.port``: the port across bank members, in bank order (multiport-like)."""

    def __init__(self, bank: "Bank", name: str) -> None:
        self.bank = bank
        self.name = name

    @property
    def channels(self) -> list[_Port]:
        out: list[_Port] = []
        for member in self.bank.members:
            p = getattr(member, self.name)
            if isinstance(p, MultiPort):
                out.extend(p.channels)
            else:
                out.append(p)
        return out

    def __len__(self) -> int:
        return len(self.channels)

    def __getitem__(self, i: int) -> _Port:
        return self.channels[i]

    def __iter__(self) -> Iterator[_Port]:
        return iter(self.channels)

    def __repr__(self) -> str:
        return f"<BankPortView {self.name} of {len(self.bank)} members>"


class interleaved:
    """``interleaved(bank.port)``: the channels of a bank of multiports in channel-major order
    (member 0 channel 0, member 1 channel 0, ..., member 0 channel 1, ...), LF's
    ``interleaved(b.out)``; usable on either side of ``connect``."""

    def __init__(self, view: "BankPortView") -> None:
        if not isinstance(view, BankPortView):
            raise TypeError(f"interleaved() takes a bank's port (bank.port), not {view!r}")
        self.view = view

    @property
    def channels(self) -> list[_Port]:
        per_member = []
        for member in self.view.bank.members:
            p = getattr(member, self.view.name)
            per_member.append(p.channels if isinstance(p, MultiPort) else [p])
        width = max((len(c) for c in per_member), default=0)
        return [chans[k] for k in range(width) for chans in per_member if k < len(chans)]

    def __len__(self) -> int:
        return len(self.channels)

    @property
    def full_name(self) -> str:
        return f"interleaved({self.view.name})"


class Bank:
    """A bank of reactors of one class (indexable, iterable, ``len()``); ``bank.port`` is a view."""

    def __init__(self, members: list["Reactor"]) -> None:
        self.members = members

    def __len__(self) -> int:
        return len(self.members)

    def __getitem__(self, i: int) -> "Reactor":
        return self.members[i]

    def __iter__(self) -> Iterator["Reactor"]:
        return iter(self.members)

    def __getattr__(self, name: str) -> BankPortView:
        if name.startswith("_") or name == "members":
            raise AttributeError(name)
        if not self.members:
            return BankPortView(self, name)
        if not hasattr(self.members[0], name):
            raise AttributeError(f"bank members have no port {name!r}")
        return BankPortView(self, name)

    def place(self, workers: int | Sequence[int]) -> "Bank":
        """Placement hint for the processes executor: one worker for all, or one per member."""
        if isinstance(workers, int):
            for m in self.members:
                m.place(workers)
        else:
            if len(workers) != len(self.members):
                raise ValueError("one worker per bank member expected")
            for m, w in zip(self.members, workers):
                m.place(int(w))
        return self


_construct = threading.local()


class per_member:
    """A bank argument that differs per member: ``per_member(lambda i: table[i])`` or
    ``per_member(table)`` gives member ``i`` its own value (LF: ``new[4] A(v = table[bank_index])``)."""

    def __init__(self, values: Callable[[int], Any] | Sequence[Any]) -> None:
        self.values = values

    def at(self, i: int) -> Any:
        return self.values(i) if callable(self.values) else self.values[i]


class Reactor:
    """Base class of reactors. Subclasses declare ports, timers, actions and ``@reaction`` methods.

    Runtime properties (valid inside reactions): ``tag``, ``logical_time``, ``elapsed``,
    ``microstep``, ``physical_time``; ``request_stop()``; ``bank_index`` (also inside ``__init__``);
    ``name`` (hierarchical, e.g. ``main.workers[3]``; set by the assembly phase).
    """

    def __new__(cls, *args: Any, **kwargs: Any) -> "Reactor":
        self = object.__new__(cls)
        d = self.__dict__
        d["_ctx"] = _ReactorCtx(self)
        d["bank_index"] = getattr(_construct, "bank_index", None)
        d["_bank_member"] = getattr(_construct, "bank_index", None) is not None
        _construct.bank_index = None  # children built inside __init__ are not bank members
        d["_connections"] = []
        d["_banks"] = []
        d["_place_hint"] = None  # the worker `place` asked for (`reactor_backend.placement` reads it)
        d["_name"] = None
        d["_core"] = None
        d["_current_mode"] = None
        d["_mode_request"] = None
        d["_scope_mode"] = None          # the mode of an open ``in_mode`` scope (construction only)
        d["_in_mode"] = None             # the container's mode this reactor was created in, or None
        decls, _ = class_declarations(cls)
        for decl in decls:
            d[decl.name] = decl._instantiate(self)
        return self

    def __init__(self) -> None:  # subclasses call super().__init__(); everything is set in __new__
        pass

    # ---- composition ------------------------------------------------------------------------
    def bank(self, cls: type["Reactor"], n: int, **params: Any) -> Bank:
        """Create ``n`` reactors of ``cls`` (each sees ``self.bank_index`` in its ``__init__``); a
        ``per_member(...)`` argument gives each member its own value."""
        members = []
        for i in range(int(n)):
            kwargs = {k: (v.at(i) if isinstance(v, per_member) else v) for k, v in params.items()}
            _construct.bank_index = i
            try:
                members.append(cls(**kwargs))
            finally:
                _construct.bank_index = None
        b = Bank(members)
        self._banks.append(b)
        return b

    def connect(self, src: Any, dst: Any, *, after: int | None = None, physical: bool = False,
                broadcast: bool = False) -> None:
        """Connect ports / multiports / bank views / lists of them (checked at assembly)."""
        self._connections.append((src, dst, None if after is None else int(after), bool(physical),
                                  bool(broadcast), self.__dict__.get("_scope_mode")))

    def in_mode(self, mode: Any) -> _ModeScope:
        """In ``__init__``: ``with self.in_mode(self.two): ...`` makes the reactors created and the
        connections made in the block part of mode ``two`` (active only while it is; reset with it)."""
        target = self.__dict__.get(mode.name) if isinstance(mode, Mode) else mode
        if not isinstance(target, _ModeState) or target.reactor is not self:
            raise TypeError(f"in_mode() takes a mode of {type(self).__name__}, not {mode!r}")
        return _ModeScope(self, target)

    def place(self, worker: int) -> "Reactor":
        """Placement hint: run this reactor (and its unplaced children) on ``worker`` (processes)."""
        self._place_hint = int(worker)
        return self

    # ---- runtime ----------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self._name or type(self).__name__

    @property
    def tag(self) -> Tag:
        c = self._core
        return Tag(c.time, c.mstep)

    @property
    def logical_time(self) -> int:
        return self._core.time

    @property
    def elapsed(self) -> int:
        c = self._core
        return c.time - c.start_time

    @property
    def microstep(self) -> int:
        return self._core.mstep

    @property
    def physical_time(self) -> int:
        return _time_ns()

    @property
    def start_time(self) -> int:
        return self._core.start_time

    @property
    def current_mode(self) -> Any:
        """The active mode (a ``ModeState`` with ``.name``), or None for a reactor without modes."""
        return self._current_mode

    def set_mode(self, mode: Any) -> None:
        """Inside a reaction that declares ``reset(mode)`` or ``history(mode)``: switch to ``mode`` at
        the end of this tag (LF's ``lf_set_mode``)."""
        from reactor_backend.errors import ReactionError
        ctx = self._ctx
        if self._core is None or ctx.current < 0:
            raise ReactionError(f"{self.name}: set_mode() outside a reaction")
        target = self.__dict__.get(mode.name) if isinstance(mode, Mode) else mode
        rx = ctx.reactions[ctx.current]
        kind = (rx.transitions or {}).get(target)
        if kind is None:
            raise ReactionError(f"{rx.full_name}: set_mode({getattr(target, 'name', mode)!r}) needs "
                                f"reset(...) or history(...) of that mode in effects=")
        self.__dict__["_mode_request"] = (target, kind)
        self._core.mode_changes.append(self)

    def check_deadline(self, invoke_handler: bool = False) -> bool:
        """Inside a reaction: True when its deadline is already violated now (physical time past
        the tag's logical time + deadline); with ``invoke_handler``, the deadline handler runs too
        (once per call) and the body continues (LF's ``lf_check_deadline``). False without a deadline."""
        ctx = self._ctx
        core = self._core
        if core is None or ctx.current < 0:
            from reactor_backend.errors import ReactionError
            raise ReactionError(f"{self.name}: check_deadline() outside a reaction")
        rx = ctx.reactions[ctx.current]
        if rx.deadline < 0 or _time_ns() <= core.time + rx.deadline:
            return False
        if invoke_handler and rx.handler is not None:
            rx.handler()
        return True

    def request_stop(self) -> None:
        """Stop at the microstep after the current tag (from a reaction) or at the next tag (other threads)."""
        c = self._core
        if c is None:
            return
        if self._ctx.current >= 0:
            c.request_stop()
        else:
            c.request_stop_external()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"
