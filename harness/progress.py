"""Progress of long sweeps: one tqdm bar per job (rounds done of rounds planned, reported by the child).

Quiet under ``quiet=true`` or when stderr is not a terminal, so logs and CI stay clean.
"""
from __future__ import annotations

import sys
from typing import Any, Optional


class JobProgress:
    def __init__(self, label: str, total: int, quiet: bool = False):
        self.label = label
        self.total = total
        self.enabled = not quiet and sys.stderr.isatty()
        self._bar: Optional[Any] = None

    def __enter__(self) -> "JobProgress":
        if self.enabled:
            from tqdm import tqdm

            self._bar = tqdm(total=self.total, desc=self.label, unit="round", leave=True, file=sys.stderr)
        return self

    def update(self, done: int, total: int) -> None:
        if self._bar is not None:
            self._bar.total = total
            self._bar.n = done
            self._bar.refresh()

    def __exit__(self, *exc: Any) -> None:
        if self._bar is not None:
            self._bar.close()
