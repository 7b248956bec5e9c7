"""Report figures derived from summed ledger lines and hourly usage. Pure: no Django.

The sums themselves are ``accounting.ledger.LedgerTotals`` (its per-token and
share properties are reused as they are); ``LedgerSums`` adds what a SQL sum
knows and ``LedgerTotals`` does not: whether any line had a value at all, so
that an unknown total shows as ``None``, never as zero.

Units as in the ledger: money in the row's currency, energy kWh, carbon gCO2e,
time hours (``*_s``: seconds). Nothing is rounded here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal

from accounting.ledger import LedgerTotals
from accounting.ledger.units import ZERO
from telemetry.histogram import Histogram, histogram_quantile

TOKENS_PER_MILLION = 1_000_000
G_PER_1K_TO_G_PER_1M = Decimal(1000)


def ratio(value: Decimal | float | None, baseline: Decimal | float | None) -> float | None:
    """``value / baseline``; ``None`` when either is unknown or the baseline is zero."""
    if value is None or baseline is None or baseline == 0:
        return None
    return float(value) / float(baseline)


@dataclass(frozen=True)
class LedgerSums:
    """Summed ledger lines in one currency (``totals.currency``; ``None`` for carbon-only sums).

    ``*_known``: at least one line had the value (electricity priced or included,
    a location intensity, a market factor). ``hardware_unpriced_h``: node-hours
    held with no price in force (their hardware cost is missing, not zero);
    ``electricity_unpriced_h``: node-hours with no tariff in force.
    ``unpriced_hours``: node-hours with telemetry but no price, asset (the node
    not held: before commissioning) or tariff in force: counted, never free.
    ``energy_counter_j`` / ``energy_integrated_j``: GPU energy measured by the
    NVML counter vs integrated from power samples.
    """

    totals: LedgerTotals = field(default_factory=LedgerTotals)
    electricity_known: bool = False
    location_known: bool = False
    market_known: bool = False
    hardware_unpriced_h: Decimal = ZERO
    electricity_unpriced_h: Decimal = ZERO
    unpriced_hours: int = 0
    node_metered_kwh: Decimal = ZERO
    node_modelled_kwh: Decimal = ZERO
    energy_counter_j: float = 0.0
    energy_integrated_j: float = 0.0

    @property
    def electricity_cost(self) -> Decimal | None:
        return self.totals.electricity_cost if self.electricity_known else None

    @property
    def location_co2e_g(self) -> Decimal | None:
        return self.totals.location_co2e_g if self.location_known else None

    @property
    def market_co2e_g(self) -> Decimal | None:
        return self.totals.market_co2e_g if self.market_known else None

    @property
    def sci_g_per_1k_tokens(self) -> Decimal | None:
        """SCI: (location-based operational + central embodied) gCO2e / tokens x 1000.

        ``None`` without tokens, and when no line had a location intensity
        (embodied alone would understate it).
        """
        return self.totals.sci_g_per_1k_tokens if self.location_known else None

    @property
    def g_per_1m_tokens(self) -> Decimal | None:
        """The SCI per million tokens: (location + central embodied) gCO2e / tokens x 1e6."""
        sci = self.sci_g_per_1k_tokens
        return None if sci is None else sci * G_PER_1K_TO_G_PER_1M

    @property
    def pue(self) -> Decimal | None:
        """Energy-weighted PUE: facility kWh / IT kWh; ``None`` without IT energy."""
        return None if self.totals.it_kwh == 0 else self.totals.facility_kwh / self.totals.it_kwh

    @property
    def energy_counter_share(self) -> float | None:
        """Share (0-1) of GPU energy measured by the NVML energy counter; the rest was integrated."""
        whole = self.energy_counter_j + self.energy_integrated_j
        return None if whole == 0 else self.energy_counter_j / whole


def ledger_sums_merge(a: LedgerSums, b: LedgerSums) -> LedgerSums:
    """Two ``LedgerSums`` added: the sums of the lines of both (``LedgerTotals.merge`` raises on mixed currencies)."""
    return LedgerSums(
        totals=a.totals.merge(b.totals),
        electricity_known=a.electricity_known or b.electricity_known,
        location_known=a.location_known or b.location_known,
        market_known=a.market_known or b.market_known,
        hardware_unpriced_h=a.hardware_unpriced_h + b.hardware_unpriced_h,
        unpriced_hours=a.unpriced_hours + b.unpriced_hours,
        node_metered_kwh=a.node_metered_kwh + b.node_metered_kwh,
        node_modelled_kwh=a.node_modelled_kwh + b.node_modelled_kwh,
        electricity_unpriced_h=a.electricity_unpriced_h + b.electricity_unpriced_h,
        energy_counter_j=a.energy_counter_j + b.energy_counter_j,
        energy_integrated_j=a.energy_integrated_j + b.energy_integrated_j,
    )


@dataclass(frozen=True)
class ServingSums:
    """Hourly serving usage summed: tokens and seconds of endpoint-hours that served tokens, TTFT merged.

    ``serving_s`` counts the observed seconds of endpoint-hours with at least one
    token, so throughput is tokens per second *while serving*.
    """

    serving_s: float = 0.0
    prompt_tokens: int = 0
    generation_tokens: int = 0
    ttft: Histogram | None = None

    @property
    def tokens_per_s(self) -> float | None:
        tokens = self.prompt_tokens + self.generation_tokens
        return None if self.serving_s == 0 else tokens / self.serving_s

    @property
    def generation_tokens_per_s(self) -> float | None:
        return None if self.serving_s == 0 else self.generation_tokens / self.serving_s

    def ttft_quantile_s(self, q: float) -> float | None:
        return None if self.ttft is None else histogram_quantile(q, self.ttft)


@dataclass(frozen=True)
class UtilizationSums:
    """GPU utilization weighted by observed seconds: sum(mean_util_pct x observed_s) and sum(observed_s)."""

    pct_s: float = 0.0
    observed_s: float = 0.0

    @property
    def mean_pct(self) -> float | None:
        return None if self.observed_s == 0 else self.pct_s / self.observed_s


@dataclass(frozen=True)
class ComparisonStats:
    """One fleet (or one fleet's GPU model) over a period: ledger sums, serving and utilization.

    ``gpu_model``: the profile key (``"mixed"`` for a fleet of several models,
    ``None`` for hours whose node-hour has no ledger line yet); ``gpu_class``:
    enterprise or consumer, from the hardware profile.
    """

    fleet_id: int
    fleet_name: str
    gpu_model: str | None
    gpu_class: str | None
    sums: LedgerSums
    serving: ServingSums
    utilization: UtilizationSums

    @property
    def currency(self) -> str | None:
        return self.sums.totals.currency

    @property
    def tokens_per_s(self) -> float | None:
        return self.serving.tokens_per_s

    @property
    def generation_tokens_per_s(self) -> float | None:
        return self.serving.generation_tokens_per_s

    @property
    def ttft_p50_s(self) -> float | None:
        return self.serving.ttft_quantile_s(0.5)

    @property
    def ttft_p99_s(self) -> float | None:
        return self.serving.ttft_quantile_s(0.99)

    @property
    def cost_per_1m_tokens(self) -> Decimal | None:
        return self.sums.totals.cost_per_1m_tokens

    @property
    def it_j_per_token(self) -> Decimal | None:
        return self.sums.totals.it_j_per_token

    @property
    def g_per_1m_tokens(self) -> Decimal | None:
        return self.sums.g_per_1m_tokens

    @property
    def mean_util_pct(self) -> float | None:
        return self.utilization.mean_pct

    @property
    def idle_share(self) -> Decimal | None:
        return self.sums.totals.idle_share


# What the comparison puts beside the baseline, as ratios (value / baseline value).
COMPARED_METRICS = (
    "tokens_per_s",
    "generation_tokens_per_s",
    "ttft_p50_s",
    "ttft_p99_s",
    "cost_per_1m_tokens",
    "it_j_per_token",
    "g_per_1m_tokens",
    "mean_util_pct",
    "idle_share",
)
_MONEY_METRICS = frozenset({"cost_per_1m_tokens"})


@dataclass(frozen=True)
class ComparisonRow:
    """A fleet's figures and, when a baseline fleet was named, each as a ratio to the baseline's."""

    stats: ComparisonStats
    baseline: ComparisonStats | None

    @property
    def vs_baseline(self) -> dict[str, float | None]:
        """``metric -> value / baseline value``; ``None`` where undefined, and for money in another currency."""
        return {name: self._ratio(name) for name in COMPARED_METRICS}

    def _ratio(self, name: str) -> float | None:
        if self.baseline is None:
            return None
        if name in _MONEY_METRICS and self.stats.currency != self.baseline.currency:
            return None
        return ratio(getattr(self.stats, name), getattr(self.baseline, name))


@dataclass(frozen=True)
class GridQuality:
    """Facility energy and node-hours by the kind of location intensity they were weighed with.

    hourly: a live provider's or an uploaded hourly value; annual: the shipped
    yearly average standing in for a missing hour; unknown: no intensity at all.
    """

    hourly_facility_kwh: Decimal = ZERO
    annual_facility_kwh: Decimal = ZERO
    unknown_facility_kwh: Decimal = ZERO
    hourly_h: Decimal = ZERO
    annual_h: Decimal = ZERO
    unknown_h: Decimal = ZERO

    @property
    def _facility_kwh(self) -> Decimal:
        return self.hourly_facility_kwh + self.annual_facility_kwh + self.unknown_facility_kwh

    def energy_share(self, part: Decimal) -> float | None:
        return ratio(part, self._facility_kwh)
