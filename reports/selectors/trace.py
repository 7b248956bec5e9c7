"""Where a report row's figures came from, beyond the shares its sums give: intensity and embodied sources.

A row's lines are taken as parts, one per GPU model and grid intensity source
(``TracePart``), summed by ``TRACE_SUMS`` in the query that sums the row. From
them ``RowTracer.trace`` names each intensity source with its share of the row's
facility kWh (``location_sources``), and the sources of the embodied factors of
every GPU model whose lines carry embodied carbon (``embodied_sources_of``; a
node of several models, "mixed", names each of its models'). The usage report
and the comparison both trace their rows with it.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.db.models import QuerySet

from accounting.ledger.units import ZERO, significant
from accounting.models import NodeHourLedger
from reports.aggregates import LOCATION_KNOWN, amount_sum
from reports.metrics import LedgerSums
from reports.selectors.lines import (
    MIXED_MODEL,
    embodied_source_lists,
    gpu_model_profiles,
    ledger_lines,
    mixed_node_models,
    sources_joined,
)

# Lines of a row by (GPU model, intensity source): facility kWh with a known intensity, central embodied g.
TracePart = tuple[str, str, Decimal, Decimal]
# The sums of a trace part, beside a row's own sums in the query grouped by intensity source too.
TRACE_SUMS = {
    "p_kwh": amount_sum("facility_kwh", where=LOCATION_KNOWN),
    "p_embodied": amount_sum("embodied_co2e_g_central"),
}


def trace_parts(lines: QuerySet[NodeHourLedger], *keys: str) -> list[dict[str, Any]]:
    """``lines`` summed per ``keys``, GPU model and intensity source: ``p_kwh`` (with an intensity), ``p_embodied``."""
    grouped = lines.values(*keys, "gpu_model", "location_source").annotate(**TRACE_SUMS)
    return list(grouped.order_by(*keys, "gpu_model", "location_source"))


def as_part(values: Mapping[str, Any]) -> TracePart:
    return (values["gpu_model"], values["location_source"], values["p_kwh"] or ZERO, values["p_embodied"] or ZERO)


def location_sources(parts: list[TracePart], sums: LedgerSums) -> str | None:
    """Each intensity source's share (0-1, 4 significant digits) of the row's facility kWh, largest first."""
    facility_kwh = sums.totals.facility_kwh
    by_source: dict[str, Decimal] = defaultdict(Decimal)
    for _, source, kwh, _ in parts:
        if source and kwh:
            by_source[source] += kwh
    if not facility_kwh or not by_source:
        return None
    ordered = sorted(by_source.items(), key=lambda item: (-item[1], item[0]))
    return "; ".join(f"{source}={significant(kwh / facility_kwh)}" for source, kwh in ordered)


def embodied_sources_of(
    parts: list[TracePart], sources: Mapping[str, tuple[str, ...]], mixed_models: Callable[[], tuple[str, ...]]
) -> str | None:
    """The sources of the factors of every model whose lines carry embodied carbon; ``None`` when none does."""
    models = sorted({model for model, _, _, embodied_g in parts if embodied_g > 0})
    expanded = [key for model in models for key in (mixed_models() if model == MIXED_MODEL else (model,))]
    return sources_joined(expanded, sources)


@dataclass(frozen=True)
class RowTrace:
    """A row's intensity sources with their shares of its facility kWh, and its embodied factors' sources."""

    location_sources: str | None
    embodied_sources: str | None


class RowTracer:
    """Traces the rows of one report over ``lines``: the embodied factors' sources and the models of the mixed
    nodes are read once, when a row first needs them (one small query each)."""

    def __init__(self, *, organization_ids: Collection[int], lines: QuerySet[NodeHourLedger]) -> None:
        self._organization_ids = organization_ids
        self._lines = lines

    @functools.cached_property
    def sources(self) -> dict[str, tuple[str, ...]]:
        return embodied_source_lists(organization_ids=self._organization_ids)

    @functools.cached_property
    def mixed_models(self) -> tuple[str, ...]:
        return mixed_node_models(lines=self._lines)

    def trace(self, parts: list[TracePart], sums: LedgerSums) -> RowTrace:
        embodied = embodied_sources_of(parts, self.sources, lambda: self.mixed_models) if parts else None
        return RowTrace(location_sources=location_sources(parts, sums), embodied_sources=embodied)


@dataclass(frozen=True)
class EmbodiedFactors:
    """A GPU model whose lines carry embodied carbon, that carbon (central, g), and its factors' sources."""

    gpu_model: str
    display_name: str
    embodied_co2e_g: Decimal
    sources: tuple[str, ...]


def embodied_factors_used(
    *, organization_ids: Collection[int], start: datetime, end: datetime, embodied_g_by_model: Mapping[str, Decimal]
) -> list[EmbodiedFactors]:
    """For each model with embodied carbon (given per model, summed by the caller), the sources of its factors.

    A "mixed" model (nodes of several models) names the sources of each of its nodes' models.
    """
    sources = embodied_source_lists(organization_ids=organization_ids)
    names = gpu_model_profiles(organization_ids=organization_ids)
    used = []
    for model, embodied_g in sorted(embodied_g_by_model.items()):
        if embodied_g <= 0:
            continue
        models: tuple[str, ...] = (model,)
        if model == MIXED_MODEL:
            models = mixed_node_models(lines=ledger_lines(organization_ids=organization_ids, start=start, end=end))
        cited = tuple(dict.fromkeys(source for key in models for source in sources.get(key, ())))
        used.append(EmbodiedFactors(model, names.get(model, (model, None))[0], embodied_g, cited))
    return used
