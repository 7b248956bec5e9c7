"""The history backfill's state for the pages: ``var/demo/backfill.json``, written by ``seed_demo``.

``make demo`` seeds the most recent days first and serves the dashboards at once;
``bin/run-demo`` then sends the rest in the background (``seed_demo --rest``).
Meanwhile every page shows "backfilling: n of 14 days" (``demo.context_processors``).
A state not updated for ``STALE_AFTER`` belongs to a run that stopped: the banner says
so, and how to resume.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from pathlib import Path

from django.utils import timezone

from demo.tokens import demo_dir

STALE_AFTER = timedelta(minutes=2)


@dataclass(frozen=True)
class BackfillState:
    start: datetime  # the planned window: [start, end)
    end: datetime
    days_total: float
    days_done: float  # days of the window whose history is in (sent, rolled up and priced)
    phase: str  # "waiting" (the rest not started), "sending", "rolling up", "pricing", "done", "stopped"
    updated_at: datetime
    reason: str = ""  # why it stopped

    @property
    def running(self) -> bool:
        return self.phase not in ("done", "stopped")

    def stale(self, now: datetime) -> bool:
        return self.running and self.phase != "waiting" and now - self.updated_at > STALE_AFTER

    def banner(self, now: datetime) -> str | None:
        """What the pages say while the history is incomplete; ``None`` once it is complete."""
        if self.phase == "done":
            return None
        days = f"{self.days_done:.0f} of {self.days_total:.0f} days"
        if self.phase == "stopped" or self.stale(now):
            why = self.reason or "the backfill is not running"
            return f"History incomplete: {days} in ({why}). Run make demo again to resume."
        doing = {"rolling up": " (rolling up)", "pricing": " (pricing)"}.get(self.phase, "")
        return (
            f"backfilling: {days}{doing}. Figures for the earlier days appear as they arrive; "
            "totals over the last 7 days grow until then."
        )


def state_path() -> Path:
    return demo_dir() / "backfill.json"


def state_read() -> BackfillState | None:
    try:
        raw = json.loads(state_path().read_text())
        return BackfillState(
            **{
                **raw,
                "start": datetime.fromisoformat(raw["start"]),
                "end": datetime.fromisoformat(raw["end"]),
                "updated_at": datetime.fromisoformat(raw["updated_at"]),
            }
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def state_write(**fields: object) -> BackfillState:
    """Write the state (the fields given replace the stored ones), atomically; returns it."""
    current = state_read()
    base = asdict(current) if current else {}
    state = BackfillState(**{**base, **fields, "updated_at": timezone.now()})
    path = state_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    data = {
        **asdict(state),
        "start": state.start.isoformat(),
        "end": state.end.isoformat(),
        "updated_at": state.updated_at.isoformat(),
    }
    temporary.write_text(json.dumps(data))
    os.replace(temporary, path)
    return state
