"""A progress bar: redrawn in place on a terminal, plain lines (every few percent) otherwise."""

from __future__ import annotations

import time
from typing import Any, Protocol

BAR_WIDTH = 30
PLAIN_EVERY_PERCENT = 10.0
PLAIN_EVERY_S = 15.0


class Stream(Protocol):
    """Where progress goes: a text file, or a management command's ``stdout`` with ``ending=""``."""

    def write(self, text: str, /) -> Any: ...
    def flush(self) -> None: ...
    def isatty(self) -> bool: ...


class Progress:
    """Progress towards ``total``; with nothing to do (``total`` 0) it prints nothing."""

    def __init__(self, stream: Stream, label: str, total: float, unit: str) -> None:
        self.stream, self.label, self.total, self.unit = stream, label, max(total, 1e-9), unit
        self.silent = total <= 0
        self.tty = stream.isatty()
        self.started = time.monotonic()
        self._last_plain: tuple[float, float] = (-PLAIN_EVERY_PERCENT, self.started)
        self._done = 0.0

    def update(self, done: float) -> None:
        self._done = min(max(done, 0.0), self.total)
        percent = 100 * self._done / self.total
        if self.silent:
            return
        if self.tty:
            self.stream.write("\r" + self._line(percent))
            self.stream.flush()
            return
        last_percent, last_s = self._last_plain
        now = time.monotonic()
        if percent - last_percent >= PLAIN_EVERY_PERCENT or now - last_s >= PLAIN_EVERY_S:
            self._last_plain = (percent, now)
            self.stream.write(self._line(percent) + "\n")
            self.stream.flush()

    def finish(self) -> float:
        """Print the final state (once); return the seconds it took."""
        elapsed = time.monotonic() - self.started
        percent = 100 * self._done / self.total
        if self.silent:
            return elapsed
        if self.tty:
            self.stream.write("\r" + self._line(percent) + "\n")
        elif self._last_plain[0] != percent:
            self.stream.write(self._line(percent) + "\n")
        self.stream.flush()
        return elapsed

    def _line(self, percent: float) -> str:
        filled = round(BAR_WIDTH * percent / 100)
        bar = "#" * filled + "-" * (BAR_WIDTH - filled)
        elapsed = time.monotonic() - self.started
        digits = 2 if self.total < 10 else 1 if self.total < 1000 else 0
        amount = f"{self._done:,.{digits}f}/{self.total:,.{digits}f}"
        return f"{self.label:<10} [{bar}] {percent:5.1f}%  {amount} {self.unit}  {elapsed:5.1f} s"
