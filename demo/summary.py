"""What the demo shows, per fleet and per fleet and LLM, from the stored ledger and hourly usage (a selector)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from accounting.ledger import J_PER_KWH
from accounting.models import NodeHourLedger
from fleets.models import Fleet, Organization
from telemetry.histogram import Histogram, histogram_merge, histogram_quantile
from telemetry.models import EndpointHourUsage, ServingEndpoint

MILLION = Decimal(1_000_000)


@dataclass(frozen=True)
class FleetFigures:
    fleet: str
    currency: str
    lines: int
    cost: Decimal
    tokens: int
    it_kwh: Decimal
    location_co2e_g: Decimal
    embodied_co2e_g: Decimal
    p99_ttft_s: float | None

    @property
    def cost_per_1m_tokens(self) -> Decimal | None:
        return self.cost / self.tokens * MILLION if self.tokens else None

    @property
    def j_per_token(self) -> Decimal | None:
        return self.it_kwh * J_PER_KWH / self.tokens if self.tokens else None

    @property
    def g_per_1k_tokens(self) -> Decimal | None:
        """SCI: (location-based operational + embodied, central) gCO2e per 1k tokens."""
        return (self.location_co2e_g + self.embodied_co2e_g) / self.tokens * 1000 if self.tokens else None


def fleet_figures(*, organization: Organization, start: datetime, end: datetime) -> list[FleetFigures]:
    """Per fleet of the organization, over the hours of ``[start, end)``."""
    return [_figures(fleet, start, end) for fleet in Fleet.objects.filter(organization=organization)]


def _figures(fleet: Fleet, start: datetime, end: datetime) -> FleetFigures:
    # Summed here rather than with SUM(): SQLite would add the decimals as floats.
    lines = NodeHourLedger.objects.filter(fleet=fleet, hour_start__gte=start, hour_start__lt=end)
    rows = list(
        lines.values_list(
            "currency", "cost", "prompt_tokens", "generation_tokens", "it_kwh", "location_co2e_g",
            "embodied_co2e_g_central",
        )
    )  # fmt: skip
    zero = Decimal(0)
    return FleetFigures(
        fleet=fleet.name,
        currency=",".join(sorted({row[0] for row in rows})),
        lines=len(rows),
        cost=sum((row[1] for row in rows), zero),
        tokens=sum(row[2] + row[3] for row in rows),
        it_kwh=sum((row[4] for row in rows), zero),
        location_co2e_g=sum((row[5] or zero for row in rows), zero),
        embodied_co2e_g=sum((row[6] for row in rows), zero),
        p99_ttft_s=fleet_ttft_quantile(fleet=fleet, start=start, end=end, q=0.99),
    )


def fleet_ttft_quantile(
    *, fleet: Fleet, start: datetime, end: datetime, q: float, llm: str | None = None
) -> float | None:
    """The ``q``-quantile of time to first token (s) over every endpoint-hour of the fleet (of ``llm`` if given)."""
    usage = EndpointHourUsage.objects.filter(
        endpoint__node__fleet=fleet, hour_start__gte=start, hour_start__lt=end, ttft_bucket_counts__isnull=False
    )
    if llm is not None:
        usage = usage.filter(endpoint__model_name=llm)
    rows = usage.values_list("ttft_bucket_bounds_s", "ttft_bucket_counts")
    merged = histogram_merge((Histogram(tuple(bounds), tuple(counts or ())) for bounds, counts in rows), coarsen=True)
    return None if merged is None else histogram_quantile(q, merged)


@dataclass(frozen=True)
class LlmFigures:
    """One fleet's node-hours of one LLM (each demo node serves one LLM, so its lines are that LLM's)."""

    fleet: str
    llm: str
    cost: Decimal
    output_tokens: int
    it_kwh: Decimal
    gpu_h: Decimal
    idle_gpu_h: Decimal
    p99_ttft_s: float | None

    @property
    def cost_per_1m_output_tokens(self) -> Decimal | None:
        return self.cost / self.output_tokens * MILLION if self.output_tokens else None

    @property
    def j_per_output_token(self) -> Decimal | None:
        return self.it_kwh * J_PER_KWH / self.output_tokens if self.output_tokens else None

    @property
    def idle_share(self) -> Decimal | None:
        return self.idle_gpu_h / self.gpu_h if self.gpu_h else None


def llm_figures(*, organization: Organization, start: datetime, end: datetime) -> list[LlmFigures]:
    """Per fleet and LLM of the organization over ``[start, end)``, by the LLM each node's endpoint serves."""
    llm_of = dict(
        ServingEndpoint.objects.filter(node__fleet__organization=organization).values_list("node_id", "model_name")
    )
    sums: dict[tuple[str, str], list[Decimal]] = {}
    lines = NodeHourLedger.objects.filter(fleet__organization=organization, hour_start__gte=start, hour_start__lt=end)
    for fleet, node_id, cost, tokens, kwh, gpu_h, idle in lines.values_list(
        "fleet__name", "node_id", "cost", "generation_tokens", "it_kwh", "gpu_h", "idle_gpu_h"
    ):
        row = sums.setdefault((fleet, llm_of.get(node_id, "")), [Decimal(0)] * 5)
        for i, value in enumerate((cost, tokens, kwh, gpu_h, idle)):
            row[i] += value
    fleets = {fleet.name: fleet for fleet in Fleet.objects.filter(organization=organization)}
    return [
        LlmFigures(
            fleet,
            llm,
            row[0],
            int(row[1]),
            row[2],
            row[3],
            row[4],
            fleet_ttft_quantile(fleet=fleets[fleet], start=start, end=end, q=0.99, llm=llm),
        )
        for (fleet, llm), row in sorted(sums.items())
    ]
