"""Read-only lists, dicts and sets: what a reaction receives through an ordinary input.

Why: readers of a port share one value inside a process but each get their own copy in another
process, so a reaction that modified a received list in place would change what other readers see
in one placement and not in another. The core (``_core.Port._set``) hands readers these read-only
forms instead (numpy arrays become read-only views), so such a modification raises the same
``TypeError`` under every executor and placement (LF: an input that is not ``mutable`` is ``const``).

They are subclasses of ``list``, ``dict`` and ``set``: ``isinstance``, equality, iteration, ``repr``
and non-mutating methods are the base type's. ``copy()``, slicing, ``+`` and ``copy.copy`` /
``copy.deepcopy`` give a plain, writable object (a deep copy also copies arrays writably), which is
what an ``Input(mutable=True)`` receives. Pickling gives the plain type too: a value crossing to
another process is made read-only again where it is delivered.
"""
from __future__ import annotations

import copy
from typing import Any, NoReturn

_HINT = "copy it (list(v), dict(v), set(v), np.array(v)) or declare the input Input(mutable=True)"


def _refuse(obj: Any, *_args: Any, **_kwargs: Any) -> NoReturn:
    raise TypeError(f"a value received through an input is read-only (other readers share it): {_HINT}")


class ReadOnlyList(list):
    """A list that refuses every in-place change (``TypeError``)."""

    __slots__ = ()

    def __reduce__(self) -> tuple:
        return list, (list(self),)

    def __copy__(self) -> list:
        return list(self)

    def __deepcopy__(self, memo: dict) -> list:
        out: list = []
        memo[id(self)] = out
        out.extend(copy.deepcopy(x, memo) for x in self)
        return out


class ReadOnlyDict(dict):
    """A dict that refuses every in-place change (``TypeError``)."""

    __slots__ = ()

    def __reduce__(self) -> tuple:
        return dict, (dict(self),)

    def __copy__(self) -> dict:
        return dict(self)

    def __deepcopy__(self, memo: dict) -> dict:
        out: dict = {}
        memo[id(self)] = out
        for k, v in dict.items(self):
            out[copy.deepcopy(k, memo)] = copy.deepcopy(v, memo)
        return out


class ReadOnlySet(set):
    """A set that refuses every in-place change (``TypeError``)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return repr(set(self))

    def __reduce__(self) -> tuple:
        return set, (set(self),)

    def __copy__(self) -> set:
        return set(self)

    def __deepcopy__(self, memo: dict) -> set:
        out = {copy.deepcopy(x, memo) for x in self}
        memo[id(self)] = out
        return out


#: the in-place methods each read-only type refuses
_MUTATORS = {
    ReadOnlyList: ("__setitem__", "__delitem__", "__iadd__", "__imul__", "append", "extend", "insert", "pop",
                   "remove", "clear", "sort", "reverse"),
    ReadOnlyDict: ("__setitem__", "__delitem__", "__ior__", "clear", "pop", "popitem", "setdefault", "update"),
    ReadOnlySet: ("add", "discard", "remove", "pop", "clear", "update", "intersection_update", "difference_update",
                  "symmetric_difference_update", "__ior__", "__iand__", "__isub__", "__ixor__"),
}
for _cls, _names in _MUTATORS.items():
    for _name in _names:
        setattr(_cls, _name, _refuse)
del _cls, _names, _name
