"""``GET /metrics``: the ledger in the Prometheus text format, or OpenMetrics when ``Accept`` asks for it.

Authentication: a personal token of scope metrics only (``Authorization: Bearer
wlp_...``, ``fleets.authentication.MetricsTokenAuthentication``): without one 401,
with a token of another scope (or a node token) 403. Tenancy as every report: the
series of the token's user's organizations, no other.

Counters (``_total``): the stored lines since the first one, through the
organizations' last complete hour (``complete_through``), recomputed from the
stored lines at each scrape, so that they only step when an hour becomes complete.
Gauges (``wattledger_last_hour_*``): that last complete hour alone. Series per
organization, fleet, GPU model and LLM model (``reports.selectors.exposed``: the
comparison's allocation by output tokens); per node only with ``?per_node=true``.
Names, units and the PromQL of per-token figures: docs/metrics.md.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Collection, Iterator
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.http import HttpResponse
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.permissions import IsAuthenticated
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.throttling import ScopedRateThrottle
from rest_framework.views import APIView

from accounting.ledger.units import J_PER_KWH, S_PER_H
from common.api import UNAUTHENTICATED
from common.periods import HOUR
from common.query import QueryInputSerializer, query_validated
from common.scope import report_organization_ids
from fleets.authentication import MetricsTokenAuthentication
from reports.exposition import (
    OPENMETRICS_CONTENT_TYPE,
    OPENMETRICS_MEDIA_TYPE,
    PROMETHEUS_CONTENT_TYPE,
    PROMETHEUS_MEDIA_TYPE,
    Family,
    Kind,
    Labels,
    Sample,
    openmetrics_text,
    prometheus_text,
    wants_openmetrics,
)
from reports.metrics import LedgerSums
from reports.selectors.complete import complete_through
from reports.selectors.exposed import ExposedKey, ExposedNames, exposed_names, exposed_sums

PREFIX = "wattledger_"
LAST_HOUR = "last_hour_"


Reader = Callable[[LedgerSums], Decimal | int | None]


class _Figure:
    """One ledger figure as a family: its name (``wattledger_<name>``), help, unit, and how it reads summed lines."""

    def __init__(self, name: str, help: str, read: Reader, *, unit: str = "") -> None:
        self.name, self.help, self.read, self.unit = name, help, read, unit
        self.money = name.endswith("cost")


def _kwh_as_j(kwh: Decimal) -> Decimal:
    return kwh * J_PER_KWH


def _known(known: Callable[[LedgerSums], bool], read: Callable[[LedgerSums], Decimal]) -> Reader:
    """A carbon figure only where a line had its factor: an unknown total is no series, never a zero."""
    return lambda sums: read(sums) if known(sums) else None


FIGURES = (
    _Figure("cost", "cost, in the unit of the currency label (hardware, electricity, taxes)", lambda s: s.totals.cost),
    _Figure(
        "idle_cost", "cost of GPUs that served no tokens below the utilization threshold", lambda s: s.totals.idle_cost
    ),
    _Figure(
        "facility_energy_joules",
        "facility energy (IT energy x PUE)",
        lambda s: _kwh_as_j(s.totals.facility_kwh),
        unit="joules",
    ),
    _Figure(
        "it_energy_joules",
        "IT energy before PUE: the node boundary where metered or the host modelled, else the GPU boards",
        lambda s: _kwh_as_j(s.totals.it_kwh),
        unit="joules",
    ),
    _Figure(
        "gpu_energy_joules",
        "GPU-boundary energy: the boards alone, as NVML measures them",
        lambda s: _kwh_as_j(s.totals.gpu_kwh),
        unit="joules",
    ),
    _Figure("output_tokens", "output (generation) tokens", lambda s: s.totals.generation_tokens),
    _Figure("input_tokens", "input (prompt) tokens, prefix-cache hits included", lambda s: s.totals.prompt_tokens),
    _Figure(
        "location_co2e_grams",
        "operational carbon, location-based (facility kWh x grid intensity), gCO2e",
        _known(lambda s: s.location_known, lambda s: s.totals.location_co2e_g),
        unit="grams",
    ),
    _Figure(
        "market_co2e_grams",
        "operational carbon, market-based with the sites' market factors (internal, not the Scope 2 disclosure), gCO2e",
        _known(lambda s: s.market_known, lambda s: s.totals.market_co2e_g),
        unit="grams",
    ),
    _Figure(
        "embodied_co2e_grams",
        "embodied carbon amortized over the hours held (central estimate), gCO2e",
        lambda s: s.totals.embodied_co2e_g_central,
        unit="grams",
    ),
    _Figure("gpu_held_seconds", "GPU time held", lambda s: s.totals.gpu_h * S_PER_H, unit="seconds"),
    _Figure(
        "idle_gpu_seconds",
        "GPU time that served no tokens below the utilization threshold",
        lambda s: s.totals.idle_gpu_h * S_PER_H,
        unit="seconds",
    ),
)


def _labels(key: ExposedKey, names: ExposedNames, *, money: bool) -> Labels:
    labels = [
        ("organization", names.organizations.get(key.organization_id, str(key.organization_id))),
        ("fleet_id", str(key.fleet_id)),
        ("fleet", names.fleets.get(key.fleet_id, "")),
        ("gpu_model", key.gpu_model),
    ]
    if key.llm_model is not None:
        labels.append(("llm_model", key.llm_model))
    if key.node_id is not None:
        labels += [("node_id", str(key.node_id)), ("node", names.nodes.get(key.node_id, ""))]
    if money:
        labels.append(("currency", key.currency))
    return tuple(labels)


def _samples(figure: _Figure, sums: dict[ExposedKey, LedgerSums], names: ExposedNames) -> list[Sample]:
    """The figure's samples, one per label set: keys that differ only by currency add up where it is not a label."""
    values: dict[Labels, Decimal | int] = defaultdict(int)
    for key, summed in sorted(sums.items(), key=lambda item: item[0].sort_key()):
        value = figure.read(summed)
        if value is not None:
            labels = _labels(key, names, money=figure.money)
            values[labels] = values[labels] + value
    return [Sample(labels, value) for labels, value in values.items()]


def metric_families(
    *,
    since_enrolment: dict[ExposedKey, LedgerSums],
    last_hour: dict[ExposedKey, LedgerSums],
    names: ExposedNames,
    through: datetime,
) -> Iterator[Family]:
    """Every family: the counters since enrolment, the gauges of the last complete hour, and that hour's end."""
    for prefix, kind, told, sums in (
        (PREFIX, Kind.COUNTER, "since enrolment, through the last complete hour", since_enrolment),
        (f"{PREFIX}{LAST_HOUR}", Kind.GAUGE, "the last complete hour alone", last_hour),
    ):
        for figure in FIGURES:
            yield Family(
                f"{prefix}{figure.name}", kind, f"{figure.help}; {told}", unit=figure.unit,
                samples=_samples(figure, sums, names),
            )  # fmt: skip
    yield Family(
        f"{PREFIX}complete_through_timestamp_seconds",
        Kind.GAUGE,
        "end of the last complete hour (every node-hour final), Unix time; the counters run through it",
        unit="seconds",
        samples=[Sample((), through.timestamp())],
    )


def exposed_families(*, organization_ids: Collection[int], now: datetime, per_node: bool = False) -> list[Family]:
    """The organizations' families at ``now``: what ``/metrics`` writes and ``reports.otlp`` pushes."""
    through = complete_through(organization_ids=organization_ids, now=now)
    scope: dict[str, Any] = {"organization_ids": organization_ids, "per_node": per_node}
    return list(
        metric_families(
            since_enrolment=exposed_sums(**scope, end=through),
            last_hour=exposed_sums(**scope, start=through - HOUR, end=through),
            names=exposed_names(organization_ids=organization_ids, per_node=per_node),
            through=through,
        )
    )


class PrometheusTextRenderer(BaseRenderer):
    media_type = PROMETHEUS_MEDIA_TYPE
    format = "prometheus"
    charset = "utf-8"

    def render(self, data: Any, accepted_media_type: str | None = None, renderer_context: Any = None) -> Any:
        return data


class OpenMetricsRenderer(PrometheusTextRenderer):
    media_type = OPENMETRICS_MEDIA_TYPE
    format = "openmetrics"


class MetricsView(APIView):
    authentication_classes = [MetricsTokenAuthentication]
    permission_classes = [IsAuthenticated]
    throttle_classes = [ScopedRateThrottle]
    throttle_scope = "reports"  # THROTTLE_REPORTS_RATE: a scrape every 15 s is 4 a minute
    renderer_classes = [PrometheusTextRenderer, OpenMetricsRenderer, JSONRenderer]

    class InputSerializer(QueryInputSerializer):
        per_node = serializers.BooleanField(
            default=False,
            help_text="also a node label (node_id, node): one series per node instead of per fleet; never per GPU",
        )

    def handle_exception(self, exc: Exception) -> Response:
        response = super().handle_exception(exc)
        # Errors in JSON, as every API endpoint answers them, whatever format was asked.
        self.request.accepted_renderer = JSONRenderer()
        self.request.accepted_media_type = JSONRenderer.media_type
        return response

    @extend_schema(
        operation_id="metrics",
        summary="The ledger as Prometheus metrics (text format 0.0.4, or OpenMetrics 1.0 on Accept)",
        description=(
            "Counters since enrolment through the last complete hour and gauges of that hour, per organization, "
            "fleet, GPU model and LLM model: cost and idle cost (label currency), facility, IT and GPU energy "
            "(joules), output and input tokens, location- and market-based and embodied carbon (grams CO2e). "
            "Needs a personal token of scope metrics. Names, labels and the PromQL of per-token figures: "
            "docs/metrics.md."
        ),
        parameters=[InputSerializer],
        responses={
            (200, PROMETHEUS_MEDIA_TYPE): OpenApiTypes.STR,
            (200, OPENMETRICS_MEDIA_TYPE): OpenApiTypes.STR,
            400: OpenApiResponse(description="bad parameters"),
            401: OpenApiResponse(description=UNAUTHENTICATED),
            403: OpenApiResponse(description="a personal token of another scope (reports), or a node token"),
        },
    )
    def get(self, request: Request) -> HttpResponse:
        per_node = query_validated(self.InputSerializer, request)["per_node"]
        organization_ids = report_organization_ids(user=request.user, refs=[])
        families = exposed_families(organization_ids=organization_ids, now=timezone.now(), per_node=per_node)
        if wants_openmetrics(request.headers.get("Accept", "")):
            return HttpResponse(openmetrics_text(families), content_type=OPENMETRICS_CONTENT_TYPE)
        return HttpResponse(prometheus_text(families), content_type=PROMETHEUS_CONTENT_TYPE)
