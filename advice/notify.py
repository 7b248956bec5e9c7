"""Telling an organization its advice changed: a webhook POST and/or e-mail through Django's mail framework.

A failure (refused connection, timeout, non-2xx answer, mail server error) is
logged and the message parked with its error (``AdviceNotification.error``); it
is never raised into the refresh. Parked messages are retried on the next
refresh, up to ``MAX_ATTEMPTS`` attempts in all.
"""

from __future__ import annotations

import http.client
import json
import logging
import urllib.error
import urllib.request
from datetime import datetime
from typing import Any

from django.conf import settings
from django.core.mail import send_mail
from django.core.serializers.json import DjangoJSONEncoder

from advice.models import AdviceNotification, AdviceSettings, WorkloadClass

logger = logging.getLogger(__name__)
MAX_ATTEMPTS = 3
USER_AGENT = "Wattledger-advice/1"


def advice_changed_notify(
    *, options: AdviceSettings | None, workload_class: WorkloadClass, payload: dict[str, Any], now: datetime
) -> list[AdviceNotification]:
    """Queue and send the organization's messages for one changed advice; returns them (sent or parked)."""
    if options is None:
        return []
    targets = []
    if options.webhook_url:
        targets.append((AdviceNotification.Channel.WEBHOOK, options.webhook_url))
    if options.email_list:
        targets.append((AdviceNotification.Channel.EMAIL, ", ".join(options.email_list)))
    sent = []
    for channel, target in targets:
        notification = AdviceNotification.objects.create(
            organization_id=workload_class.organization_id, workload_class=workload_class, channel=channel,
            target=target, payload=payload, created_at=now,
        )  # fmt: skip
        notification_send(notification=notification, now=now)
        sent.append(notification)
    return sent


def notifications_retry(*, organization_id: int, now: datetime) -> int:
    """Send the organization's parked messages again (each up to ``MAX_ATTEMPTS`` in all); returns how many went."""
    parked = AdviceNotification.objects.filter(
        organization_id=organization_id, sent_at__isnull=True, attempts__lt=MAX_ATTEMPTS
    )
    return sum(notification_send(notification=n, now=now) for n in parked)


def notification_send(*, notification: AdviceNotification, now: datetime) -> bool:
    """One attempt; on failure the error is logged and stored, never raised."""
    notification.attempts += 1
    try:
        if notification.channel == AdviceNotification.Channel.WEBHOOK:
            _post(notification.target, notification.payload)
        else:
            _mail(notification.target, notification.payload)
    except (OSError, http.client.HTTPException, ValueError) as error:
        notification.error = f"{type(error).__name__}: {error}"
        logger.warning("advice %s to %s failed (attempt %d): %s", notification.channel, notification.target,
                       notification.attempts, notification.error)  # fmt: skip
        notification.save(update_fields=["attempts", "error"])
        return False
    notification.sent_at, notification.error = now, ""
    notification.save(update_fields=["attempts", "error", "sent_at"])
    return True


def _post(url: str, payload: dict[str, Any]) -> None:
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"webhook URL must be http(s), got {url!r}")
    body = json.dumps(payload, cls=DjangoJSONEncoder).encode()
    request = urllib.request.Request(  # noqa: S310 - http(s) checked above
        url, data=body, method="POST", headers={"Content-Type": "application/json", "User-Agent": USER_AGENT}
    )
    timeout_s = settings.ADVICE_WEBHOOK_TIMEOUT_S
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:  # noqa: S310 - http(s) only
            response.read()
    except urllib.error.HTTPError as error:
        raise OSError(f"HTTP {error.code} from the webhook") from error


def _mail(addresses: str, payload: dict[str, Any]) -> None:
    subject = f"Wattledger: placement advice for {payload['workload_class']} changed"
    body = f"{payload['explanation']}\n\nStatus: {payload['status']} (was {payload['previous_status'] or 'none'})\n"
    send_mail(subject, body, None, [address.strip() for address in addresses.split(",")], fail_silently=False)
