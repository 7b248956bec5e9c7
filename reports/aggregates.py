"""SQL sums over ledger lines, and the ``LedgerSums`` they make.

Every report reads ``NodeHourLedger`` through these aggregates, so the same
column always means the same thing. They are not written here: each is the SQL
form of a figure declared once with ``accounting.ledger.totals.summed`` on
``LedgerTotals`` (or ``LedgerSums``), the declaration ``LedgerTotals.of_line``
applies to a single line. Annotation names carry an ``s_`` prefix:
Django refuses an annotation named like a model field.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.db.models import (
    Aggregate,
    Case,
    Count,
    DecimalField,
    Expression,
    F,
    FloatField,
    Func,
    Q,
    Sum,
    When,
)
from django.db.models.functions import Coalesce

from accounting.ledger import LedgerTotals
from accounting.ledger.totals import KNOWN, Prefix, Summed, summed_fields
from accounting.site_hours import unpriced_with_telemetry
from reports.metrics import LedgerSums

# As the ledger's own columns: unrounded, 12 decimal places.
AMOUNT = DecimalField(max_digits=28, decimal_places=12)

LOCATION_KNOWN = Q(location_co2e_g__isnull=False)
LOCATION_HOURLY = Q(location_co2e_g__isnull=False, location_is_fallback=False)
LOCATION_ANNUAL = Q(location_co2e_g__isnull=False, location_is_fallback=True)
LOCATION_UNKNOWN = Q(location_co2e_g__isnull=True)


UNPRICED_WITH_TELEMETRY = unpriced_with_telemetry()


def amount_sum(expression: Any, *, where: Q | None = None) -> Sum:
    """SUM of an unrounded quantity (``None`` when no row matches)."""
    return Sum(expression, filter=where, output_field=AMOUNT)


# Every summed figure, as declared once on LedgerTotals and LedgerSums (``summed``): name → (how, zero).
_SUMMED = {**summed_fields(LedgerTotals), **summed_fields(LedgerSums)}
# Of them, the totals' (the rest are the sums' own), named once: reading the declarations is ~40 us a row.
_TOTALS_NAMES = tuple(summed_fields(LedgerTotals))
_SUMS_NAMES = tuple(name for name in _SUMMED if name not in _TOTALS_NAMES)
# Figures whose condition the declaration cannot say (an OR of columns), summed here alone.
_COUNTED = {"s_unpriced_hours": Count("id", filter=UNPRICED_WITH_TELEMETRY)}
# ... and over site-hours (``accounting.site_hours``), which count them.
_COUNTED_SITE_HOURS = {"s_unpriced_hours": Sum("unpriced_hours")}


@dataclass(frozen=True)
class RowsAggregate:
    """An aggregate over ledger lines and the same figure over their site-hours (``accounting.site_hours``).

    A caller's extra aggregate for a query that may read either (``reports.selectors.lines.ledger_rows``):
    the site-hours count lines in ``lines`` and keep sums of the lines' sums, so a count or a mean's
    denominator differs in form, a sum of a summed column under conditions on a key does not."""

    lines: Aggregate
    site_hours: Aggregate | Coalesce  # a count over site-hours: the COALESCE of a SUM

    def over(self, *, site_hours: bool) -> Aggregate | Coalesce:
        return self.site_hours if site_hours else self.lines


def lines_counted(where: Q | None = None) -> RowsAggregate:
    """How many lines ``where`` holds for (all of them, without): 0 where none does, over lines or site-hours."""
    return RowsAggregate(Count("id", filter=where), Coalesce(Sum("lines", filter=where), 0))


def same_over_site_hours(aggregate: Aggregate) -> RowsAggregate:
    """An aggregate that reads the same over site-hours: a SUM of a summed column (or MIN / MAX of a key), with
    conditions on keys or on whether a sum is null only."""
    return RowsAggregate(aggregate, aggregate)


def rows_aggregates(
    aggregates: Mapping[str, Aggregate | RowsAggregate], *, site_hours: bool
) -> dict[str, Aggregate | Coalesce]:
    """``aggregates`` in their form over lines or over site-hours."""
    return {
        name: value.over(site_hours=site_hours) if isinstance(value, RowsAggregate) else value
        for name, value in aggregates.items()
    }


def site_hours_can_sum(aggregates: Mapping[str, Aggregate | RowsAggregate] | None) -> bool:
    """Whether every one of ``aggregates`` has a form over site-hours."""
    return all(isinstance(value, RowsAggregate) for value in (aggregates or {}).values())


def _where(where: tuple[tuple[str, Any], ...], line: str = "") -> Q | None:
    """The SQL form of ``Summed.where`` (all conditions hold); ``line``: the path to the line's columns."""
    if not where:
        return None
    return functools.reduce(operator.and_, (_condition(f"{line}{column}", value) for column, value in where))


def _condition(column: str, value: Any) -> Q:
    if value is KNOWN:
        return Q(**{f"{column}__isnull": False})
    if isinstance(value, Prefix):
        return Q(**{f"{column}__startswith": value.text})
    return Q(**{f"{column}__isnull": True}) if value is None else Q(**{column: value})


def _aggregate(spec: Summed, zero: Any, *, site_hours: bool = False) -> Aggregate:
    """The SQL sum of a declared figure over stored lines (or their site-hours), in the unit and type of its zero."""
    where = _where(spec.where)
    if not spec.columns:
        return Sum("lines", filter=where) if site_hours else Count("id", filter=where)
    if site_hours and len(spec.columns) > 1:
        raise ValueError(f"a product of columns {spec.columns} cannot be summed from site-hours' sums")
    expression = functools.reduce(operator.mul, (F(column) for column in spec.columns))
    if isinstance(zero, Decimal):
        return amount_sum(expression, where=where)
    if isinstance(zero, float):
        return Sum(expression, filter=where, output_field=FloatField())
    return Sum(expression, filter=where)


def ledger_sums(*, money: bool = True, site_hours: bool = False) -> dict[str, Aggregate]:
    """The aggregates ``ledger_sums_from`` reads, ``s_<figure>``. Money only makes sense grouped by currency.

    ``site_hours``: over ``LedgerSiteHour`` rows (``accounting.site_hours``), the same figures."""
    declared = {
        f"s_{name}": _aggregate(spec, zero, site_hours=site_hours)
        for name, (spec, zero) in _SUMMED.items()
        if money or not spec.money
    }
    return {**declared, **(_COUNTED_SITE_HOURS if site_hours else _COUNTED)}


def ledger_figures_sums(names: Collection[str]) -> dict[str, Aggregate]:
    """The aggregates of a few declared figures only, ``s_<figure>`` as in ``ledger_sums``, for a page that shows
    those alone over many groups (a list of nodes): read them with ``ledger_figures_from``, never as sums."""
    unknown = set(names) - _SUMMED.keys()
    if unknown:
        raise ValueError(f"not declared figures: {sorted(unknown)}")
    return {f"s_{name}": _aggregate(*_SUMMED[name]) for name in names}


def ledger_figures_from(values: Mapping[str, Any], names: Collection[str]) -> dict[str, Any]:
    """The figures of one row of ``ledger_figures_sums(names)``, each in the type of its zero, by name."""
    return {name: _as(_SUMMED[name][1], values.get(f"s_{name}")) for name in names}


def ledger_sums_from(values: Mapping[str, Any], *, currency: str | None) -> LedgerSums:
    """``LedgerSums`` from one row of ``ledger_sums`` (absent sums, money without ``money``, count as zero)."""
    summed = {name: _as(zero, values.get(f"s_{name}")) for name, (_, zero) in _SUMMED.items()}
    return LedgerSums(
        totals=LedgerTotals(currency=currency, **{name: summed[name] for name in _TOTALS_NAMES}),
        electricity_known=values.get("s_electricity_cost") is not None,
        location_known=values.get("s_location_co2e_g") is not None,
        market_known=values.get("s_market_co2e_g") is not None,
        cached_known=values.get("s_cached_prompt_tokens_sum") is not None,
        **{name: summed[name] for name in _SUMS_NAMES},
        unpriced_hours=int(values.get("s_unpriced_hours") or 0),
    )


def _as(zero: Any, value: Any) -> Any:
    """A SQL sum in the type of the figure's zero (``None``, no row: the zero)."""
    return zero if value is None else type(zero)(value)


class Fraction(Func):
    """``numerator / denominator`` as a fraction, never an integer division (both may be integers).

    PostgreSQL divides as ``numeric``, SQLite as ``REAL`` (it stores a whole decimal as an integer).
    """

    arity = 2
    output_field = AMOUNT

    def as_sql(  # type: ignore[override]
        self, compiler: Any, connection: Any, **extra_context: Any
    ) -> tuple[str, tuple[Any, ...]]:
        numerator, denominator = (compiler.compile(expression) for expression in self.get_source_expressions())
        kind = "REAL" if connection.vendor == "sqlite" else "NUMERIC"
        return f"(CAST({numerator[0]} AS {kind}) / {denominator[0]})", (*numerator[1], *denominator[1])


# Figures that are counts of node-hours: an allocated row counts the node-hours it had a share of.
_COUNT_FIGURES = frozenset({"lines"})
# Tokens are the row's own (its endpoint-hours'), never allocated.
_OWN_TOKENS = {"prompt_tokens": "prompt_tokens", "generation_tokens": "generation_tokens"}


def allocated_ledger_sums(*, line: str, share: Expression, whole: Q, takes_share: Q) -> dict[str, Aggregate]:
    """The aggregates ``ledger_sums_from`` reads, each line's figures weighed by ``share`` of the line.

    Over rows (endpoint-hours) joined to their node-hour's ledger line at ``line``
    (a path ending in ``__``): every summed figure is sum(line figure x share);
    tokens are the rows' own; counts (lines, unpriced hours) count the node-hours
    the rows had a share of. ``whole``: the row holds all of its line (its share is
    exactly 1, the common case of a node serving one LLM model): its figures are
    summed as they are, with no product, and it counts its line once. ``takes_share``:
    the row has a share at all. The other rows that do (``s_split_rows`` of them) are
    counted by ``split_line_counts``, in a query
    of their own: a line may be shared by several rows of one group, and counting
    distinct lines here would make PostgreSQL sort every row instead of hashing.
    """
    sums: dict[str, Aggregate] = {}
    for name, (spec, zero) in _SUMMED.items():
        where = _where(spec.where, line)
        if name in _OWN_TOKENS:
            sums[f"s_{name}"] = Sum(_OWN_TOKENS[name])
        elif not spec.columns or name in _COUNT_FIGURES:
            sums[f"s_{name}"] = Count(f"{line}id", filter=whole if where is None else whole & where)
        else:
            product = functools.reduce(operator.mul, (F(f"{line}{column}") for column in spec.columns))
            field = FloatField() if isinstance(zero, float) else AMOUNT
            weighed = Case(When(whole, then=product), default=product * share, output_field=field)
            sums[f"s_{name}"] = Sum(weighed, filter=where)
    sums["s_unpriced_hours"] = Count(f"{line}id", filter=whole & unpriced_with_telemetry(line))
    sums["s_split_rows"] = Count("pk", filter=~whole & takes_share)
    return sums


def split_line_counts(*, line: str, whole: Q, takes_share: Q) -> dict[str, Aggregate]:
    """The counts of ``allocated_ledger_sums`` over the rows that hold part of their line (and a share of it):
    the distinct node-hours they had a share of. Added to that query's counts."""
    split = ~whole & takes_share
    counts: dict[str, Aggregate] = {}
    for name, (spec, _) in _SUMMED.items():
        if name not in _OWN_TOKENS and (not spec.columns or name in _COUNT_FIGURES):
            where = _where(spec.where, line)
            counts[f"s_{name}"] = Count(f"{line}id", distinct=True, filter=split if where is None else split & where)
    counts["s_unpriced_hours"] = Count(f"{line}id", distinct=True, filter=split & unpriced_with_telemetry(line))
    return counts
