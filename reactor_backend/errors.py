"""Errors of the reactor runtime: assembly-time (malformed program) and run-time (inside reactions)."""
from __future__ import annotations


class AssemblyError(Exception):
    """The program is malformed; raised by the assembly phase before anything runs."""


class CausalityError(AssemblyError):
    """The precedence graph has a cycle (a causality loop); the message names its reactions."""

    def __init__(self, message: str, cycle: list[str] | None = None) -> None:
        super().__init__(message)
        self.cycle = cycle or []


class ReactionError(Exception):
    """A reaction failed (or broke a rule only visible at run time); chains the original exception.

    Attributes ``reactor`` (hierarchical name), ``reaction`` (method name) and ``tag`` (absolute
    ``Tag``) say where; for errors from other processes ``remote_traceback`` may hold the text.
    """

    reactor: str | None = None
    reaction: str | None = None
    tag: object = None
    remote_traceback: str | None = None
