"""Telling an organization its advice changed: a webhook POST and/or e-mail through Django's mail framework.

The webhook is sent through ``common.outbound``: only to public addresses (or
ones the operator allows), to the address checked, no redirect, one deadline.
A failure (a refused target, no complete answer, a non-2xx answer, a mail server
error) is logged and the message parked with its error (``AdviceNotification.error``:
``refused: ...`` or ``failed: ...``, never the target's reply); it is never raised
into the refresh. Parked messages are retried on the next refresh, up to
``MAX_ATTEMPTS`` attempts in all.
"""

from __future__ import annotations

import json
import logging
from datetime import datetime
from typing import Any

from django.conf import settings
from django.core.mail import send_mail
from django.core.serializers.json import DjangoJSONEncoder

from advice.models import AdviceNotification, AdviceSettings, WorkloadClass
from common.outbound import OutboundFailed, OutboundRefused, post_json

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
    error = ""
    try:
        if notification.channel == AdviceNotification.Channel.WEBHOOK:
            _post(notification.target, notification.payload)
        else:
            _mail(notification.target, notification.payload)
    except (OutboundRefused, OutboundFailed) as refused_or_failed:
        error = str(refused_or_failed)
    except (OSError, ValueError) as mail_error:  # the mail server
        error = f"failed: {type(mail_error).__name__}: {mail_error}"
    if error:
        notification.error = error
        logger.warning("advice %s to %s (attempt %d): %s", notification.channel, notification.target,
                       notification.attempts, notification.error)  # fmt: skip
        notification.save(update_fields=["attempts", "error"])
        return False
    notification.sent_at, notification.error = now, ""
    notification.save(update_fields=["attempts", "error", "sent_at"])
    return True


def _post(url: str, payload: dict[str, Any]) -> None:
    body = json.dumps(payload, cls=DjangoJSONEncoder).encode()
    post_json(url, body, deadline_s=settings.ADVICE_WEBHOOK_TIMEOUT_S, headers={"User-Agent": USER_AGENT})


def _mail(addresses: str, payload: dict[str, Any]) -> None:
    subject = f"Wattledger: placement advice for {payload['workload_class']} changed"
    body = f"{payload['explanation']}\n\nStatus: {payload['status']} (was {payload['previous_status'] or 'none'})\n"
    send_mail(subject, body, None, [address.strip() for address in addresses.split(",")], fail_silently=False)
