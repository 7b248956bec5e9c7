"""``demo_backfill``: the banner every page shows while the demo's history is still being filled."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from django.utils import timezone

from demo.status import state_read


def demo_backfill(request: HttpRequest) -> dict[str, Any]:
    state = state_read()
    if state is None or not getattr(request, "user", None) or not request.user.is_authenticated:
        return {}
    return {"demo_backfill": state.banner(timezone.now())}
