"""The headline question answered once: each fleet against a baseline fleet, LLM model by LLM model.

The figures are the comparison report by LLM model exactly as ``/api/v1/reports/comparison/?by=llm_model``
answers it and ``/compare/?by=llm_model`` shows it (``fleet_comparison`` and ``comparison_row_output``), so
``manage.py headline``, ``seed_demo``'s summary and the README's figures are one answer. Idle capacity is
shown apart (``IDLE_TREATMENT``): node-hours that served no output tokens are a row of their own and in no
LLM model's figures. A ratio compares an LLM model's figure with the same LLM model's on the baseline fleet
(like for like); where the baseline fleet does not serve that model there is no ratio.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from reports.display import comparison_row_output
from reports.selectors import fleet_comparison

IDLE_TREATMENT = "idle shown apart"
IDLE_NOTE = (
    "idle shown apart: node-hours that served no output tokens are their fleet's idle row, "
    "not in any LLM model's figures"
)
RATIO_DIGITS = 2  # significant digits of a headline ratio (its figures keep the report's 4)


def headline_rows(*, organization_ids: Collection[int], start: datetime, end: datetime) -> list[dict[str, Any]]:
    """The comparison report by LLM model, as the API answers it (idle shown apart)."""
    comparison = fleet_comparison(organization_ids=organization_ids, start=start, end=end, by_llm_model=True)
    return [comparison_row_output(row) for row in comparison]


@dataclass(frozen=True)
class HeadlineRatio:
    """``fleet`` against ``baseline`` on one LLM model: its figure over the baseline's (``None``: unknown)."""

    llm_model: str
    fleet: str
    baseline: str
    cost_per_1m_output_tokens: Decimal | None
    ttft_p99: Decimal | None
    it_j_per_output_token: Decimal | None


def headline_ratios(rows: list[dict[str, Any]], *, fleet: str, baseline: str) -> list[HeadlineRatio]:
    """Per LLM model that both fleets serve (idle rows left out), ``fleet``'s figures over ``baseline``'s."""
    served = {(row["fleet_name"], row["llm_model"]): row for row in rows if row["llm_model"]}
    models = sorted({model for name, model in served if name == fleet and (baseline, model) in served})
    return [
        HeadlineRatio(
            model,
            fleet,
            baseline,
            *(_ratio(served[(fleet, model)][name], served[(baseline, model)][name]) for name in _RATIO_FIGURES),
        )
        for model in models
    ]


_RATIO_FIGURES = ("cost_per_1m_output_tokens", "ttft_p99_ms", "it_j_per_output_token")


def _ratio(value: Any, base: Any) -> Decimal | None:
    if value is None or base is None or not Decimal(str(base)):
        return None
    ratio = Decimal(str(value)) / Decimal(str(base))
    return ratio.quantize(Decimal(1).scaleb(ratio.adjusted() - RATIO_DIGITS + 1))


def ratio_text(ratio: Decimal | None) -> str:
    """``0.34x``, ``15x``: a ratio as the README and the terminal print it."""
    return "-" if ratio is None else f"{ratio:f}x"


def headline_lines(rows: list[dict[str, Any]], *, title: str, fleet: str, baseline: str) -> Iterator[str]:
    """The report's rows per fleet and LLM model, then each LLM model's ratios: the text the terminal shows."""
    yield f"{title}: the comparison report by LLM model (/api/v1/reports/comparison/?by=llm_model), per output token,"
    yield f"{IDLE_NOTE}"
    yield (
        f"{'fleet':<12}{'LLM model':<42}{'cost':>14}{'cost/1M output':>16}{'P99 TTFT':>10}{'J/output':>10}"
        f"{'idle share':>12}"
    )
    for row in rows:
        cost = None if row["cost"] is None else f"{row['cost']} {row['currency']}"
        yield (
            f"{row['fleet_name']:<12}{(row['llm_model'] or '(idle: no output tokens)')[:41]:<42}{_cell(cost, 14)}"
            f"{_cell(row['cost_per_1m_output_tokens'], 16)}{_cell(_ms(row['ttft_p99_ms']), 10)}"
            f"{_cell(row['it_j_per_output_token'], 10)}{_cell(_percent(row['idle_share']), 12)}"
        )
    for ratio in headline_ratios(rows, fleet=fleet, baseline=baseline):
        yield (
            f"{ratio.llm_model}: {fleet} costs {ratio_text(ratio.cost_per_1m_output_tokens)} {baseline}'s per 1M "
            f"output tokens; its P99 TTFT is {ratio_text(ratio.ttft_p99)} {baseline}'s, its J per output token "
            f"{ratio_text(ratio.it_j_per_output_token)}"
        )


def _cell(value: Any, width: int) -> str:
    return f"{'-' if value is None else value!s:>{width}}"


def _ms(value: Any) -> str | None:
    return None if value is None else f"{float(value):.0f} ms"


def _percent(value: Any) -> str | None:
    return None if value is None else f"{float(value):.1%}"
