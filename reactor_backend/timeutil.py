"""Time in the reactor runtime: integer nanoseconds, and tags ``(time, microstep)``."""
from __future__ import annotations

from typing import NamedTuple

#: Largest representable time: "never" / "no timeout".
FOREVER: int = (1 << 63) - 1


def nsec(n: float) -> int:
    """``n`` nanoseconds as integer nanoseconds."""
    return int(n)


def usec(n: float) -> int:
    """``n`` microseconds as integer nanoseconds."""
    return int(round(n * 1_000))


def msec(n: float) -> int:
    """``n`` milliseconds as integer nanoseconds."""
    return int(round(n * 1_000_000))


def sec(n: float) -> int:
    """``n`` seconds as integer nanoseconds."""
    return int(round(n * 1_000_000_000))


class Tag(NamedTuple):
    """A logical tag: ordered lexicographically by (time, microstep), hashable, comparable (LF's tag)."""

    time: int
    microstep: int

    def __repr__(self) -> str:
        return f"Tag(time={self.time}, microstep={self.microstep})"
