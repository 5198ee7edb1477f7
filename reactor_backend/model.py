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
from reactor_backend._core import Port as _Port
from reactor_backend._core import ReactorCtx as _ReactorCtx
from reactor_backend._core import Timer as _Timer
from reactor_backend.timeutil import Tag

_decl_counter = itertools.count()


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

    def __init__(self, width: int | str | Callable[["Reactor"], int] | None = None) -> None:
        """``width=None``: a single port; an int, the name of an instance attribute, or a callable
        ``f(self) -> int``: a multiport (the last two are resolved after ``__init__`` ran)."""
        super().__init__()
        self.width = width

    def _instantiate(self, reactor: "Reactor") -> Any:
        if self.width is None:
            return _Port(reactor, self.name, self.kind)
        return MultiPort(reactor, self.name, self.kind, self.width)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


class Input(_PortDecl):
    """An input port (``width=n`` makes a multiport of n channels)."""

    kind = "input"


class Output(_PortDecl):
    """An output port (``width=n`` makes a multiport of n channels)."""

    kind = "output"


class Timer(_Decl):
    """Fires at ``offset`` after start, then every ``period`` (``period=0``: once)."""

    def __init__(self, offset: int = 0, period: int = 0) -> None:
        super().__init__()
        self.offset = int(offset)
        self.period = int(period)

    def _instantiate(self, reactor: "Reactor") -> Any:
        return _Timer(reactor, self.name, self.offset, self.period)


class LogicalAction(_Decl):
    """An action scheduled from reactions at ``now + min_delay + delay`` (LF's logical action)."""

    def __init__(self, min_delay: int = 0, min_spacing: int | None = None, policy: str = "defer") -> None:
        super().__init__()
        if policy not in ("defer", "drop", "replace"):
            raise ValueError(f"policy must be 'defer', 'drop' or 'replace', not {policy!r}")
        self.min_delay = int(min_delay)
        self.min_spacing = None if min_spacing is None else int(min_spacing)
        self.policy = policy

    def _instantiate(self, reactor: "Reactor") -> Any:
        return _Action(reactor, self.name, False, self.min_delay,
                       -1 if self.min_spacing is None else self.min_spacing, self.policy)


class PhysicalAction(_Decl):
    """An action scheduled from any thread at physical time ``now + min_delay + delay``."""

    def __init__(self, min_delay: int = 0) -> None:
        super().__init__()
        self.min_delay = int(min_delay)

    def _instantiate(self, reactor: "Reactor") -> Any:
        return _Action(reactor, self.name, True, self.min_delay, -1, "defer")


class _Special:
    """The ``startup`` and ``shutdown`` triggers."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


startup = _Special("startup")
shutdown = _Special("shutdown")


class ReactionDecl:
    """A method decorated with ``@reaction``: its triggers, sources, effects, deadline and handler."""

    def __init__(self, fn: Callable, triggers: tuple, sources: tuple, effects: tuple,
                 deadline: int | None) -> None:
        self.fn = fn
        self.name = fn.__name__
        self.triggers = triggers
        self.sources = sources
        self.effects = effects
        self.deadline = None if deadline is None else int(deadline)
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
             deadline: int | None = None) -> Callable[[Callable], ReactionDecl]:
    """Declare a reaction: runs at most once per tag at which any trigger is present."""
    def wrap(fn: Callable) -> ReactionDecl:
        return ReactionDecl(fn, tuple(triggers), tuple(sources), tuple(effects), deadline)
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

    def __init__(self, owner: "Reactor", name: str, kind: str, width: Any) -> None:
        self.owner = owner
        self.name = name
        self.kind = kind
        self._width_spec = width
        self._channels: list[_Port] | None = None
        if isinstance(width, int):
            self._make(width)

    def _make(self, width: int) -> None:
        if width < 0:
            raise ValueError(f"negative width for {self.name}")
        self._channels = [_Port(self.owner, f"{self.name}[{i}]", self.kind, i, self) for i in range(width)]

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
        """The values of all channels (``None`` where never set)."""
        return [p.value for p in self.channels]

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


class Bank:
    """A bank of reactors of one class (indexable, iterable, ``len()``); ``bank.port`` is a view."""

    def __init__(self, members: list["Reactor"]) -> None:
        self.members = members
        self.placement: Any = None

    def __len__(self) -> int:
        return len(self.members)

    def __getitem__(self, i: int) -> "Reactor":
        return self.members[i]

    def __iter__(self) -> Iterator["Reactor"]:
        return iter(self.members)

    def __getattr__(self, name: str) -> BankPortView:
        if name.startswith("_") or name in ("members", "placement"):
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
        d["_placement"] = None
        d["_name"] = None
        d["_core"] = None
        decls, _ = class_declarations(cls)
        for decl in decls:
            d[decl.name] = decl._instantiate(self)
        return self

    def __init__(self) -> None:  # subclasses call super().__init__(); everything is set in __new__
        pass

    # ---- composition ------------------------------------------------------------------------
    def bank(self, cls: type["Reactor"], n: int, **params: Any) -> Bank:
        """Create ``n`` reactors of ``cls`` (each sees ``self.bank_index`` in its ``__init__``)."""
        members = []
        for i in range(int(n)):
            _construct.bank_index = i
            try:
                members.append(cls(**params))
            finally:
                _construct.bank_index = None
        b = Bank(members)
        self._banks.append(b)
        return b

    def connect(self, src: Any, dst: Any, *, after: int | None = None, physical: bool = False,
                broadcast: bool = False) -> None:
        """Connect ports / multiports / bank views / lists of them (checked at assembly)."""
        self._connections.append((src, dst, None if after is None else int(after), bool(physical),
                                  bool(broadcast)))

    def place(self, worker: int) -> "Reactor":
        """Placement hint: run this reactor (and its unplaced children) on ``worker`` (processes)."""
        self._placement = int(worker)
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
