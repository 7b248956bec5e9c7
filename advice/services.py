"""Services of placement advice: workload classes written (and audited), advice refreshed and stored.

``advice_refresh`` reads the organization's measured curves (``curves``), asks the
pure advisor for each class, adds a window for deferrable classes from the
forecast and tariff of the site its main fleet runs at, stores the result and
tells the organization when a class's advice changed. Idempotent: an unchanged
advice only renews the latest row's ``computed_at``.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from accounting.prices import tariff_periods
from advice.advisor import Advice as AdviceResult
from advice.advisor import AdvisorSettings, ClassSpec, advise
from advice.deferral import WindowAdvice, window_choose
from advice.forecasts import forecast_hours
from advice.models import Advice, AdviceSettings, WorkloadClass
from advice.notify import advice_changed_notify, notifications_retry
from fleets.models import Node
from governance.audit import audit_record, snapshot
from reports.bands import LoadCurve
from reports.curves import load_curves

SUBJECT = "workload_class"
FIELDS = ("name", "llm_model", "ttft_target_ms", "ttft_percentile", "deadline_h", "expected_output_tokens_per_day",
          "carbon_weight")  # fmt: skip


class ClassInvalid(ValueError):
    """A workload class that fails validation; ``errors`` maps fields to messages."""

    def __init__(self, errors: dict[str, list[str]]) -> None:
        super().__init__("; ".join(f"{field}: {' '.join(messages)}" for field, messages in errors.items()))
        self.errors = errors


def _validated_save(workload_class: WorkloadClass) -> None:
    try:
        workload_class.full_clean()
    except ValidationError as error:
        errors = error.message_dict
        if "__all__" in errors:  # the unique (organization, name) constraint: name the field
            errors = {**{k: v for k, v in errors.items() if k != "__all__"}, "name": errors["__all__"]}
        raise ClassInvalid(errors) from error
    workload_class.save()


def workload_class_save(
    *, workload_class: WorkloadClass, data: dict[str, Any], user: Any, now: datetime
) -> WorkloadClass:
    """Create (unsaved instance) or update a class with ``data``; audited; ``ClassInvalid`` on bad data."""
    before = snapshot(workload_class, fields=FIELDS) if workload_class.pk else None
    for name, value in data.items():
        setattr(workload_class, name, value)
    with transaction.atomic():
        _validated_save(workload_class)
        after = snapshot(workload_class, fields=FIELDS)
        _audit(workload_class, user=user, before=before, after=after, now=now)
    return workload_class


def workload_class_delete(*, workload_class: WorkloadClass, user: Any, now: datetime) -> None:
    with transaction.atomic():
        _audit(workload_class, user=user, before=snapshot(workload_class, fields=FIELDS), after=None, now=now)
        workload_class.delete()


def _audit(workload_class: WorkloadClass, *, user: Any, before: Any, after: Any, now: datetime) -> None:
    audit_record(
        organization_id=workload_class.organization_id,
        user=user,
        subject=SUBJECT,
        object_id=workload_class.pk,
        before=before,
        after=after,
        at=now,
    )


def advice_settings(*, organization_id: int) -> AdviceSettings:
    """The organization's settings, or the defaults (unsaved) without a row."""
    found = AdviceSettings.objects.filter(organization_id=organization_id).first()
    return found or AdviceSettings(organization_id=organization_id)


SETTINGS_FIELDS = ("min_hours_of_data", "curve_days", "webhook_url", "notify_emails")


def advice_settings_save(*, options: AdviceSettings, data: dict[str, Any], user: Any, now: datetime) -> AdviceSettings:
    """Change the organization's advice settings (creating its row); audited as ``advice_settings``."""
    before = snapshot(options, fields=SETTINGS_FIELDS) if options.pk else None
    for name, value in data.items():
        setattr(options, name, value)
    with transaction.atomic():
        options.save()
        after = snapshot(options, fields=SETTINGS_FIELDS)
        audit_record(organization_id=options.organization_id, user=user, subject="advice_settings",
                     object_id=options.pk, before=before, after=after, at=now)  # fmt: skip
    return options


def advice_settings_delete(*, options: AdviceSettings, user: Any, now: datetime) -> None:
    """Delete the organization's settings row (the defaults apply again, without webhook or e-mail); audited."""
    with transaction.atomic():
        before, options_id = snapshot(options, fields=SETTINGS_FIELDS), options.pk
        options.delete()
        audit_record(organization_id=options.organization_id, user=user, subject="advice_settings",
                     object_id=options_id, before=before, after=None, at=now)  # fmt: skip


def class_spec(workload_class: WorkloadClass) -> ClassSpec:
    return ClassSpec(
        class_id=workload_class.pk,
        name=workload_class.name,
        llm_model=workload_class.llm_model,
        ttft_target_ms=float(workload_class.ttft_target_ms),
        ttft_percentile=int(workload_class.ttft_percentile),
        output_tokens_per_day=int(workload_class.expected_output_tokens_per_day),
        carbon_weight=float(workload_class.carbon_weight),
        deadline_h=workload_class.deadline_h,
    )


def advice_refresh(*, organization_id: int, now: datetime, renew: Callable[[], None] = lambda: None) -> dict[str, int]:
    """Recompute every class's advice of the organization; store it; notify changes. Counts of what happened.

    ``renew`` is called after each class (``advice.refreshes`` renews the refresh's lease with it).
    """
    options = advice_settings(organization_id=organization_id)
    classes = list(WorkloadClass.objects.filter(organization_id=organization_id))
    counts = {"classes": len(classes), "changed": 0, "notified": 0}
    if not classes:
        return counts
    end = now.replace(minute=0, second=0, microsecond=0)
    curves = load_curves(organization_ids=[organization_id], start=end - timedelta(days=options.curve_days), end=end)
    counts["notified"] += notifications_retry(organization_id=organization_id, now=now)
    for workload_class in classes:
        result = advise(class_spec(workload_class), curves, AdvisorSettings(min_hours=options.min_hours_of_data))
        window = _window(workload_class, result, curves, now)
        changed, payload = _store(workload_class, result, window, now)
        if changed and payload is not None:
            counts["changed"] += 1
            sent = advice_changed_notify(options=options if options.pk else None, workload_class=workload_class,
                                         payload=payload, now=now)  # fmt: skip
            counts["notified"] += sum(1 for n in sent if n.sent_at)
        renew()
    return counts


def _store(
    workload_class: WorkloadClass, result: AdviceResult, window: WindowAdvice | None, now: datetime
) -> tuple[bool, dict[str, Any] | None]:
    """Store the advice: a new row if it changed (returns the notification payload), else renew the latest."""
    latest = workload_class.advice.order_by("-created_at", "-id").first()
    body = {**result.as_dict(), "window": None if window is None else window.as_dict()}
    fingerprint = result.fingerprint()
    if latest is not None and latest.fingerprint == fingerprint:
        latest.computed_at, latest.explanation, latest.result = now, result.explanation, body
        latest.hours_of_data = result.hours_of_data
        latest.save(update_fields=["computed_at", "explanation", "result", "hours_of_data"])
        return False, None
    Advice.objects.create(
        workload_class=workload_class, computed_at=now, created_at=now, status=result.status, binding=result.binding,
        fingerprint=fingerprint, explanation=result.explanation, hours_of_data=result.hours_of_data, result=body,
    )  # fmt: skip
    payload = {
        "organization_id": workload_class.organization_id,
        "workload_class_id": workload_class.pk,
        "workload_class": workload_class.name,
        "status": result.status,
        "previous_status": None if latest is None else latest.status,
        "fingerprint": fingerprint,
        "previous_fingerprint": None if latest is None else latest.fingerprint,
        "binding": result.binding,
        "explanation": result.explanation,
        "computed_at": now.isoformat(),
    }
    return latest is not None, payload


def _window(
    workload_class: WorkloadClass, result: AdviceResult, curves: list[LoadCurve], now: datetime
) -> WindowAdvice | None:
    """For a deferrable class with a recommendation: the best window at the site of its main fleet."""
    recommendation = result.recommendation
    if workload_class.deadline_h is None or recommendation is None or not recommendation.placements:
        return None
    main = max(recommendation.placements, key=lambda p: p.share)
    run_h = run_hours(
        result,
        output_tokens_per_day=workload_class.expected_output_tokens_per_day,
        deadline_h=workload_class.deadline_h,
    )
    site = _main_site(main.fleet_id)
    if site is None:
        return None
    return window_choose(
        forecast=forecast_hours(zone=site.grid_zone),
        now=now,
        deadline_h=workload_class.deadline_h,
        run_h=run_h,
        facility_kwh_per_h=(recommendation.facility_kwh_per_day or 0.0) / run_h,
        carbon_weight=float(workload_class.carbon_weight),
        tariff_periods=tariff_periods(site_id=site.pk, start=now, end=now + timedelta(hours=49)),
        currency=site.currency,
    )


def run_hours(result: AdviceResult, *, output_tokens_per_day: int, deadline_h: int) -> int:
    """Hours a day of the class takes on the recommended fleets x GPU models at their capacity (1 to the deadline)."""
    placed = {(p.fleet_id, p.gpu_model) for p in result.recommendation.placements} if result.recommendation else set()
    fits = (f for f in result.fits if (f.fleet_id, f.gpu_model) in placed)
    capacity_per_h = sum(f.capacity_output_tokens_per_day for f in fits) / 24
    if not capacity_per_h:
        return deadline_h
    return min(deadline_h, max(1, math.ceil(output_tokens_per_day / capacity_per_h)))


def _main_site(fleet_id: int) -> Any:
    """The site most of the fleet's nodes are at."""
    nodes = Node.objects.filter(fleet_id=fleet_id, decommissioned_at__isnull=True).select_related("site")
    sites = Counter(node.site for node in nodes)
    return sites.most_common(1)[0][0] if sites else None
