"""The disk spool: every batch is on disk before it is sent, and leaves only once acknowledged.

Layout under the spool directory::

    pending/<seq>-<batch_id>.json.gz   batches not yet acknowledged, sent oldest (lowest seq) first
    rejected/<same name>               batches the server refused (4xx), with a .reason file beside
    tmp/                               half-written batches; cleared at start
    state.json                         the persisted count of batches dropped because the spool was full
    lock                               held (flock) by the one collector that uses this spool

A batch is written to ``tmp/``, fsynced, renamed into ``pending/`` and the
directory fsynced, so after a crash (kill -9, power loss) a batch is either
whole in ``pending/`` or absent. The spool is bounded in bytes counted as the
disk holds them (each file rounded up to 4 KiB blocks); when a new batch makes
it overflow, the oldest batches are dropped and counted. Rejected batches are
kept up to an eighth of that bound (oldest deleted first): move a file back to
``pending/`` to send it again.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from .batching import SpoolState

log = logging.getLogger(__name__)

DEFAULT_MAX_BYTES = 512 * 1024 * 1024
BLOCK_BYTES = 4096
SUFFIX = ".json.gz"


def disk_bytes(size: int) -> int:
    """What a file of ``size`` bytes takes on disk (whole 4 KiB blocks)."""
    return -(-max(size, 1) // BLOCK_BYTES) * BLOCK_BYTES


def default_spool_dir() -> Path:
    """/var/lib/wattledger/spool for root (a system service), else ~/.local/state/wattledger/spool."""
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        return Path("/var/lib/wattledger/spool")
    state_home = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state_home) / "wattledger" / "spool"


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_durably(path: Path, data: bytes, tmp_dir: Path) -> None:
    tmp = tmp_dir / (path.name + ".tmp")
    with open(tmp, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)


@dataclass(frozen=True)
class SpooledBatch:
    path: Path
    seq: int
    batch_id: str
    size: int  # on disk

    def read(self) -> bytes | None:
        """The batch's body, or ``None`` if it left the spool meanwhile (dropped)."""
        try:
            return self.path.read_bytes()
        except FileNotFoundError:
            return None


def _parse_name(path: Path) -> tuple[int, str] | None:
    seq, _, batch_id = path.name.removesuffix(SUFFIX).partition("-")
    return (int(seq), batch_id) if path.name.endswith(SUFFIX) and seq.isdigit() and batch_id else None


class SpoolBusy(OSError):
    """Another collector holds this spool (two would send each other's batches twice)."""


def _lock(path: Path) -> IO[bytes]:
    handle = open(path, "ab")  # noqa: SIM115 - held open for the spool's life: it is the lock
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        raise SpoolBusy(f"another collector is using the spool {path.parent}; give each its own --spool") from None
    return handle


class Spool:
    def __init__(self, root: Path, *, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.root = root
        self.max_bytes = max_bytes
        self.pending_dir, self.rejected_dir, self._tmp_dir = root / "pending", root / "rejected", root / "tmp"
        for folder in (self.pending_dir, self.rejected_dir, self._tmp_dir):
            folder.mkdir(parents=True, exist_ok=True)
        self._lock_file = _lock(root / "lock")  # released when closed, or when the process dies
        self._lock = threading.Lock()
        self.changed = threading.Event()  # set when a batch is added: wakes the uploader
        self._clear_tmp()
        self._pending: dict[int, SpooledBatch] = self._scan(self.pending_dir)
        self._bytes = sum(item.size for item in self._pending.values())
        self._next_seq = max(self._pending, default=0) + 1
        self._dropped = self._load_dropped()

    def close(self) -> None:
        self._lock_file.close()

    def _clear_tmp(self) -> None:
        for leftover in self._tmp_dir.iterdir():
            leftover.unlink(missing_ok=True)

    @staticmethod
    def _scan(folder: Path) -> dict[int, SpooledBatch]:
        found: dict[int, SpooledBatch] = {}
        for path in folder.iterdir():
            if (parsed := _parse_name(path)) is not None:
                found[parsed[0]] = SpooledBatch(path, parsed[0], parsed[1], disk_bytes(path.stat().st_size))
        return found

    def _load_dropped(self) -> int:
        try:
            return int(json.loads((self.root / "state.json").read_text())["dropped_batches"])
        except FileNotFoundError:
            return 0
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.warning("spool state unreadable (%s); the dropped-batch count restarts at 0", exc)
            return 0

    # --- what the collector asks ----------------------------------------------------

    @property
    def dropped_batches(self) -> int:
        return self._dropped

    @property
    def pending_bytes(self) -> int:
        """What the pending batches take on disk."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._pending)

    def state(self) -> SpoolState:
        return SpoolState(self._dropped, self._bytes)

    def pending(self) -> list[SpooledBatch]:
        with self._lock:
            return [self._pending[seq] for seq in sorted(self._pending)]

    def oldest(self) -> SpooledBatch | None:
        with self._lock:
            return self._pending[min(self._pending)] if self._pending else None

    # --- changes ------------------------------------------------------------------

    def put(self, batch_id: str, body: bytes) -> SpooledBatch:
        """Store a batch durably (returns once it is on disk), dropping the oldest if over the bound."""
        with self._lock:
            seq, self._next_seq = self._next_seq, self._next_seq + 1
            path = self.pending_dir / f"{seq:012d}-{batch_id}{SUFFIX}"
            try:
                _write_durably(path, body, self._tmp_dir)
            except OSError:
                (self._tmp_dir / (path.name + ".tmp")).unlink(missing_ok=True)
                raise
            item = self._pending[seq] = SpooledBatch(path, seq, batch_id, disk_bytes(len(body)))
            self._bytes += item.size
            self._enforce_bound()
        self.changed.set()
        return item

    def _enforce_bound(self) -> None:
        dropped = 0
        while len(self._pending) > 1 and self._bytes > self.max_bytes:
            self._forget(min(self._pending)).path.unlink(missing_ok=True)
            dropped += 1
        if dropped:
            self._count_dropped(dropped)
            log.warning("spool full (%d bytes): dropped the %d oldest batch(es)", self.max_bytes, dropped)

    def _count_dropped(self, count: int) -> None:
        self._dropped += count
        state = json.dumps({"dropped_batches": self._dropped}).encode()
        try:
            _write_durably(self.root / "state.json", state, self._tmp_dir)
        except OSError as exc:
            log.error("cannot save the dropped-batch count (%d): %s", self._dropped, exc)

    def count_lost(self, count: int) -> None:
        """Count batches that never reached the spool (its disk failed) as dropped."""
        with self._lock:
            self._count_dropped(count)

    def _forget(self, seq: int) -> SpooledBatch:
        item = self._pending.pop(seq)
        self._bytes -= item.size
        return item

    def acknowledge(self, item: SpooledBatch) -> None:
        """The server has the batch: it leaves the spool."""
        with self._lock:
            if item.seq in self._pending:
                self._forget(item.seq)
            item.path.unlink(missing_ok=True)
            _fsync_dir(self.pending_dir)

    def reject(self, item: SpooledBatch, reason: str) -> None:
        """The server refused the batch for good: keep it aside, with why."""
        with self._lock:
            if item.seq in self._pending:
                self._forget(item.seq)
            target = self.rejected_dir / item.path.name
            try:
                os.replace(item.path, target)
            except FileNotFoundError:
                return
            target.with_name(target.name + ".reason").write_text(reason + "\n")
            _fsync_dir(self.pending_dir)
            self._trim_rejected()

    def _trim_rejected(self) -> None:
        kept = sorted(self._scan(self.rejected_dir).items(), reverse=True)
        total = 0
        for _, item in kept:
            total += item.size
            if total > self.max_bytes // 8:
                item.path.unlink(missing_ok=True)
                item.path.with_name(item.path.name + ".reason").unlink(missing_ok=True)
