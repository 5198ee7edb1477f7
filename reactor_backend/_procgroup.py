"""A group of forked worker processes meeting at one shared-memory barrier, with a watchdog.

Why a separate module: the lifecycle (fork, error propagation, liveness, teardown, cleanup of
``/dev/shm``) is the part of the multi-process executor that must never leak a process or a
segment, whatever the reactions do; it is tested on its own with plain functions.

Rank 0 is the calling process; ranks 1..n-1 are children forked from it (so they inherit the
assembled program; heavy state is built afterwards, in each process's startup reactions).

* A child that raises records its error (type, message, remote traceback, and the ``reactor``,
  ``reaction`` and ``tag`` attributes when the exception has them) in its own area of the
  control block, then sets the shared stop word; every waiting process raises ``Aborted``; the
  parent re-raises the error as :class:`WorkerError`.
* Watchdog: while waiting, the parent reaps children every ``check_ns`` (a child killed by a
  signal is reported as :class:`WorkerDied`); children check that their parent is alive and
  also get ``SIGKILL`` from the kernel when it dies (``PR_SET_PDEATHSIG``).
* Ctrl-C: children ignore SIGINT; the parent's wait sees the signal within one futex slice
  (10 ms) and raises ``KeyboardInterrupt``. Teardown in every case: stop word, wake, wait up to
  ``grace`` seconds, then ``SIGKILL`` and reap; unlink every ``/dev/shm/rb-<pid>-<run>-*``.
"""
from __future__ import annotations

import itertools
import os
import pickle
import signal
import struct
import sys
import time
import traceback
from typing import Any, Callable

from . import _sync
from .segments import run_prefix
from .transport import create_segment, unlink_prefix

STOP_PARENT = 1          # the parent stops everyone (interrupt, parent error, dead worker)
STOP_ERROR_BASE = 16     # STOP_ERROR_BASE + rank: that rank raised
ERROR_AREA = 64 * 1024   # bytes per rank for its error record
_LEN = struct.Struct("<q")
_run_ids = itertools.count()


class WorkerError(RuntimeError):
    """An exception raised in a worker process, carried back with its remote traceback."""

    def __init__(self, rank: int, info: dict[str, Any]):
        self.rank = rank
        self.info = info
        self.remote_traceback: str = info.get("traceback", "")
        self.exc_type: str = info.get("type", "Exception")
        self.reactor = info.get("reactor")
        self.reaction = info.get("reaction")
        self.tag = info.get("tag")
        self.original: BaseException | None = info.get("exception")
        super().__init__(f"worker {rank} raised {self.exc_type}: {info.get('message', '')}\n"
                         f"--- remote traceback ---\n{self.remote_traceback}")


class WorkerDied(RuntimeError):
    """A worker process ended without reporting (killed by a signal or exited)."""

    def __init__(self, rank: int, pid: int, status: int):
        self.rank, self.pid, self.status = rank, pid, status
        if os.WIFSIGNALED(status):
            how = f"killed by signal {os.WTERMSIG(status)} ({signal.Signals(os.WTERMSIG(status)).name})"
        else:
            how = f"exited with status {os.waitstatus_to_exitcode(status)}"
        super().__init__(f"worker {rank} (pid {pid}) {how}")


def _error_record(exc: BaseException) -> bytes:
    info: dict[str, Any] = {
        "type": type(exc).__qualname__,
        "message": str(exc),
        "traceback": "".join(traceback.format_exception(exc)),
    }
    for attr in ("reactor", "reaction", "tag"):
        if getattr(exc, attr, None) is not None:
            info[attr] = getattr(exc, attr)
    cause = exc.__cause__ if exc.__cause__ is not None else exc
    try:
        info["exception_blob"] = pickle.dumps(cause, protocol=5)
    except Exception:
        pass
    try:
        blob = pickle.dumps(info, protocol=5)
    except Exception:
        info = {k: (v if isinstance(v, (str, int, float, bytes)) else repr(v)) for k, v in info.items()}
        blob = pickle.dumps(info, protocol=5)
    if len(blob) > ERROR_AREA - _LEN.size:
        info = {"type": info["type"], "message": str(info.get("message"))[:2000],
                "traceback": str(info["traceback"])[-(ERROR_AREA // 2):]}
        blob = pickle.dumps(info, protocol=5)
    return blob


class ProcessGroup:
    """``n`` processes (this one is rank 0) sharing a control block and a barrier.

    Use: ``g = ProcessGroup(n)``, then ``g.run(body)`` where ``body(rank, barrier)`` runs in
    every process (rank 0 here, after the fork). Returns rank 0's result.
    """

    def __init__(self, n: int, *, grace: float = 1.0, run_pid: int | None = None, waiting: Any = None) -> None:
        if n < 1:
            raise ValueError("need at least one process")
        self.n = n
        self.grace = grace
        self.waiting = waiting  # `reactor_backend.waiting.Waiting` of every barrier (None: its defaults)
        self.parent_pid = os.getpid()
        self.prefix = f"{run_prefix(run_pid or self.parent_pid)}{next(_run_ids)}-"
        unlink_prefix(self.prefix)  # anything named so was left by a dead process that had our pid
        self.error_offset = _sync.control_size(n)
        self.size = self.error_offset + n * ERROR_AREA
        self.ctl = None
        self.pids: dict[int, int] = {}     # rank -> pid, while not reaped
        self.statuses: dict[int, int] = {}  # rank -> wait status, once reaped
        self.barrier: _sync.Barrier | None = None
        self._finished = False

    # ---- the parent's view ---------------------------------------------------------------
    def _check_children(self) -> None:
        for rank, pid in list(self.pids.items()):
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                del self.pids[rank]
                self.statuses[rank] = status
                if self.barrier is not None and self.barrier.stop_code:
                    continue  # it reported (or was told to stop): the stop word says why
                raise WorkerDied(rank, pid, status)

    def _remote_error(self, code: int) -> WorkerError | None:
        """The error recorded by rank ``code - STOP_ERROR_BASE``, if that rank recorded one."""
        if not STOP_ERROR_BASE <= code < STOP_ERROR_BASE + self.n:
            return None
        rank = code - STOP_ERROR_BASE
        off = self.error_offset + rank * ERROR_AREA
        (length,) = _LEN.unpack_from(self.ctl, off)
        if length <= 0:
            return None
        try:
            info = pickle.loads(self.ctl[off + _LEN.size: off + _LEN.size + length])
        except Exception as exc:
            info = {"type": "Exception", "message": f"unreadable error record: {exc!r}", "traceback": ""}
        if "exception_blob" in info:
            try:  # the original exception object, when its class unpickles here
                info["exception"] = pickle.loads(info.pop("exception_blob"))
            except Exception:
                pass
        return WorkerError(rank, info)

    def start(self, body: Callable[[int, _sync.Barrier], Any]) -> _sync.Barrier:
        """Create the control block and fork ranks 1..n-1, each running ``body(rank, barrier)``.

        Returns rank 0's barrier. The caller runs rank 0's part, then calls :meth:`finish`.
        """
        self.ctl = create_segment(self.prefix + "ctl", self.size)
        try:
            sys.stdout.flush()
            sys.stderr.flush()
            for rank in range(1, self.n):
                pid = os.fork()
                if pid == 0:  # pragma: no cover - runs in the child
                    self._child(rank, body)
                self.pids[rank] = pid
            self.barrier = _sync.Barrier(self.ctl, self.n, 0, check=self._check_children, waiting=self.waiting)
            return self.barrier
        except BaseException:
            self._teardown()
            raise

    def finish(self, error: BaseException | None = None, before_teardown: Callable[[], None] | None = None,
               error_key: Callable[[dict[str, Any]], Any] | None = None) -> None:
        """End the group: after success, meet the children at the final barrier (then call
        ``before_teardown``, e.g. to read their results); in every case stop, reap and unlink.

        Raises :class:`WorkerError` when ``error`` (or the final barrier) is due to a remote error.
        Several processes may fail before they see the stop word (reactions of one level run in
        parallel): with ``error_key`` (a sort key over error records: ``reactor``, ``reaction``,
        ``tag``...) the smallest of all records, the caller's own ``error`` included, is reported;
        without it, the first to stop the group.
        """
        assert self.barrier is not None
        if error is None:
            try:
                self.barrier.arrive()  # everybody finished cleanly
            except _sync.Aborted as exc:
                error = exc
            except BaseException:
                self._teardown()
                raise
            else:
                try:
                    self._finished = True
                    if before_teardown is not None:
                        before_teardown()
                    return
                finally:
                    self._teardown()
        code = self.barrier.stop_code
        self._teardown()  # every child has stopped or been killed: all error records are final
        if isinstance(error, (KeyboardInterrupt, WorkerDied)):
            return
        first = self._remote_error(code)
        if error_key is not None:
            candidates = [e for e in (self._remote_error(STOP_ERROR_BASE + r) for r in range(1, self.n)) if e]
            if not isinstance(error, _sync.Aborted):
                own = {a: getattr(error, a, None) for a in ("reactor", "reaction", "tag")}
                if not candidates or error_key(own) <= min(error_key(e.info) for e in candidates):
                    return  # the caller's own error is the first: it propagates unchanged
            if candidates:
                first = min(candidates, key=lambda e: error_key(e.info))
        if first is not None:
            raise first from (None if isinstance(error, _sync.Aborted) else error)

    def run(self, body: Callable[[int, _sync.Barrier], Any]) -> Any:
        """Fork the workers, run ``body`` everywhere (rank 0 here), tear down; re-raise remote errors."""
        barrier = self.start(body)
        try:
            result = body(0, barrier)
        except BaseException as exc:
            self.finish(exc)
            raise
        self.finish(None)
        return result

    def _child(self, rank: int, body: Callable[[int, _sync.Barrier], Any]) -> None:  # pragma: no cover
        code = 0
        try:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            _sync.set_parent_death_signal(signal.SIGKILL)
            if os.getppid() != self.parent_pid:
                os._exit(3)
            parent = self.parent_pid

            def parent_alive() -> None:
                if os.getppid() != parent:
                    os._exit(3)

            barrier = _sync.Barrier(self.ctl, self.n, rank, check=parent_alive, waiting=self.waiting)
            try:
                body(rank, barrier)
                barrier.arrive()
            except _sync.Aborted:
                code = 0
            except BaseException as exc:
                code = 1
                blob = _error_record(exc)
                off = self.error_offset + rank * ERROR_AREA
                _LEN.pack_into(self.ctl, off, len(blob))
                self.ctl[off + _LEN.size: off + _LEN.size + len(blob)] = blob
                barrier.request_stop(STOP_ERROR_BASE + rank)
        except BaseException:
            code = 2
        finally:
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(code)

    def _teardown(self) -> None:
        """Stop, wait up to ``grace`` seconds, then SIGKILL and reap; always unlink segments."""
        try:
            try:
                if self.pids and not self._finished and self.ctl is not None:
                    b = self.barrier or _sync.Barrier(self.ctl, self.n, 0, waiting=self.waiting)
                    b.request_stop(STOP_PARENT)
                deadline = time.monotonic() + self.grace
                while self.pids and time.monotonic() < deadline:
                    for rank, pid in list(self.pids.items()):
                        done, status = os.waitpid(pid, os.WNOHANG)
                        if done:
                            del self.pids[rank]
                            self.statuses[rank] = status
                    if self.pids:
                        time.sleep(0.002)
            finally:  # also after a second Ctrl-C during the grace period
                for rank, pid in list(self.pids.items()):
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                    _, status = os.waitpid(pid, 0)
                    self.statuses[rank] = status
                    del self.pids[rank]
        finally:
            self.barrier = None
            unlink_prefix(self.prefix)
