"""Which audit entries bear on a reporting period: the changes an auditor of that period's report must see.

Pure: it reads an entry's subject and its row's fields before and after (the
JSON the trail keeps), never the ORM. A change bears on ``[start, end)`` when
the row's period before or after it overlaps the reporting period: validity
(``valid_from`` / ``valid_to``), an instrument's delivery, a residual mix's
year, an intensity upload's hours, a locked period's span. An input without a
period (the site's own PUE, GPU assets, hardware profiles, ledger settings,
nodes, a site's grid zone, time zone and currency) weighs on every hour of its
rows, so its changes bear on every period. Node tokens, workload classes, advice
settings, memberships (roles), organizations' and fleets' names change no
reported figure. A ledger correction bears on the hour it restates and the hour it is booked in.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from governance.intervals import Window, windows_overlap

NOT_REPORTED = frozenset({"node_token", "workload_class", "advice_settings", "membership", "organization", "fleet"})

# A ledger correction bears on the hour it restates and on the hour it is booked in.
CORRECTION = "ledger_correction"

_PERIOD_FIELDS = (("valid_from", "valid_to"), ("delivery_start", "delivery_end"), ("start", "end"))


def _instant(value: Any) -> datetime | None:
    return None if value in (None, "") else datetime.fromisoformat(str(value))


def row_window(row: Mapping[str, Any]) -> Window | None:
    """The row's own period, or ``None`` when it has none (it weighs on every hour)."""
    for start_name, end_name in _PERIOD_FIELDS:
        start = _instant(row.get(start_name))
        if start is not None:
            return start, _instant(row.get(end_name))
    if "year" in row:  # a residual mix: its calendar year
        year = int(row["year"])
        return datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC)
    first, last = _instant(row.get("first_hour")), _instant(row.get("last_hour"))
    if first is not None and last is not None:  # an intensity upload: its first to its last hour
        return first, last + timedelta(hours=1)
    return None


def bears_on(
    *, subject: str, before: Mapping[str, Any] | None, after: Mapping[str, Any] | None, period: Window
) -> bool:
    """Whether a change of ``subject`` from ``before`` to ``after`` bears on the figures of ``period``."""
    if subject in NOT_REPORTED:
        return False
    if subject == CORRECTION:
        return any(windows_overlap(window, period) for row in (before, after) if row for window in _hours_of(row))
    windows = [row_window(row) for row in (before, after) if row is not None]
    return any(window is None or windows_overlap(window, period) for window in windows)


def _hours_of(correction: Mapping[str, Any]) -> list[Window]:
    hours = [_instant(correction.get(name)) for name in ("restated_hour", "booked_hour")]
    return [(hour, hour + timedelta(hours=1)) for hour in hours if hour is not None]
