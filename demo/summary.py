"""What the demo shows, per fleet, from the stored ledger and hourly usage: a selector (reads only)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from accounting.ledger import J_PER_KWH
from accounting.models import NodeHourLedger
from fleets.models import Fleet, Organization
from telemetry.histogram import Histogram, histogram_merge, histogram_quantile
from telemetry.models import EndpointHourUsage

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


def fleet_ttft_quantile(*, fleet: Fleet, start: datetime, end: datetime, q: float) -> float | None:
    """The ``q``-quantile of time to first token (s) over every endpoint-hour of the fleet."""
    rows = EndpointHourUsage.objects.filter(
        endpoint__node__fleet=fleet, hour_start__gte=start, hour_start__lt=end, ttft_bucket_counts__isnull=False
    ).values_list("ttft_bucket_bounds_s", "ttft_bucket_counts")
    merged = histogram_merge((Histogram(tuple(bounds), tuple(counts or ())) for bounds, counts in rows), coarsen=True)
    return None if merged is None else histogram_quantile(q, merged)
