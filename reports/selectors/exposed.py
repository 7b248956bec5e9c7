"""What ``/metrics`` exposes: ledger sums per organization, fleet, GPU model, LLM model and currency.

The same rule as the fleet comparison by LLM model (``reports.selectors.comparison``):
each node-hour's line shared among the LLM models served in it by their output tokens
(``reports.selectors.allocation``, ``reports.sharing``), the lines without output
tokens summed whole under no LLM model (the idle row). Callers read hours before
``complete_through`` only, which are final (``reports.selectors.complete``), so it is
the comparison's sum of final node-hours; one re-opened since (a price changed, its
line to be recomputed) is read as its stored line stands until it is recomputed, so
that a counter never dips while a restatement is on its way. Grouped by currency too: money is never added across
currencies, and an exposition refuses nothing, so a key with lines in two currencies
is two series. Two grouped queries whatever the number of fleets and hours (three
where several LLM models share a node-hour), one more for the labels.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import F, Min, QuerySet

from accounting.models import NodeHourLedger
from fleets.models import Fleet, Node
from reports.aggregates import ledger_sums, ledger_sums_from
from reports.metrics import LedgerSums, ledger_sums_merge
from reports.selectors.allocation import LINE, allocated_rows, llm_name, with_line
from telemetry.models import EndpointHourUsage


@dataclass(frozen=True)
class ExposedKey:
    """A series' place: ``llm_model`` ``None`` for node-hours that served no output token; ``node_id`` only per node."""

    organization_id: int
    fleet_id: int
    gpu_model: str
    llm_model: str | None
    node_id: int | None
    currency: str

    def sort_key(self) -> tuple[int, int, str, bool, str, int, str]:
        """Series in a stable order: by organization, fleet, GPU model, LLM model (the idle hours last), node."""
        llm = self.llm_model
        return (
            self.organization_id,
            self.fleet_id,
            self.gpu_model,
            llm is None,
            llm or "",
            self.node_id or 0,
            self.currency,
        )


def exposed_sums(
    *,
    organization_ids: Collection[int],
    end: datetime,
    start: datetime | None = None,
    per_node: bool = False,
) -> dict[ExposedKey, LedgerSums]:
    """Ledger sums of the stored lines in ``[start, end)`` (``start`` ``None``: since the first line), per key."""
    lines = NodeHourLedger.objects.filter(organization_id__in=organization_ids, hour_start__lt=end)
    usage = EndpointHourUsage.objects.filter(node__fleet__organization_id__in=organization_ids, hour_start__lt=end)
    if start is not None:
        lines, usage = lines.filter(hour_start__gte=start), usage.filter(hour_start__gte=start)
    found: dict[ExposedKey, LedgerSums] = {}
    for key, sums in [*_idle(lines, per_node), *_allocated(usage, per_node)]:
        found[key] = ledger_sums_merge(found[key], sums) if key in found else sums
    return found


def exposed_since(*, organization_ids: Collection[int]) -> datetime | None:
    """The first stored line's hour: where the counters since enrolment start (``None`` before any line)."""
    lines = NodeHourLedger.objects.filter(organization_id__in=organization_ids)
    first: datetime | None = lines.aggregate(first=Min("hour_start"))["first"]
    return first


_KEYS = ("k_org", "k_fleet", "k_model", "currency")


def _idle(lines: QuerySet[NodeHourLedger], per_node: bool) -> list[tuple[ExposedKey, LedgerSums]]:
    keys: dict[str, Any] = {"k_org": F("organization_id"), "k_fleet": F("fleet_id"), "k_model": F("gpu_model")}
    if per_node:
        keys["k_node"] = F("node_id")
    rows = lines.filter(generation_tokens=0).values("currency", **keys).annotate(**ledger_sums()).order_by()
    return [(_key(row, llm=None), ledger_sums_from(row, currency=row["currency"])) for row in rows]


def _allocated(usage: QuerySet[Any], per_node: bool) -> list[tuple[ExposedKey, LedgerSums]]:
    keys: dict[str, Any] = {
        "k_org": F(f"{LINE}organization_id"),
        "k_fleet": F(f"{LINE}fleet_id"),
        "k_model": F(f"{LINE}gpu_model"),
        "k_llm": F("endpoint__model_name"),
        "currency": F(f"{LINE}currency"),
    }
    if per_node:
        keys["k_node"] = F(f"{LINE}node_id")
    rows = allocated_rows(with_line(usage).values(**keys), list(keys))
    return [(_key(row, llm=llm_name(row["k_llm"])), ledger_sums_from(row, currency=row["currency"])) for row in rows]


def _key(row: Mapping[str, Any], *, llm: str | None) -> ExposedKey:
    return ExposedKey(row["k_org"], row["k_fleet"], row["k_model"], llm, row.get("k_node"), row["currency"])


@dataclass(frozen=True)
class ExposedNames:
    """What the series are labelled with: organization slugs, fleet names, node hostnames (per node)."""

    organizations: dict[int, str]
    fleets: dict[int, str]
    nodes: dict[int, str]


def exposed_names(*, organization_ids: Collection[int], per_node: bool = False) -> ExposedNames:
    """The organizations' slugs and fleets' names in one query; their nodes' names in a second, per node."""
    organizations: dict[int, str] = {}
    fleets: dict[int, str] = {}
    rows = Fleet.objects.filter(organization_id__in=organization_ids).values_list(
        "id", "name", "organization_id", "organization__slug"
    )
    for fleet_id, name, organization_id, slug in rows:
        fleets[fleet_id] = name
        organizations[organization_id] = slug
    nodes: dict[int, str] = {}
    if per_node:
        found = Node.objects.filter(fleet__organization_id__in=organization_ids).values_list("id", "hostname")
        nodes = dict(found)
    return ExposedNames(organizations=organizations, fleets=fleets, nodes=nodes)
