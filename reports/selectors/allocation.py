"""A node-hour's ledger line shared among the LLM models served on the node in that hour, in SQL.

The rule is ``reports.sharing``'s (by output tokens; lines without output
tokens are no model's: callers sum them whole, apart, so that the rows add up); the
expressions here are built from its ``SHARED_BY``, so the SQL and the Python share
cannot drift apart. Used by the comparison, the usage report by LLM model and the
load curves.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db.models import Aggregate, Case, F, Field, FilteredRelation, FloatField, Q, QuerySet, Sum, When

from reports.aggregates import AMOUNT, Fraction, allocated_ledger_sums, split_line_counts
from reports.sharing import SHARED_BY

# The LLM model of an endpoint that did not name one.
UNNAMED_LLM_MODEL = "unnamed"
# Where the joined line's columns are (``with_line``).
LINE = "k_line__"
_LINES = "node__ledger_lines"


def llm_name(model_name: str | None) -> str:
    """The LLM model a row is shown under: the endpoint's model name, or ``UNNAMED_LLM_MODEL``."""
    return model_name or UNNAMED_LLM_MODEL


def joined_line(usage: QuerySet[Any]) -> QuerySet[Any]:
    """Endpoint-hours LEFT JOINed to their node-hour's ledger line (``k_line``; NULL where none), all kept."""
    return usage.annotate(k_line=same_node_hour(_LINES))


def same_node_hour(lines: str, *, where: Q | None = None) -> FilteredRelation:
    """The ledger lines at ``lines`` (a path through the usage row's own ``node``) of the usage row's node-hour;
    ``where``: a further condition on them (at the same path), which narrows the join itself.

    The join says ``node_id`` on both sides, not only the node's key in between: on Citus, where both tables
    are distributed by node and the node is a reference table, only a join of the two tables on their
    distribution column is routed to one shard (docs/scaling.md, "Citus"). The figures are the same: a line's
    node is the node the usage row names.
    """
    condition = Q(**{f"{lines}__node_id": F("node_id"), f"{lines}__hour_start": F("hour_start")})
    return FilteredRelation(lines, condition=condition if where is None else condition & where)


def with_line(usage: QuerySet[Any], *, where: Q | None = None) -> QuerySet[Any]:
    """Endpoint-hours joined to their node-hour's ledger line (``k_line``), where the line is shared (it has
    output tokens; the others are the idle row's).

    The join is on the ledger's unique (node, hour_start); ``where``: a further condition on the line.
    The line's organization and fleet are not filtered in the join: such a condition makes
    PostgreSQL look lines up by (organization, hour) and filter by node, ~30x the rows of the
    (node, hour) key.
    """
    joined = joined_line(usage).filter(LINE_SHARED)
    return joined if where is None else joined.filter(where)


# The joined line is shared among LLM models: it has output tokens (the others are the idle row's).
LINE_SHARED = Q(**{f"{LINE}{SHARED_BY}__gt": 0})
# An endpoint-hour that takes a share of its line (``sharing.takes_share``): it served output tokens.
TAKES_SHARE = Q(**{f"{SHARED_BY}__gt": 0})
# The endpoint-hour holds all of its line's output tokens: its share is exactly 1.
WHOLE_LINE = Q(**{SHARED_BY: F(f"{LINE}{SHARED_BY}")})
# The endpoint-hour's share of its line (``sharing.output_token_share``), on lines ``with_line`` keeps.
SHARE = Fraction(F(SHARED_BY), F(f"{LINE}{SHARED_BY}"))


def weighed(column: str, output_field: Field) -> Case:
    """The joined line's ``column`` times the endpoint-hour's share (as it is where the share is whole)."""
    value = F(f"{LINE}{column}")
    return Case(When(WHOLE_LINE, then=value), default=value * SHARE, output_field=output_field)


def share_of(column: str, output_field: Field) -> Case:
    """The endpoint-hour's share of its ``joined_line``'s ``column``; zero where it takes none (no output tokens,
    or no line, or a line without output tokens: the idle row's)."""
    return Case(
        When(TAKES_SHARE & LINE_SHARED, then=weighed(column, output_field)), default=0, output_field=output_field
    )


def allocated_sums(*, utilization: bool = False) -> dict[str, Aggregate]:
    """The ``ledger_sums_from`` aggregates of the joined lines, each weighed by the endpoint-hour's share.

    ``utilization``: also the lines' utilization sums (``s_util_pct_s``, ``s_util_observed_s``), weighed alike.
    Read them with ``allocated_rows``, which completes the counts of lines shared by several rows.
    """
    sums = allocated_ledger_sums(line=LINE, share=SHARE, whole=WHOLE_LINE, takes_share=TAKES_SHARE)
    if utilization:
        for name in ("util_pct_s", "util_observed_s"):
            sums[f"s_{name}"] = Sum(weighed(name, FloatField()))
    return sums


def allocated_trace_sums() -> dict[str, Aggregate]:
    """The trace parts' sums (``trace.as_part``) of the joined lines, weighed alike: ``p_kwh`` (facility kWh with a
    location intensity) and ``p_embodied`` (central embodied g)."""
    known = Q(**{f"{LINE}location_co2e_g__isnull": False})
    return {
        "p_kwh": Sum(weighed("facility_kwh", AMOUNT), filter=known),
        "p_embodied": Sum(weighed("embodied_co2e_g_central", AMOUNT)),
    }


def allocated_rows(grouped: QuerySet[Any], keys: Sequence[str], *, utilization: bool = False) -> list[dict[str, Any]]:
    """``grouped`` (endpoint-hours ``with_line``, ``.values(*keys)``) summed with ``allocated_sums``.

    One query, hashed by PostgreSQL over the joined rows; a second one only where some
    endpoint-hours hold part of their line (several LLM models on one node-hour), to
    count the distinct node-hours those had a share of.
    """
    rows = list(grouped.annotate(**allocated_sums(utilization=utilization), **allocated_trace_sums()).order_by())
    if any(row["s_split_rows"] for row in rows):
        counts = split_line_counts(line=LINE, whole=WHOLE_LINE, takes_share=TAKES_SHARE)
        split = {tuple(row[k] for k in keys): row for row in grouped.annotate(**counts).order_by()}
        for row in rows:
            found = split.get(tuple(row[k] for k in keys), {})
            for name in counts:
                row[name] = (row[name] or 0) + (found.get(name) or 0)
    return rows
