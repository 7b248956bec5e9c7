"""Reading every enabled Prometheus source continuously (the beat task ``telemetry.prometheus_import_task``).

Each run, each source that is due imports, with :func:`~telemetry.prometheus_import.prometheus_import`
(the same import as ``manage.py prometheus_import``), from its watermark ``imported_until`` up to its last
complete step (one scrape interval before now, on the step's grid, so the newest scrape has landed), at
most ``PROMETHEUS_IMPORT_MAX_WINDOW_S`` a run: a source far behind catches up run by run, in bounded
windows, paged by time inside each. A new source starts ``PROMETHEUS_IMPORT_FIRST_LOOKBACK_S`` back
(older hours: the command backfills them); one behind the retention starts at the retention's edge.

On success the watermark moves to the window's end. A source that fails (its Prometheus refuses the
connection, answers 5xx or not within ``PROMETHEUS_IMPORT_TIMEOUT_S``, its URL is refused by the rule for
addresses users name (``common.outbound``), or its series name no node) keeps its watermark, so the same
window is read again, importing what a failed page left out and storing nothing twice: it is retried after
``PROMETHEUS_IMPORT_BACKOFF_S``, doubling after each failure in a row up to
``PROMETHEUS_IMPORT_BACKOFF_MAX_S``; its error (the status and a short reason) and next attempt show on the
organization's nodes page and on the pages of the nodes it feeds. What Prometheus answered with the error
(``last_error_detail``) is the answer of whatever the URL reached: the admin shows it to the organization's
admins alone, never the pages. A window with no series at all (the exporter was down) is not a failure: the
watermark moves on, the message stays shown. Every source is its own attempt: one organization's failing
Prometheus, or any error of its import, never stops another's.

A source is claimed for a run by a conditional update of ``next_attempt_at`` (a lease of twice the
task's time limit), so two overlapping runs never read one source at once.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db.models import F, Q

from fleets.models import Node
from telemetry.models import EndpointEpoch, GpuEpoch, PrometheusSource
from telemetry.prometheus_import import (
    EPOCH_PREFIX,
    NothingToImport,
    PrometheusClient,
    PrometheusImportError,
    prometheus_import,
)

log = logging.getLogger(__name__)


def prometheus_sources_run(*, now: datetime) -> dict[str, str]:
    """Import what each due, enabled source has new; ``{"<organization>/<source>": outcome}``."""
    due = PrometheusSource.objects.filter(enabled=True).filter(
        Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lte=now)
    )
    outcomes: dict[str, str] = {}
    # The least recently attempted first: a run cut short by its time limit starves no source.
    order = (F("last_attempt_at").asc(nulls_first=True), "pk")
    for source in due.select_related("organization").order_by(*order):
        outcomes[f"{source.organization.slug}/{source.name}"] = source_sync(source, now=now)
    return outcomes


def source_sync(source: PrometheusSource, *, now: datetime, client: PrometheusClient | None = None) -> str:
    """One attempt at ``source``: import its next window and record the outcome on it; return the outcome."""
    if not _claimed(source, now):
        return "skipped: another run is reading it"
    step = source.scrape_interval_s
    start = _window_start(source, now)
    last_complete = datetime.fromtimestamp(math.floor(now.timestamp() / step - 1) * step, tz=UTC)
    end = min(last_complete, start + timedelta(seconds=settings.PROMETHEUS_IMPORT_MAX_WINDOW_S))
    if end <= start:
        _record(source, now, imported_until=source.imported_until, error="", summary=source.last_summary)
        return "up to date"
    client = client or PrometheusClient(source, timeout_s=settings.PROMETHEUS_IMPORT_TIMEOUT_S, tries=1)
    try:
        summary = prometheus_import(source, start=start, end=end, client=client)
    except NothingToImport as exc:
        _record(source, now, imported_until=end, error=str(exc), summary="")
        return f"nothing to import: {exc}"
    except PrometheusImportError as exc:
        return _failed(source, now, str(exc), detail=exc.detail)
    except SoftTimeLimitExceeded:
        _failed(source, now, "the run's time limit came first: retried from the same point")
        raise
    except Exception as exc:  # any error of one source's import; the others go on
        log.exception("Prometheus source %s of %s failed", source.name, source.organization.slug)
        # Its text may quote what Prometheus answered: for the admins (detail), the pages say what failed.
        return _failed(source, now, f"the import failed ({type(exc).__name__})", detail=str(exc)[:2000])
    text = "; ".join(summary.lines())
    _record(source, now, imported_until=end, error="", summary=text)
    return text


def _window_start(source: PrometheusSource, now: datetime) -> datetime:
    oldest = now - timedelta(days=settings.TELEMETRY_RETENTION_DAYS) + timedelta(minutes=5)
    start = source.imported_until or now - timedelta(seconds=settings.PROMETHEUS_IMPORT_FIRST_LOOKBACK_S)
    return max(start, oldest)


def _claimed(source: PrometheusSource, now: datetime) -> bool:
    lease = now + timedelta(seconds=2 * settings.CELERY_TASK_TIME_LIMIT)
    due = Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lte=now)
    claimed = PrometheusSource.objects.filter(due, pk=source.pk, enabled=True).update(next_attempt_at=lease)
    return claimed == 1


def backoff_s(failures: int) -> int:
    """Seconds before the next attempt after ``failures`` failures in a row: doubling, capped."""
    first, cap = settings.PROMETHEUS_IMPORT_BACKOFF_S, settings.PROMETHEUS_IMPORT_BACKOFF_MAX_S
    return int(min(cap, first * 2 ** min(max(failures - 1, 0), 32)))


def _failed(source: PrometheusSource, now: datetime, error: str, *, detail: str = "") -> str:
    """Record a failure: ``error`` for every member to read, ``detail`` (Prometheus's answer) for admins alone."""
    failures = source.failures + 1
    retry_at = now + timedelta(seconds=backoff_s(failures))
    PrometheusSource.objects.filter(pk=source.pk).update(
        last_attempt_at=now, failures=failures, next_attempt_at=retry_at, last_error=error, last_error_detail=detail
    )
    source.failures, source.next_attempt_at, source.last_error = failures, retry_at, error
    return f"failed ({failures} in a row, next attempt {retry_at.isoformat()}): {error}"


def _record(
    source: PrometheusSource, now: datetime, *, imported_until: datetime | None, error: str, summary: str
) -> None:
    PrometheusSource.objects.filter(pk=source.pk).update(
        imported_until=imported_until, last_attempt_at=now, last_success_at=now, failures=0,
        next_attempt_at=None, last_error=error, last_error_detail="", last_summary=summary,
    )  # fmt: skip


# --- health, as the pages show it ----------------------------------------------------------------


@dataclass(frozen=True)
class SourceHealth:
    source: PrometheusSource

    @property
    def state(self) -> str:
        """``failing``, ``no data``, ``ok``, ``disabled`` or ``not read yet``."""
        s = self.source
        if not s.enabled:
            return "disabled"
        if s.failures:
            return "failing"
        if s.last_error:
            return "no data"
        return "ok" if s.last_success_at else "not read yet"


def organization_sources(organization_id: int) -> list[SourceHealth]:
    """The organization's Prometheus sources, by name, with their health."""
    return [SourceHealth(s) for s in PrometheusSource.objects.filter(organization_id=organization_id).order_by("name")]


def node_sources(node: Node) -> list[SourceHealth]:
    """The Prometheus sources of the node's organization that feed the node (its GPUs' or endpoints' epochs
    name them), and those that fail without having imported anything yet (they may be meant to)."""
    names = {
        epoch.removeprefix(EPOCH_PREFIX).split("/", 1)[0]
        for model, path in ((GpuEpoch, "gpu__node"), (EndpointEpoch, "endpoint__node"))
        for epoch in model.objects.filter(**{path: node, "epoch__startswith": EPOCH_PREFIX}).values_list(
            "epoch", flat=True
        )
    }
    sources = PrometheusSource.objects.filter(organization_id=node.fleet.organization_id)
    never = Q(failures__gt=0, last_success_at__isnull=True)
    return [SourceHealth(s) for s in sources.filter(Q(name__in=names) | never).order_by("name")]
