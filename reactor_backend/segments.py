"""The names of the runtime's shared-memory segments, and the clean-up after a run that was killed.

Every ``/dev/shm`` segment of a run is named ``rb-<pid>-<run>-...``, ``pid`` being the process that called
``run``. A run removes its own segments when it ends, even on errors; only a SIGKILL of the calling
process leaves them behind. Whoever killed it (a harness, a job scheduler) calls `cleanup_after`.
"""
from __future__ import annotations


def run_prefix(pid: int) -> str:
    """The name prefix of every segment of every run called from process ``pid``."""
    return f"rb-{int(pid)}-"


def cleanup_after(pid: int) -> list[str]:
    """Remove every segment that runs called from process ``pid`` left behind; returns their names.

    Call it only once ``pid`` is dead (its segments are in use while it runs)."""
    from reactor_backend.transport import unlink_prefix

    return unlink_prefix(run_prefix(pid))
