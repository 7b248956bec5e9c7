"""Report figures derived from summed ledger lines and hourly usage. Pure: no Django.

The sums themselves are ``accounting.ledger.LedgerTotals`` (its per-token and
share properties are reused as they are); ``LedgerSums`` adds what a SQL sum
knows and ``LedgerTotals`` does not: whether any line had a value at all, so
that an unknown total shows as ``None``, never as zero.

Units as in the ledger: money in the row's currency, energy kWh, carbon gCO2e,
time hours (``*_s``: seconds). Nothing is rounded here.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any

from accounting.ledger import ElectricityStatus, LedgerTotals
from accounting.ledger.line import NO_PRICE_ID, EnergyMethod
from accounting.ledger.totals import KNOWN, Prefix, conditions_hold, summed, summed_fields
from accounting.ledger.units import ZERO
from reports.latency import ShareWithin
from reports.serving import ServingSums
from reports.sharing import SHARING_NOTE

G_PER_1K_TO_G_PER_1M = Decimal(1000)


def ratio(value: Decimal | float | None, baseline: Decimal | float | None) -> float | None:
    """``value / baseline``; ``None`` when either is unknown or the baseline is zero."""
    if value is None or baseline is None or baseline == 0:
        return None
    return float(value) / float(baseline)


# The kind of an hour's grid intensity, from its ledger line: the annual average standing in
# for a missing hour, simulated values (the demo's), the organization's uploaded hourly values;
# any other known value is a live provider's. One rule for the sums and for each line's label.
GRID_KINDS: dict[str, tuple[tuple[str, Any], ...]] = {
    "annual": (("location_is_fallback", True),),
    "simulated": (("location_is_fallback", False), ("location_source", Prefix("simulated"))),
    "upload": (("location_is_fallback", False), ("location_source", Prefix("csv:"))),
}
_LOCATION_KNOWN = ("location_co2e_g", KNOWN)


def grid_kind(columns: Mapping[str, Any]) -> str:
    """live, upload, annual, simulated or unknown: the kind of intensity a stored line was weighed with."""
    if columns["location_co2e_g"] is None:
        return "unknown"
    return next((kind for kind, where in GRID_KINDS.items() if conditions_hold(where, columns)), "live")


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
    NVML counter vs integrated from power samples. ``cached_prompt_tokens_sum``: prompt
    tokens served from the prefix cache, over the lines whose servers expose the
    counter (``prompt_tokens_cache_known`` prompt tokens); ``cached_known``: any did.
    """

    totals: LedgerTotals = field(default_factory=LedgerTotals)
    electricity_known: bool = False
    location_known: bool = False
    market_known: bool = False
    cached_known: bool = False
    # Counted in SQL with a condition the declaration cannot say (any telemetry at all): see aggregates.
    unpriced_hours: int = 0
    # Sums the stored lines hold beyond the ledger's own (declared as LedgerTotals' are).
    hardware_unpriced_h: Decimal = summed("held_h", where=(("pricing_price_id", NO_PRICE_ID),))
    electricity_unpriced_h: Decimal = summed("held_h", where=(("electricity_status", ElectricityStatus.UNPRICED),))
    # Node-hours whose price is in another currency with no rate held: their hardware cost is kept apart on
    # the line (``hardware_cost_unconverted``), not in cost, and never zero.
    hardware_unconverted_h: Decimal = summed("held_h", where=(("hardware_cost_unconverted", KNOWN),))
    # Node-hours priced gross (VAT included) with no site tax in force: kept as they are, VAT not taken out.
    vat_unknown_h: Decimal = summed("held_h", where=(("vat_unknown", True),))
    node_metered_kwh: Decimal = summed("it_kwh", where=(("energy_method", EnergyMethod.NODE_METER),))
    node_modelled_kwh: Decimal = summed("it_kwh", where=(("energy_method", EnergyMethod.MODELLED),))
    energy_counter_j: float = summed(default=0.0)
    cached_prompt_tokens_sum: int = summed("cached_prompt_tokens", default=0)
    prompt_tokens_cache_known: int = summed("prompt_tokens", where=(("cached_prompt_tokens", KNOWN),), default=0)
    energy_integrated_j: float = summed(default=0.0)
    # Facility kWh by the kind of location intensity they were weighed with (the rest known is live).
    location_annual_facility_kwh: Decimal = summed("facility_kwh", where=(_LOCATION_KNOWN, *GRID_KINDS["annual"]))
    location_simulated_facility_kwh: Decimal = summed("facility_kwh", where=(_LOCATION_KNOWN, *GRID_KINDS["simulated"]))
    location_upload_facility_kwh: Decimal = summed("facility_kwh", where=(_LOCATION_KNOWN, *GRID_KINDS["upload"]))

    @property
    def electricity_cost(self) -> Decimal | None:
        return self.totals.electricity_cost if self.electricity_known else None

    @property
    def location_co2e_g(self) -> Decimal | None:
        return self.totals.location_co2e_g if self.location_known else None

    @property
    def cached_prompt_tokens(self) -> int | None:
        """Prompt tokens served from the prefix cache (within ``prompt_tokens``); ``None`` where no server says."""
        return self.cached_prompt_tokens_sum if self.cached_known else None

    @property
    def prefix_cache_hit_share(self) -> float | None:
        """Cached / prompt tokens (0-1), over the lines whose servers expose the prefix-cache counter."""
        return ratio(self.cached_prompt_tokens, self.prompt_tokens_cache_known)

    @property
    def market_co2e_g(self) -> Decimal | None:
        return self.totals.market_co2e_g if self.market_known else None

    @property
    def sci_g_per_1k_tokens(self) -> Decimal | None:
        """SCI: (location-based operational + central embodied) gCO2e / tokens x 1000.

        ``None`` without tokens, and where any kWh has no grid intensity or any GPU-hour no embodied
        figure (``LedgerTotals.sci_complete``: the rule of every carbon figure per token; ``carbon_per_token_note``
        says why).
        """
        return self.totals.sci_g_per_1k_tokens

    @property
    def sci_g_per_1k_output_tokens(self) -> Decimal | None:
        """(location-based operational + central embodied) gCO2e / output (generation) tokens x 1000; ``None``
        as ``sci_g_per_1k_tokens``."""
        return self.totals.sci_g_per_1k_output_tokens

    @property
    def carbon_per_token_note(self) -> str | None:
        """Why the carbon figures per token are withheld (kWh without an intensity, GPU-hours without an embodied
        figure, as SCI's reason says it); ``None`` where nothing is missing."""
        return "; ".join(self.totals.sci_gaps) or None

    @property
    def g_per_1m_tokens(self) -> Decimal | None:
        """The SCI per million tokens (input + output): (location + central embodied) gCO2e / tokens x 1e6."""
        sci = self.sci_g_per_1k_tokens
        return None if sci is None else sci * G_PER_1K_TO_G_PER_1M

    @property
    def g_per_1m_output_tokens(self) -> Decimal | None:
        """(location + central embodied) gCO2e / output (generation) tokens x 1e6."""
        sci = self.sci_g_per_1k_output_tokens
        return None if sci is None else sci * G_PER_1K_TO_G_PER_1M

    @property
    def pue(self) -> Decimal | None:
        """Energy-weighted PUE: facility kWh / IT kWh; ``None`` without IT energy."""
        return None if self.totals.it_kwh == 0 else self.totals.facility_kwh / self.totals.it_kwh

    @property
    def location_gco2e_per_kwh(self) -> Decimal | None:
        """The grid intensity the location-based carbon was weighed with, energy-weighted (g/kWh).

        For one node-hour, that hour's value. ``None`` when no kWh had an intensity.
        """
        known_kwh = self.totals.facility_kwh - self.totals.location_unknown_facility_kwh
        return None if known_kwh == 0 or not self.location_known else self.totals.location_co2e_g / known_kwh

    def grid_kind_shares(self) -> dict[str, float | None]:
        """Share (0-1) of facility kWh weighed with each kind of grid intensity: live, upload (the
        organization's own hourly values), annual (average standing in), simulated (demo), unknown."""
        totals = self.totals
        known = totals.facility_kwh - totals.location_unknown_facility_kwh
        parts = {
            "annual": self.location_annual_facility_kwh,
            "simulated": self.location_simulated_facility_kwh,
            "upload": self.location_upload_facility_kwh,
        }
        live = known - sum(parts.values(), ZERO)
        kinds = {"live": live, **parts, "unknown": totals.location_unknown_facility_kwh}
        return {kind: ratio(kwh, totals.facility_kwh) for kind, kwh in kinds.items()}

    @property
    def node_meter_share(self) -> float | None:
        """Share (0-1) of IT energy measured by a node meter (the node boundary, measured)."""
        return ratio(self.node_metered_kwh, self.totals.it_kwh)

    @property
    def node_modelled_share(self) -> float | None:
        """Share (0-1) of IT energy at the node boundary with the host modelled; the rest beyond the metered
        share is the GPUs' board energy alone (the GPU boundary)."""
        return ratio(self.node_modelled_kwh, self.totals.it_kwh)

    @property
    def energy_counter_share(self) -> float | None:
        """Share (0-1) of GPU energy measured by the NVML energy counter; the rest was integrated."""
        whole = self.energy_counter_j + self.energy_integrated_j
        return None if whole == 0 else self.energy_counter_j / whole


_SUMS_SUMMED = summed_fields(LedgerSums)


def ledger_sums_merge(a: LedgerSums, b: LedgerSums) -> LedgerSums:
    """Two ``LedgerSums`` added: the sums of the lines of both (``LedgerTotals.merge`` raises on mixed currencies)."""
    return LedgerSums(
        totals=a.totals.merge(b.totals),
        electricity_known=a.electricity_known or b.electricity_known,
        location_known=a.location_known or b.location_known,
        market_known=a.market_known or b.market_known,
        cached_known=a.cached_known or b.cached_known,
        unpriced_hours=a.unpriced_hours + b.unpriced_hours,
        **{name: getattr(a, name) + getattr(b, name) for name in _SUMS_SUMMED},
    )


def ledger_sums_share(sums: LedgerSums, share: Decimal, counts: Mapping[str, int]) -> LedgerSums:
    """``share`` (0-1) of summed lines (``sharing.idle_shares``): every amount and energy times ``share``; token
    counts as given in ``counts`` (whole numbers, ``sharing.whole_parts``); counts of node-hours whole (the part
    had a share of each of them)."""

    def part(name: str, value: Any) -> Any:
        if name in counts:
            return counts[name]
        if isinstance(value, Decimal):
            return value * share
        return value * float(share) if isinstance(value, float) else value

    totals = sums.totals
    shared_totals = replace(
        totals,
        facility_kwh_by_location_source={k: v * share for k, v in totals.facility_kwh_by_location_source.items()},
        **{name: part(name, getattr(totals, name)) for name in _TOTALS_SUMMED},
    )
    return replace(sums, totals=shared_totals, **{name: part(name, getattr(sums, name)) for name in _SUMS_SUMMED})


# The token counts of summed lines: shared in whole numbers (``ledger_sums_share``).
TOKEN_COUNTS = ("prompt_tokens", "generation_tokens", "cached_prompt_tokens_sum", "prompt_tokens_cache_known")
_TOTALS_SUMMED = summed_fields(LedgerTotals)


def ledger_sums_counts(sums: LedgerSums) -> dict[str, int]:
    """The token counts (``TOKEN_COUNTS``) of summed lines."""
    return {name: getattr(sums.totals if name in _TOTALS_SUMMED else sums, name) for name in TOKEN_COUNTS}


@dataclass(frozen=True)
class UtilizationSums:
    """GPU utilization weighted by observed seconds: sum(mean_util_pct x observed_s) and sum(observed_s)."""

    pct_s: float = 0.0
    observed_s: float = 0.0

    @property
    def mean_pct(self) -> float | None:
        return None if self.observed_s == 0 else self.pct_s / self.observed_s

    def share(self, share: Decimal) -> UtilizationSums:
        """``share`` of these sums: the same mean utilization, weighing ``share`` of the seconds."""
        return UtilizationSums(self.pct_s * float(share), self.observed_s * float(share))


# The ledger's allocation to LLM models: the sharing rule's own words (``reports.sharing``).
ALLOCATION_NOTE = SHARING_NOTE


class LedgerAllocation(enum.StrEnum):
    """How a comparison row's ledger figures (cost, energy, carbon, GPU-hours, idle) came to it.

    ``whole``: the row's node-hours in full (per fleet, per GPU model).
    ``output_token_share``: per LLM model, each node-hour's figures allocated to the
    LLM models served on the node in that hour in proportion to their output tokens.
    ``no_output_tokens``: the node-hours of the fleet and GPU model that served no
    output token, attributed to no LLM model (idle), so that the rows add up.
    """

    WHOLE = "whole"
    ALLOCATED = "output_token_share"
    UNATTRIBUTED = "no_output_tokens"


@dataclass(frozen=True)
class ComparisonStats:
    """One fleet (or one fleet's GPU model) over a period: ledger sums, serving and utilization.

    ``gpu_model``: the profile key (``"mixed"`` for a fleet of several models,
    ``None`` for hours whose node-hour has no ledger line yet); ``gpu_class``:
    enterprise or consumer, from the hardware profile; ``embodied_sources``: the
    catalog's (or the organization's) sources of the model's embodied factors.
    ``llm_model``: the LLM model served (per LLM model rows), ``allocation`` how the
    ledger sums were attributed to the row (see ``LedgerAllocation``);
    ``goodput_ttft_target_s``: the TTFT target the fleet's organization set.
    """

    fleet_id: int
    fleet_name: str
    gpu_model: str | None
    gpu_class: str | None
    sums: LedgerSums
    serving: ServingSums
    utilization: UtilizationSums
    embodied_sources: str | None = None
    llm_model: str | None = None
    allocation: LedgerAllocation = LedgerAllocation.WHOLE
    goodput_ttft_target_s: float | None = None

    @property
    def requests_per_s(self) -> float | None:
        return self.serving.requests_per_s

    @property
    def ttft_mean_s(self) -> float | None:
        return self.serving.ttft_mean_s

    @property
    def goodput(self) -> ShareWithin | None:
        """The share of requests within the TTFT target (``None`` without a target or a histogram)."""
        target = self.goodput_ttft_target_s
        return None if target is None else self.serving.ttft_within(target)

    @property
    def location_g_per_1m_output_tokens(self) -> Decimal | None:
        """Operational (location-based) gCO2e per 1M output tokens; ``None`` without output tokens and where some
        kWh have no grid intensity (``LedgerTotals.location_g_per_1m_output_tokens``)."""
        return self.sums.totals.location_g_per_1m_output_tokens

    def embodied_g_per_1m_output_tokens(self, estimate: str = "central") -> Decimal | None:
        """Embodied gCO2e (``low``, ``central`` or ``high``) per 1M output tokens; ``None`` without output tokens
        and where some GPU-hours have no embodied figure."""
        return self.sums.totals.embodied_g_per_1m_output_tokens(estimate)

    @property
    def embodied_central_g_per_1m_output_tokens(self) -> Decimal | None:
        return self.embodied_g_per_1m_output_tokens("central")

    # Each grid intensity source with its share of the row's facility kWh ("source=share; ..."), when traced.
    location_sources: str | None = None
    # The row's lines by GPU model and intensity source (``selectors.trace.TracePart``), allocated as its
    # sums are per LLM model: what ``location_sources`` and ``embodied_sources`` were traced from.
    trace_parts: tuple[Any, ...] = ()

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
    def ttft_p90_s(self) -> float | None:
        return self.serving.ttft_quantile_s(0.9)

    @property
    def ttft_p99_s(self) -> float | None:
        return self.serving.ttft_quantile_s(0.99)

    @property
    def cost_per_1m_output_tokens(self) -> Decimal | None:
        return self.sums.totals.cost_per_1m_output_tokens

    @property
    def cost_per_1m_tokens(self) -> Decimal | None:
        return self.sums.totals.cost_per_1m_tokens

    @property
    def it_j_per_output_token(self) -> Decimal | None:
        return self.sums.totals.it_j_per_output_token

    @property
    def it_j_per_token(self) -> Decimal | None:
        return self.sums.totals.it_j_per_token

    @property
    def g_per_1m_output_tokens(self) -> Decimal | None:
        return self.sums.g_per_1m_output_tokens

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
# Per output token first: the figure the comparison leads with.
COMPARED_METRICS = (
    "generation_tokens_per_s",
    "tokens_per_s",
    "ttft_mean_s",
    "ttft_p50_s",
    "ttft_p90_s",
    "ttft_p99_s",
    "cost_per_1m_output_tokens",
    "cost_per_1m_tokens",
    "it_j_per_output_token",
    "it_j_per_token",
    "g_per_1m_output_tokens",
    "location_g_per_1m_output_tokens",
    "embodied_central_g_per_1m_output_tokens",
    "g_per_1m_tokens",
    "mean_util_pct",
    "idle_share",
)
_MONEY_METRICS = frozenset({"cost_per_1m_output_tokens", "cost_per_1m_tokens"})
_TTFT_METRICS = frozenset({"ttft_mean_s", "ttft_p50_s", "ttft_p90_s", "ttft_p99_s"})


class BaselineBasis(enum.StrEnum):
    """What a comparison row's ratios (``*_vs_baseline``) divide by.

    ``baseline_fleet``: the baseline fleet as a whole (rows per fleet, per GPU model).
    ``same_llm_model``: per LLM model, the baseline fleet's rows of the same LLM model
    (whatever their GPU model) added up; an idle row, the baseline fleet's idle rows.
    ``no_baseline_row``: per LLM model, the baseline fleet has no row of that LLM model:
    every ratio is null.
    """

    FLEET = "baseline_fleet"
    SAME_LLM_MODEL = "same_llm_model"
    NO_BASELINE_ROW = "no_baseline_row"


@dataclass(frozen=True)
class ComparisonRow:
    """A fleet's figures and, when a baseline fleet was named, each as a ratio to the baseline's.

    ``baseline_basis``: what ``baseline`` is (``None`` without a baseline fleet).
    """

    stats: ComparisonStats
    baseline: ComparisonStats | None
    baseline_basis: BaselineBasis | None = None

    @property
    def vs_baseline(self) -> dict[str, float | None]:
        """``metric -> value / baseline value``; ``None`` where undefined, for money in another currency, and
        for TTFT on another basis (measured against a lower bound)."""
        return {name: self._ratio(name) for name in COMPARED_METRICS}

    def _ratio(self, name: str) -> float | None:
        if self.baseline is None:
            return None
        if name in _MONEY_METRICS and self.stats.currency != self.baseline.currency:
            return None
        if name in _TTFT_METRICS and self.stats.serving.ttft_basis is not self.baseline.serving.ttft_basis:
            return None  # TGI's queue time (a lower bound) and a measured TTFT are not the same quantity
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
