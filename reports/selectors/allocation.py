"""A node-hour's ledger line shared among the LLM models served on the node in that hour.

Each endpoint-hour (one LLM model at one metrics URL of a node, over one hour) takes
the share of its node-hour's line that its output tokens are of the line's (the
line's output tokens are its endpoints'): cost, energy, carbon, GPU-hours and idle
alike. Lines without output tokens are no model's: callers sum them whole, apart, so
that the rows add up. Input tokens are each endpoint-hour's own, never allocated.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db.models import Aggregate, Case, F, FilteredRelation, FloatField, Q, QuerySet, Sum, When

from reports.aggregates import AMOUNT, Fraction, allocated_ledger_sums, split_line_counts

# The LLM model of an endpoint that did not name one.
UNNAMED_LLM_MODEL = "unnamed"
# Where the joined line's columns are (``with_line``).
LINE = "k_line__"
_LINES = "endpoint__node__ledger_lines"


def llm_name(model_name: str | None) -> str:
    """The LLM model a row is shown under: the endpoint's model name, or ``UNNAMED_LLM_MODEL``."""
    return model_name or UNNAMED_LLM_MODEL


def with_line(usage: QuerySet[Any], *, where: Q | None = None) -> QuerySet[Any]:
    """Endpoint-hours joined to their node-hour's ledger line (``k_line``), where it has output tokens.

    The join is on the ledger's unique (node, hour_start); ``where``: a further condition on the line.
    """
    same_hour = FilteredRelation(_LINES, condition=Q(**{f"{_LINES}__hour_start": F("hour_start")}))
    joined = usage.annotate(k_line=same_hour).filter(k_line__generation_tokens__gt=0)
    return joined if where is None else joined.filter(where)


# The endpoint-hour holds all of its line's output tokens: its share is exactly 1.
WHOLE_LINE = Q(generation_tokens=F(f"{LINE}generation_tokens"))


def allocated_sums(*, utilization: bool = False) -> dict[str, Aggregate]:
    """The ``ledger_sums_from`` aggregates of the joined lines, each weighed by the endpoint-hour's share.

    ``utilization``: also the lines' utilization sums (``s_util_pct_s``, ``s_util_observed_s``), weighed alike.
    Read them with ``allocated_rows``, which completes the counts of lines shared by several rows.
    """
    share = Fraction(F("generation_tokens"), F(f"{LINE}generation_tokens"))
    sums = allocated_ledger_sums(line=LINE, share=share, whole=WHOLE_LINE)
    if utilization:
        for name in ("util_pct_s", "util_observed_s"):
            column = F(f"{LINE}{name}")
            weighed = Case(When(WHOLE_LINE, then=column), default=column * share, output_field=FloatField())
            sums[f"s_{name}"] = Sum(weighed)
    return sums


def allocated_trace_sums() -> dict[str, Aggregate]:
    """The trace parts' sums (``trace.as_part``) of the joined lines, weighed alike: ``p_kwh`` (facility kWh with a
    location intensity) and ``p_embodied`` (central embodied g)."""
    share = Fraction(F("generation_tokens"), F(f"{LINE}generation_tokens"))

    def weighed(column: str) -> Case:
        value = F(f"{LINE}{column}")
        return Case(When(WHOLE_LINE, then=value), default=value * share, output_field=AMOUNT)

    known = Q(**{f"{LINE}location_co2e_g__isnull": False})
    return {"p_kwh": Sum(weighed("facility_kwh"), filter=known), "p_embodied": Sum(weighed("embodied_co2e_g_central"))}


def allocated_rows(grouped: QuerySet[Any], keys: Sequence[str], *, utilization: bool = False) -> list[dict[str, Any]]:
    """``grouped`` (endpoint-hours ``with_line``, ``.values(*keys)``) summed with ``allocated_sums``.

    One query, hashed by PostgreSQL over the joined rows; a second one only where some
    endpoint-hours hold part of their line (several LLM models on one node-hour), to
    count the distinct node-hours those had a share of.
    """
    rows = list(grouped.annotate(**allocated_sums(utilization=utilization), **allocated_trace_sums()).order_by())
    if any(row["s_split_rows"] for row in rows):
        counts = split_line_counts(line=LINE, whole=WHOLE_LINE)
        split = {tuple(row[k] for k in keys): row for row in grouped.annotate(**counts).order_by()}
        for row in rows:
            found = split.get(tuple(row[k] for k in keys), {})
            for name in counts:
                row[name] = (row[name] or 0) + (found.get(name) or 0)
    return rows
