"""Summing node-hour lines upward (node, fleet, site, GPU model, period) and the metrics on top.

Totals keep full ``Decimal`` precision: money is rounded once, for display, with
``money_quantize``. Unknowns are carried, not zeroed: electricity without a tariff
adds its kWh to ``unpriced_facility_kwh``; kWh without an intensity go to
``location_unknown_facility_kwh`` / ``market_unknown_facility_kwh``. Per-token
metrics are ``None`` (not zero, not an exception) when there are no tokens.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from decimal import Decimal
from typing import Any

from accounting.ledger.embodied import EmbodiedG
from accounting.ledger.line import ElectricityStatus, NodeHourLine
from accounting.ledger.units import S_PER_H, TOKENS_PER_MILLION, TOKENS_PER_THOUSAND, ZERO, j_from_kwh


class CurrencyMismatchError(ValueError):
    """Lines in different currencies cannot be added; convert before summing."""


def _per_token(quantity: Decimal, tokens: int, scale: Decimal) -> Decimal | None:
    return None if tokens == 0 else quantity / tokens * scale


def _ratio(part: Decimal, whole: Decimal) -> Decimal | None:
    return None if whole == 0 else part / whole


@dataclass(frozen=True)
class LedgerTotals:
    """Sums of node-hour lines in one currency. Units as on ``NodeHourLine``.

    ``currency`` is ``None`` only for the empty total. ``facility_kwh_by_location_source``
    says how much energy each intensity source covered (how much is measured).
    """

    currency: str | None = None
    lines: int = 0
    held_h: Decimal = ZERO
    gpu_h: Decimal = ZERO
    observed_s: Decimal = ZERO
    bridged_s: Decimal = ZERO
    it_kwh: Decimal = ZERO
    gpu_kwh: Decimal = ZERO
    facility_kwh: Decimal = ZERO
    electricity_cost: Decimal = ZERO
    unpriced_facility_kwh: Decimal = ZERO
    hardware_cost: Decimal = ZERO
    cost: Decimal = ZERO
    location_co2e_g: Decimal = ZERO
    location_unknown_facility_kwh: Decimal = ZERO
    market_co2e_g: Decimal = ZERO
    market_unknown_facility_kwh: Decimal = ZERO
    embodied_co2e_g: EmbodiedG = field(default_factory=EmbodiedG)
    embodied_unknown_gpu_h: Decimal = ZERO
    prompt_tokens: int = 0
    generation_tokens: int = 0
    idle_gpu_h: Decimal = ZERO
    idle_cost: Decimal = ZERO
    idle_facility_kwh: Decimal = ZERO
    facility_kwh_by_location_source: Mapping[str, Decimal] = field(default_factory=dict)

    @classmethod
    def of_line(cls, line: NodeHourLine) -> LedgerTotals:
        """The totals of a single line."""
        unpriced = line.electricity_status is ElectricityStatus.UNPRICED
        return cls(
            currency=line.currency,
            lines=1,
            held_h=line.held_h,
            gpu_h=line.gpu_h,
            observed_s=line.observed_s,
            bridged_s=line.bridged_s,
            it_kwh=line.it_kwh,
            gpu_kwh=line.gpu_kwh,
            facility_kwh=line.facility_kwh,
            electricity_cost=line.electricity_cost or ZERO,
            unpriced_facility_kwh=line.facility_kwh if unpriced else ZERO,
            hardware_cost=line.hardware_cost,
            cost=line.cost,
            location_co2e_g=line.location_co2e_g or ZERO,
            location_unknown_facility_kwh=line.facility_kwh if line.location_co2e_g is None else ZERO,
            market_co2e_g=line.market_co2e_g or ZERO,
            market_unknown_facility_kwh=line.facility_kwh if line.market_co2e_g is None else ZERO,
            embodied_co2e_g=line.embodied_co2e_g,
            embodied_unknown_gpu_h=line.embodied_unknown_gpu_h,
            prompt_tokens=line.prompt_tokens,
            generation_tokens=line.generation_tokens,
            idle_gpu_h=line.idle_gpu_h,
            idle_cost=line.idle_cost,
            idle_facility_kwh=line.idle_facility_kwh,
            facility_kwh_by_location_source={line.location_source: line.facility_kwh} if line.location_source else {},
        )

    @classmethod
    def sum(cls, lines: Iterable[NodeHourLine]) -> LedgerTotals:
        """Totals of ``lines``, added in the order given."""
        totals = cls()
        for line in lines:
            totals = totals.add(line)
        return totals

    def add(self, line: NodeHourLine) -> LedgerTotals:
        """These totals plus one line."""
        return self.merge(LedgerTotals.of_line(line))

    def merge(self, other: LedgerTotals) -> LedgerTotals:
        """These totals plus other totals (a roll-up of roll-ups). Mixed currencies raise."""
        summed: dict[str, Any] = {
            f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self) if f.name not in _NOT_SUMMED
        }
        sources = dict(self.facility_kwh_by_location_source)
        for source, kwh in other.facility_kwh_by_location_source.items():
            sources[source] = sources.get(source, ZERO) + kwh
        return LedgerTotals(
            currency=_same_currency(self.currency, other.currency), facility_kwh_by_location_source=sources, **summed
        )

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.generation_tokens

    @property
    def cost_per_1m_tokens(self) -> Decimal | None:
        """Cost (currency) per million tokens; ``None`` without tokens."""
        return _per_token(self.cost, self.tokens, TOKENS_PER_MILLION)

    @property
    def it_j_per_token(self) -> Decimal | None:
        """IT energy (before PUE) in J per token: the node boundary where metered, else the GPU boundary."""
        return _per_token(j_from_kwh(self.it_kwh), self.tokens, Decimal(1))

    @property
    def gpu_j_per_token(self) -> Decimal | None:
        """GPU-boundary energy (the boards, as NVML measures them) in J per token; ``None`` without tokens."""
        return _per_token(j_from_kwh(self.gpu_kwh), self.tokens, Decimal(1))

    @property
    def facility_j_per_token(self) -> Decimal | None:
        """Facility energy (after PUE) in J per token; ``None`` without tokens."""
        return _per_token(j_from_kwh(self.facility_kwh), self.tokens, Decimal(1))

    @property
    def sci_g_per_1k_tokens(self) -> Decimal | None:
        """SCI: (location-based operational g + central embodied g) / tokens x 1000; ``None`` without tokens."""
        return _per_token(self.location_co2e_g + self.embodied_co2e_g.central, self.tokens, TOKENS_PER_THOUSAND)

    @property
    def market_g_per_1k_tokens(self) -> Decimal | None:
        """(market-based operational g + central embodied g) / tokens x 1000; ``None`` without tokens."""
        return _per_token(self.market_co2e_g + self.embodied_co2e_g.central, self.tokens, TOKENS_PER_THOUSAND)

    @property
    def idle_share(self) -> Decimal | None:
        """Idle GPU-hours / GPU-hours held (0-1); ``None`` when no GPU was held."""
        return _ratio(self.idle_gpu_h, self.gpu_h)

    @property
    def idle_cost_share(self) -> Decimal | None:
        """Idle cost / cost (0-1); ``None`` when nothing cost anything."""
        return _ratio(self.idle_cost, self.cost)

    @property
    def coverage(self) -> Decimal | None:
        """Observed seconds / held seconds (0-1): how much of the held time was measured."""
        return _ratio(self.observed_s, self.held_h * S_PER_H)


_NOT_SUMMED = frozenset({"currency", "facility_kwh_by_location_source"})


def _same_currency(a: str | None, b: str | None) -> str | None:
    if a is not None and b is not None and a != b:
        raise CurrencyMismatchError(f"cannot add {a} to {b}")
    return a if a is not None else b
