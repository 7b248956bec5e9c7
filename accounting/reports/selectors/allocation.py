"""A node-hour's ledger line shared among the LLM models served on the node in that hour.

Each endpoint-hour (one LLM model at one metrics URL of a node, over one hour) takes
the share of its node-hour's line that its output tokens are of the line's (the
line's output tokens are its endpoints'): cost, energy, carbon, GPU-hours and idle
alike. Lines without output tokens are no model's: callers sum them whole, apart, so
that the rows add up. Input tokens are each endpoint-hour's own, never allocated.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Aggregate, ExpressionWrapper, F, FilteredRelation, FloatField, Q, QuerySet, Sum

from accounting.reports.aggregates import Fraction, allocated_ledger_sums

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


def allocated_sums(*, utilization: bool = False) -> dict[str, Aggregate]:
    """The ``ledger_sums_from`` aggregates of the joined lines, each weighed by the endpoint-hour's share.

    ``utilization``: also the lines' utilization sums (``s_util_pct_s``, ``s_util_observed_s``), weighed alike.
    """
    share = Fraction(F("generation_tokens"), F(f"{LINE}generation_tokens"))
    sums = allocated_ledger_sums(line=LINE, share=share)
    if utilization:
        for name in ("util_pct_s", "util_observed_s"):
            sums[f"s_{name}"] = Sum(ExpressionWrapper(F(f"{LINE}{name}") * share, output_field=FloatField()))
    return sums
