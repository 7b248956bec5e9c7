"""The demo's closed hours, for checks (``seed_demo --close-hours N``, ``make focus-check``).

The window's first hours are locked before their history arrives, as a controller
closes a period before a collector's late batches come in: their lines are then
booked as corrections in the first open period (late telemetry for a closed
period, ``accounting.corrections``), so the FOCUS export holds Correction rows.
Locked through the governance service, audited like a lock made in the API.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from fleets.models import Organization
from governance.locks import period_lock
from governance.models import LockedPeriod

REASON = "demo: the window's first hours closed before their history arrived"


def demo_hours_close(*, organization: Organization, start: datetime, hours: int, now: datetime) -> LockedPeriod:
    """Lock ``[start, start + hours)`` of the demo organization; idempotent (a rerun finds its lock)."""
    end = start + timedelta(hours=hours)
    existing = LockedPeriod.objects.filter(organization=organization, start=start, end=end).first()
    if existing is not None:
        return existing
    return period_lock(organization=organization, start=start, end=end, reason=REASON, user=None, now=now)
