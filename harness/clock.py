"""The round clock: turns a stream of ``tick()`` calls into warm-up, repetitions and per-round latencies.

A backend calls ``tick()`` once after each completed round, wherever the server runs. The clock keeps the
timed loop free of I/O: at a repetition boundary it hands the repetition to ``on_repetition`` (which may
compute a checksum or send a message) and restarts the timer after that call returns, so that work is
never counted. Progress is reported at most every ``progress_every_s`` seconds through one cheap callback.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np


@dataclass
class Repetition:
    """One timed repetition: its index, wall seconds and per-round latencies (seconds)."""

    index: int
    seconds: float
    latencies: np.ndarray


def _ignore(running: bool) -> None:
    """No listener of the timer."""


class RoundClock:
    """Counts rounds: ``warmup`` untimed, then ``repetitions`` x ``rounds`` timed."""

    def __init__(
        self,
        rounds: int,
        warmup: int,
        repetitions: int,
        on_repetition: Callable[[Repetition], None],
        on_progress: Optional[Callable[[int, int], None]] = None,
        progress_every_s: float = 0.5,
        on_begin: Optional[Callable[[float], None]] = None,
        on_warmup_end: Optional[Callable[[], None]] = None,
        on_timer: Optional[Callable[[bool], None]] = None,
    ):
        if rounds < 1 or repetitions < 1 or warmup < 0:
            raise ValueError("rounds and repetitions must be >= 1 and warmup >= 0")
        self.rounds = rounds
        self.warmup = warmup
        self.repetitions = repetitions
        self.total_rounds = warmup + rounds * repetitions
        self._on_repetition = on_repetition
        self._on_progress = on_progress
        self._on_begin = on_begin
        self._on_warmup_end = on_warmup_end
        #: told when the timer stops (False: a report or a repetition's end) and runs again (True), so that
        #: work counted beside the clock (the capacity backend's other copies) is counted in the same window
        self._on_timer = on_timer if on_timer is not None else _ignore
        self._progress_every = progress_every_s
        self._lat: list[float] = [0.0] * rounds
        self.done = 0
        self.begun_at: Optional[float] = None
        self._last = 0.0
        self._rep_start = 0.0
        self._next_progress = 0.0
        # ticks with ``_plain_from <= done < _plain_to`` are timed rounds that end no repetition: tick()
        # only stores their latency (the clock's cost is in every round of every backend: keep it small)
        self._plain_from = self._plain_to = 0
        #: the tick (counted from 1) promised not to stop the timer (`timer_stops_at_next_tick`): no report there
        self._no_stop_at = 0

    def timer_stops_at_next_tick(self) -> bool:
        """Whether the coming tick may stop the timer (`backends.base.Clock`): it ends the warm-up or a repetition,
        or a progress report is due. False is a promise: a report that falls due meanwhile waits one more tick."""
        if self.begun_at is None:
            return True
        timed = self.done + 1 - self.warmup
        if timed >= 0 and timed % self.rounds == 0:
            return True
        if self._on_progress is not None and time.perf_counter() >= self._next_progress:
            return True
        self._no_stop_at = self.done + 1
        return False

    def begin(self) -> None:
        """The roles exist and the first round is about to start (ends the start-up interval)."""
        if self.begun_at is None:
            self.begun_at = time.perf_counter()
            if self._on_begin is not None:
                self._on_begin(self.begun_at)
            self._on_timer(True)  # before the clock starts: a listener's own work is in no round
            now = time.perf_counter()
            self._last = self._rep_start = now
            # no reporter: no tick is ever due to report (the short path checks the time only)
            self._next_progress = now + self._progress_every if self._on_progress is not None else math.inf
            self._arm()

    def tick(self) -> None:
        """One round is complete."""
        now = time.perf_counter()
        done = self.done
        if self._plain_from <= done < self._plain_to and now < self._next_progress:
            self._lat[done - self._plain_from] = now - self._last
            self._last = now
            self.done = done + 1
            return
        self._tick(now)

    def _tick(self, now: float) -> None:
        """A tick that starts the clock, ends the warm-up or a repetition, or reports progress."""
        if self.begun_at is None:  # a backend that never called begin(): start-up ends at the first tick
            self.begin()
            now = time.perf_counter()
        done = self.done
        if done >= self.total_rounds:
            raise RuntimeError(f"tick() after the last of {self.total_rounds} rounds")
        self.done = done + 1
        timed = done - self.warmup
        if timed >= 0:
            self._lat[timed % self.rounds] = now - self._last
        self._last = now
        if timed + 1 >= 0 and (timed + 1) % self.rounds == 0:
            self._on_timer(False)
            if timed + 1 == 0:  # end of warm-up: the first repetition starts now
                if self._on_warmup_end is not None:
                    self._on_warmup_end()
            else:
                latencies = np.array(self._lat, dtype=np.float64)
                rep = Repetition(timed // self.rounds, now - self._rep_start, latencies)
                self._on_repetition(rep)
            self._on_timer(True)
            self._last = self._rep_start = time.perf_counter()
        if self._on_progress is not None and now >= self._next_progress and self._no_stop_at != self.done:
            t0 = time.perf_counter()
            self._on_timer(False)
            self._on_progress(self.done, self.total_rounds)
            self._on_timer(True)
            after = time.perf_counter()
            self._rep_start += after - t0  # the report (and the listener's work) is not part of any round
            self._last += after - t0
            self._next_progress = after + self._progress_every
        self._arm()

    def _arm(self) -> None:
        """Set the range of ticks that take tick()'s short path: the rest of the current repetition
        but its last round (none before begin(), during the warm-up or after the last round)."""
        timed = self.done - self.warmup
        if self.begun_at is None or timed < 0 or self.done >= self.total_rounds:
            self._plain_from = self._plain_to = 0
        else:
            start = self.warmup + (timed // self.rounds) * self.rounds
            self._plain_from, self._plain_to = start, start + self.rounds - 1

    @property
    def finished(self) -> bool:
        return self.done >= self.total_rounds
