"""Summing node-hour lines upward (node, fleet, site, GPU model, period) and the metrics on top.

Totals keep full ``Decimal`` precision: money is rounded once, for display, with
``money_quantize``. Unknowns are carried, not zeroed: electricity without a tariff
adds its kWh to ``unpriced_facility_kwh``; kWh without an intensity go to
``location_unknown_facility_kwh`` / ``market_unknown_facility_kwh``. Per-token
metrics are ``None`` (not zero, not an exception) when there are no tokens.
Carbon per token is ``None`` too while any part of it is unknown
(``carbon_per_token_complete``: the one rule of every report's carbon per token).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from decimal import Decimal
from typing import Any

from accounting.ledger.embodied import EmbodiedG
from accounting.ledger.line import ElectricityStatus, NodeHourLine, line_columns
from accounting.ledger.units import S_PER_H, TOKENS_PER_THOUSAND, ZERO, j_from_kwh, per_1m


class CurrencyMismatchError(ValueError):
    """Lines in different currencies cannot be added; convert before summing."""


def _per_token(quantity: Decimal, tokens: int, scale: Decimal) -> Decimal | None:
    return None if tokens == 0 else quantity / tokens * scale


def _ratio(part: Decimal, whole: Decimal) -> Decimal | None:
    return None if whole == 0 else part / whole


# Why a carbon figure per token is withheld (``carbon_per_token_gaps``): the words every report and page uses.
INTENSITY_GAP = "intensity coverage incomplete: {kwh} of {total} facility kWh have no {factor}"
EMBODIED_GAP = "embodied coverage incomplete: {h} GPU-hours are of models without an embodied figure"
GRID_INTENSITY = "grid intensity"  # location-based figures
MARKET_FACTOR = "market factor"  # market-based figures


def carbon_per_token_complete(*, unknown_intensity_kwh: Decimal = ZERO, embodied_unknown_gpu_h: Decimal = ZERO) -> bool:
    """Whether a carbon figure per token (gCO2e per 1k or 1M tokens or output tokens, SCI per R) may be stated.

    The one rule, for every report, page and load band. Such a figure is a rate of a whole: the carbon of
    kWh without an intensity (of the figure's basis: a grid intensity for location-based figures, a market
    factor for market-based ones), or of GPU-hours of a model without an embodied figure (where embodied
    carbon is part of the figure), would be left out while their tokens stay in the denominator (understated),
    and scaling the known part up to the whole would be an estimate. So the figure is withheld (``None``)
    while any of its kWh or GPU-hours is unknown, and what is unknown is said beside it
    (``carbon_per_token_gaps``), as SCI does. Totals of gCO2e are not rates: they keep the known part, with
    the unknown kWh beside them.

    ``unknown_intensity_kwh``: the figure's facility kWh without an intensity (left out for embodied carbon
    alone); ``embodied_unknown_gpu_h``: its GPU-hours without an embodied figure (left out for operational
    carbon alone).
    """
    return unknown_intensity_kwh <= 0 and embodied_unknown_gpu_h <= 0


def carbon_per_token_gaps(
    *,
    facility_kwh: Decimal,
    unknown_intensity_kwh: Decimal = ZERO,
    embodied_unknown_gpu_h: Decimal = ZERO,
    factor: str = GRID_INTENSITY,
) -> tuple[str, ...]:
    """Why ``carbon_per_token_complete`` withholds a figure: one reason per unknown part (none: it is stated).

    ``facility_kwh``: all of the figure's facility kWh; ``factor``: what its unknown kWh lack (``GRID_INTENSITY``,
    ``MARKET_FACTOR``)."""
    gaps = []
    if not carbon_per_token_complete(unknown_intensity_kwh=unknown_intensity_kwh):
        kwh, total = _plain(unknown_intensity_kwh), _plain(facility_kwh)
        gaps.append(INTENSITY_GAP.format(kwh=kwh, total=total, factor=factor))
    if not carbon_per_token_complete(embodied_unknown_gpu_h=embodied_unknown_gpu_h):
        gaps.append(EMBODIED_GAP.format(h=_plain(embodied_unknown_gpu_h)))
    return tuple(gaps)


def _plain(value: Decimal | float) -> str:
    """A quantity in a sentence: up to 6 significant digits, no trailing zeros (1.8, 9.36)."""
    return f"{float(value):g}"


@dataclass(frozen=True)
class Summed:
    """How one total is summed from node-hour lines: the one declaration every sum reads.

    The total is the sum, over the lines where every ``where`` condition holds, of
    the product of the line ``columns`` (``()``: 1 per line, a count; ``None``: the
    field's own name). A condition is ``(column, value)``: the column equals
    ``value``; ``None``: it is unknown; ``KNOWN``: it is not; ``Prefix(text)``: it
    starts with ``text``. Column names are those of the flat line
    (``line_columns``), which are also the stored ledger's. ``money``: an amount
    in the line's currency, never added across currencies.

    ``LedgerTotals.of_line`` applies it to one line; ``reports.aggregates``
    turns it into SQL sums over the stored lines and reads them back by name.
    """

    columns: tuple[str, ...] | None = None
    where: tuple[tuple[str, Any], ...] = ()
    money: bool = False

    def of(self, columns: Mapping[str, Any]) -> Any:
        """This total for one line, given its flat columns (an unknown value adds nothing)."""
        if not conditions_hold(self.where, columns):
            return 0
        value: Any = 1
        for column in self.columns or ():
            value *= columns[column] if columns[column] is not None else 0
        return value


@dataclass(frozen=True)
class Prefix:
    """A condition of ``Summed.where``: the text column starts with ``text``."""

    text: str


KNOWN = object()
"""A condition of ``Summed.where``: the column has a value."""


def conditions_hold(where: tuple[tuple[str, Any], ...], columns: Mapping[str, Any]) -> bool:
    """Whether every ``(column, value)`` condition (as in ``Summed.where``) holds for a line's columns."""
    return all(_holds(columns[column], value) for column, value in where)


def _holds(actual: Any, expected: Any) -> bool:
    if expected is KNOWN:
        return actual is not None
    if isinstance(expected, Prefix):
        return isinstance(actual, str) and actual.startswith(expected.text)
    return bool(actual == expected) if expected is not None else actual is None


def summed(*columns: str, where: tuple[tuple[str, Any], ...] = (), money: bool = False, default: Any = ZERO) -> Any:
    """A dataclass field of summed totals (see ``Summed``); no column given: the field's own name."""
    return field(default=default, metadata={"summed": Summed(columns or None, where, money)})


def summed_fields(cls: type) -> dict[str, tuple[Summed, Any]]:
    """Field name → (how it is summed, its zero), for a dataclass declared with ``summed`` fields, in order."""
    found = {}
    for f in fields(cls):
        if "summed" in f.metadata:
            spec: Summed = f.metadata["summed"]
            columns = (f.name,) if spec.columns is None else spec.columns
            found[f.name] = (Summed(columns, spec.where, spec.money), f.default)
    return found


@dataclass(frozen=True)
class LedgerTotals:
    """Sums of node-hour lines in one currency. Units as on ``NodeHourLine``.

    Each summed field declares, once, how it comes from a line (``summed``): the
    single-line totals, the merge of totals and the SQL sums of stored lines
    (``reports.aggregates``) all read that declaration.
    ``currency`` is ``None`` only for the empty total. ``facility_kwh_by_location_source``
    says how much energy each intensity source covered (how much is measured).
    """

    currency: str | None = None
    lines: int = field(default=0, metadata={"summed": Summed(())})  # no column: 1 per line
    held_h: Decimal = summed()
    gpu_h: Decimal = summed()
    observed_s: Decimal = summed()
    bridged_s: Decimal = summed()
    it_kwh: Decimal = summed()
    gpu_kwh: Decimal = summed()
    facility_kwh: Decimal = summed()
    electricity_cost: Decimal = summed(money=True)
    unpriced_facility_kwh: Decimal = summed("facility_kwh", where=(("electricity_status", ElectricityStatus.UNPRICED),))
    hardware_cost: Decimal = summed(money=True)  # rent + depreciation + opex
    rent_cost: Decimal = summed(money=True)
    depreciation_cost: Decimal = summed(money=True)
    opex_cost: Decimal = summed(money=True)
    cost: Decimal = summed(money=True)  # hardware + electricity + energy tax + non-recoverable VAT
    energy_tax_cost: Decimal = summed(money=True)
    vat_amount: Decimal = summed(money=True)  # VAT on the net rent, running cost and electricity
    vat_cost: Decimal = summed(money=True)  # of vat_amount, the part not recoverable (in cost)
    location_co2e_g: Decimal = summed()
    location_unknown_facility_kwh: Decimal = summed("facility_kwh", where=(("location_co2e_g", None),))
    market_co2e_g: Decimal = summed()
    market_unknown_facility_kwh: Decimal = summed("facility_kwh", where=(("market_co2e_g", None),))
    embodied_co2e_g_low: Decimal = summed()
    embodied_co2e_g_central: Decimal = summed()
    embodied_co2e_g_high: Decimal = summed()
    embodied_unknown_gpu_h: Decimal = summed()
    prompt_tokens: int = summed(default=0)
    generation_tokens: int = summed(default=0)
    idle_gpu_h: Decimal = summed()
    idle_cost: Decimal = summed(money=True)
    idle_facility_kwh: Decimal = summed()
    facility_kwh_by_location_source: Mapping[str, Decimal] = field(default_factory=dict)

    @property
    def vat_recoverable(self) -> Decimal:
        """Input VAT reclaimed: a receivable, not in cost (``vat_amount`` less ``vat_cost``)."""
        return self.vat_amount - self.vat_cost

    @property
    def embodied_co2e_g(self) -> EmbodiedG:
        """Embodied gCO2e amortized over the hours held: low, central and high estimates."""
        return EmbodiedG(self.embodied_co2e_g_low, self.embodied_co2e_g_central, self.embodied_co2e_g_high)

    @classmethod
    def of_line(cls, line: NodeHourLine) -> LedgerTotals:
        """The totals of a single line."""
        columns = line_columns(line)
        return cls(
            currency=line.currency,
            facility_kwh_by_location_source={line.location_source: line.facility_kwh} if line.location_source else {},
            **{name: zero + spec.of(columns) for name, (spec, zero) in _SUMMED.items()},
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
        added: dict[str, Any] = {name: getattr(self, name) + getattr(other, name) for name in _SUMMED}
        sources = dict(self.facility_kwh_by_location_source)
        for source, kwh in other.facility_kwh_by_location_source.items():
            sources[source] = sources.get(source, ZERO) + kwh
        return LedgerTotals(
            currency=_same_currency(self.currency, other.currency), facility_kwh_by_location_source=sources, **added
        )

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.generation_tokens

    # Two kinds of per-token figure, never mixed up: "per output token" divides by the
    # generation tokens only (the convention of price lists and of the H100 vs RTX 4090
    # study); "per token" divides by input + output tokens (prompt + generation).

    @property
    def cost_per_1m_tokens(self) -> Decimal | None:
        """Cost (currency) per million tokens, input + output; ``None`` without tokens."""
        return per_1m(self.cost, self.tokens)

    @property
    def cost_per_1m_output_tokens(self) -> Decimal | None:
        """Cost (currency) per million output (generation) tokens; ``None`` without output tokens."""
        return per_1m(self.cost, self.generation_tokens)

    @property
    def it_j_per_token(self) -> Decimal | None:
        """IT energy (before PUE) in J per token, input + output; ``None`` without tokens."""
        return _per_token(j_from_kwh(self.it_kwh), self.tokens, Decimal(1))

    @property
    def it_j_per_output_token(self) -> Decimal | None:
        """IT energy (before PUE) in J per output (generation) token; ``None`` without output tokens."""
        return _per_token(j_from_kwh(self.it_kwh), self.generation_tokens, Decimal(1))

    @property
    def gpu_j_per_token(self) -> Decimal | None:
        """GPU-boundary energy (the boards, as NVML measures them) in J per token; ``None`` without tokens."""
        return _per_token(j_from_kwh(self.gpu_kwh), self.tokens, Decimal(1))

    @property
    def gpu_j_per_output_token(self) -> Decimal | None:
        """GPU-boundary energy in J per output (generation) token; ``None`` without output tokens."""
        return _per_token(j_from_kwh(self.gpu_kwh), self.generation_tokens, Decimal(1))

    @property
    def facility_j_per_token(self) -> Decimal | None:
        """Facility energy (after PUE) in J per token, input + output; ``None`` without tokens."""
        return _per_token(j_from_kwh(self.facility_kwh), self.tokens, Decimal(1))

    @property
    def facility_j_per_output_token(self) -> Decimal | None:
        """Facility energy (after PUE) in J per output (generation) token; ``None`` without output tokens."""
        return _per_token(j_from_kwh(self.facility_kwh), self.generation_tokens, Decimal(1))

    # Carbon per token: stated only where every part of it is known (``carbon_per_token_complete``).

    @property
    def sci_complete(self) -> bool:
        """Whether SCI, and every (location-based + embodied) carbon figure per token, may be stated."""
        return carbon_per_token_complete(
            unknown_intensity_kwh=self.location_unknown_facility_kwh, embodied_unknown_gpu_h=self.embodied_unknown_gpu_h
        )

    @property
    def sci_gaps(self) -> tuple[str, ...]:
        """Why SCI (and the carbon figures per token) are withheld: kWh without an intensity, GPU-hours without
        an embodied figure; empty where they are stated."""
        return carbon_per_token_gaps(
            facility_kwh=self.facility_kwh,
            unknown_intensity_kwh=self.location_unknown_facility_kwh,
            embodied_unknown_gpu_h=self.embodied_unknown_gpu_h,
        )

    @property
    def sci_co2e_g(self) -> Decimal:
        """SCI's numerator, (E x I) + M: location-based operational g + central embodied (amortized) g."""
        return self.location_co2e_g + self.embodied_co2e_g.central

    def sci_g_per(self, functional_units: int, scale: Decimal = Decimal(1)) -> Decimal | None:
        """SCI per R: ``sci_co2e_g`` / ``functional_units`` x ``scale``; ``None`` without any unit, and where SCI
        is incomplete (``sci_complete``)."""
        return _per_token(self.sci_co2e_g, functional_units, scale) if self.sci_complete else None

    @property
    def location_g_per_1m_output_tokens(self) -> Decimal | None:
        """Operational (location-based) gCO2e per 1M output tokens; ``None`` without output tokens, and where
        some kWh have no grid intensity."""
        if not carbon_per_token_complete(unknown_intensity_kwh=self.location_unknown_facility_kwh):
            return None
        return per_1m(self.location_co2e_g, self.generation_tokens)

    def embodied_g_per_1m_output_tokens(self, estimate: str = "central") -> Decimal | None:
        """Embodied gCO2e (``low``, ``central`` or ``high``) per 1M output tokens; ``None`` without output tokens,
        and where some GPU-hours are of models without an embodied figure."""
        if not carbon_per_token_complete(embodied_unknown_gpu_h=self.embodied_unknown_gpu_h):
            return None
        return per_1m(getattr(self.embodied_co2e_g, estimate), self.generation_tokens)

    @property
    def sci_g_per_1k_tokens(self) -> Decimal | None:
        """SCI: (location-based operational g + central embodied g) / tokens (input + output) x 1000."""
        return self.sci_g_per(self.tokens, TOKENS_PER_THOUSAND)

    @property
    def sci_g_per_1k_output_tokens(self) -> Decimal | None:
        """(location-based operational g + central embodied g) / output (generation) tokens x 1000."""
        return self.sci_g_per(self.generation_tokens, TOKENS_PER_THOUSAND)

    @property
    def market_g_per_1k_tokens(self) -> Decimal | None:
        """(market-based operational g + central embodied g) / tokens x 1000; ``None`` without tokens, and where
        some kWh have no market factor or some GPU-hours no embodied figure."""
        complete = carbon_per_token_complete(
            unknown_intensity_kwh=self.market_unknown_facility_kwh, embodied_unknown_gpu_h=self.embodied_unknown_gpu_h
        )
        if not complete:
            return None
        return _per_token(self.market_co2e_g + self.embodied_co2e_g.central, self.tokens, TOKENS_PER_THOUSAND)

    @property
    def cost_per_gpu_h(self) -> Decimal | None:
        """Cost (currency) per GPU-hour held; ``None`` when no GPU was held."""
        return _ratio(self.cost, self.gpu_h)

    @property
    def electricity_cost_per_kwh(self) -> Decimal | None:
        """Electricity cost (currency) per facility kWh that had a price (the tariff paid, energy-weighted)."""
        return _ratio(self.electricity_cost, self.facility_kwh - self.unpriced_facility_kwh)

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


_SUMMED = summed_fields(LedgerTotals)


def _same_currency(a: str | None, b: str | None) -> str | None:
    if a is not None and b is not None and a != b:
        raise CurrencyMismatchError(f"cannot add {a} to {b}")
    return a if a is not None else b
