"""Personal API tokens (``wlp_...``): services that issue and revoke them, selectors that read them.

A token speaks for its user, with the user's memberships, to the reports API.
It is shown once, at issue; only its SHA-256 is stored (``fleets.tokens``).
An expired, revoked or unknown token, or one of an inactive user, authenticates
nobody.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.db.models import Q, QuerySet
from django.utils import timezone

from fleets.models import PersonalToken, TokenScope
from fleets.tokens import PREFIX_CHARS, personal_token_generate, token_sha256

# last_used_at is written at most this often, so that every report request does
# not turn into an extra UPDATE (as for node credentials).
LAST_USED_RESOLUTION = timedelta(minutes=1)


def personal_tokens_for_user(*, user: Any) -> QuerySet[PersonalToken]:
    """The user's own tokens, newest first (revoked and expired ones too)."""
    if not user.is_authenticated:
        return PersonalToken.objects.none()
    return PersonalToken.objects.filter(user=user).order_by("-created_at", "-id")


def personal_token_create(
    *, user: Any, name: str, expires_at: datetime | None = None, scope: str = TokenScope.REPORTS
) -> tuple[PersonalToken, str]:
    """Issue a token for ``user``; returns the row and the token, which is not stored and cannot be shown again.

    ``scope``: the reports API (the default), or ``/metrics`` only (``TokenScope``)."""
    token = personal_token_generate()
    row = PersonalToken.objects.create(
        user=user,
        name=name,
        token_sha256=token_sha256(token),
        prefix=token[:PREFIX_CHARS],
        expires_at=expires_at,
        scope=TokenScope(scope),
    )
    return row, token


def personal_token_revoke(*, user: Any, token_id: int, now: datetime | None = None) -> bool:
    """Revoke one of ``user``'s tokens; ``False`` when it is not theirs. Revoking twice keeps the first time."""
    mine = personal_tokens_for_user(user=user).filter(pk=token_id)
    if not mine.exists():
        return False
    mine.filter(revoked_at__isnull=True).update(revoked_at=now or timezone.now())
    return True


def personal_token_authenticate(*, token: str, now: datetime | None = None) -> PersonalToken | None:
    """The active token row for ``token``, with its user; ``None`` if unknown, revoked, expired or the user inactive."""
    now = now or timezone.now()
    row = (
        PersonalToken.objects.select_related("user")
        .filter(Q(expires_at__isnull=True) | Q(expires_at__gt=now), token_sha256=token_sha256(token))
        .filter(revoked_at__isnull=True, user__is_active=True)
        .first()
    )
    if row is None:
        return None
    if row.last_used_at is None or now - row.last_used_at >= LAST_USED_RESOLUTION:
        PersonalToken.objects.filter(pk=row.pk).update(last_used_at=now)
        row.last_used_at = now
    return row
