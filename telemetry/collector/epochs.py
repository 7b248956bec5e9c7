"""Names each life of a counter, across collector restarts.

The server takes deltas of raw cumulative counters; an ``epoch`` tells it that a
counter restarted, even across a gap in the data. Each counter (a GPU's energy
counter, an inference server's token counters) has a *base* that identifies its
life from outside: the host's boot id and the driver version for a GPU, the
server's ``process_start_time_seconds`` for an endpoint. Some restarts do not
change the base (the NVIDIA driver reloaded without a reboot or upgrade; a TGI
server, which exposes no start time, restarted). So the book also remembers
the last value of each counter, in a small JSON file next to the spool, and
when a counter goes down under the same base it marks a new life with the time
it was first seen (``…@<unix seconds>``). Keeping the book on disk keeps the
epochs the same when only the collector restarts: a spurious new epoch would
make the server treat a running counter as one that restarted from zero.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from dataclasses import asdict, dataclass
from pathlib import Path

log = logging.getLogger(__name__)


Values = tuple[float | None, ...]


@dataclass
class _Life:
    base: str
    suffix: str
    last: list[float | None]  # the last value seen of each counter (None: never seen)


def _went_down(last: list[float | None], values: Values) -> bool:
    """Whether a counter seen both times is lower now (a counter missing once proves nothing)."""
    return any(old is not None and new is not None and new < old for old, new in zip(last, values, strict=False))


class EpochBook:
    def __init__(self, path: Path | None = None) -> None:
        self._path = path
        self._lock = threading.Lock()
        self._lives: dict[str, _Life] = self._load(path)

    def epoch(self, key: str, base: str, values: Values, ts: float, *, stamp_first: bool = False) -> str:
        """The epoch of the counters ``key`` whose current ``values`` are given (``None``: not read)."""
        with self._lock:
            life = self._lives.get(key)
            if life is None or life.base != base or len(life.last) != len(values):
                life = self._lives[key] = _Life(base, f"@{int(ts)}" if stamp_first else "", [None] * len(values))
            elif _went_down(life.last, values):
                life.suffix = f"@{int(ts)}"
                log.info("%s: a counter went down (%s -> %s): a new epoch starts", key, life.last, values)
            life.last = [old if new is None else new for old, new in zip(life.last, values, strict=True)]
            return life.base + life.suffix

    def save(self) -> None:
        """Write the book (atomically; it is advisory, so without fsync)."""
        if self._path is None:
            return
        with self._lock:
            text = json.dumps({key: asdict(life) for key, life in self._lives.items()})
        tmp = self._path.with_suffix(".tmp")
        try:
            tmp.write_text(text)
            os.replace(tmp, self._path)
        except OSError as exc:
            log.warning("cannot save the epoch book %s: %s", self._path, exc)

    @staticmethod
    def _load(path: Path | None) -> dict[str, _Life]:
        if path is None or not path.exists():
            return {}
        try:
            raw = json.loads(path.read_text())
            return {key: _Life(str(v["base"]), str(v["suffix"]), list(v["last"])) for key, v in raw.items()}
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.warning("ignoring unreadable epoch book %s: %s", path, exc)
            return {}
