"""A progress bar: redrawn in place on a terminal, plain lines (every few percent) otherwise.

A bar ends at 100 % when its work is done (whatever the estimate of ``total``
said: a queue drained is done), or says why it stopped; amounts keep three
significant digits, so a resume of a few minutes never reads "0.00/0.00".
"""

from __future__ import annotations

import math
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

    def finish(self, *, stopped: str | None = None, actual: float | None = None) -> float:
        """Print the final state (once): 100 %, or where it stopped and why; return the seconds it took.

        ``actual``: the amount the finished work turned out to be, where ``total`` was an estimate
        (a queue's rows counted twice): the bar ends at 100 % of it.
        """
        elapsed = time.monotonic() - self.started
        if stopped is None:
            if actual:
                self.total = actual
            self._done = self.total
        percent = 100 * self._done / self.total
        if self.silent:
            return elapsed
        line = self._line(percent) + (f"  stopped: {stopped}" if stopped else "")
        if self.tty:
            self.stream.write("\r" + line + "\n")
        elif stopped or self._last_plain[0] != percent:
            self.stream.write(line + "\n")
        self.stream.flush()
        return elapsed

    def _line(self, percent: float) -> str:
        filled = round(BAR_WIDTH * percent / 100)
        bar = "#" * filled + "-" * (BAR_WIDTH - filled)
        elapsed = time.monotonic() - self.started
        digits = amount_digits(self.total)
        amount = f"{self._done:,.{digits}f}/{self.total:,.{digits}f}"
        return f"{self.label:<10} [{bar}] {percent:5.1f}%  {amount} {self.unit}  {elapsed:5.1f} s"


def amount_digits(total: float) -> int:
    """Decimals that show ``total`` to three significant digits (none from 100 up, at most six)."""
    if total >= 100:
        return 0
    return min(6, 2 - math.floor(math.log10(total)))
