"""``{% scope2_panel organization period api_query %}``: Scope 2 dual reporting from contractual
instruments and the 24/7 CFE score, on the sustainability dashboard (a panel of its own, so that
the dashboard's view stays as it is)."""

from __future__ import annotations

from typing import Any

from django import template

from scope2.exports import scope2_output
from scope2.selectors import scope2_report

register = template.Library()


@register.inclusion_tag("scope2/scope2_panel.html")
def scope2_panel(
    organization: Any, period: Any, api_query: str, ledger_market_kgco2e: float | None = None
) -> dict[str, Any]:
    """``ledger_market_kgco2e``: the page's tile (site market factors on ledger lines), reconciled below the
    table with the instruments' market-based figure, so that the page never shows two without saying why."""
    if organization is None:
        return {"scope2": None}
    report = scope2_report(organization_id=organization.pk, start=period.start, end=period.end)
    shown = scope2_output(report, organization)
    instruments_kg = shown["market"]["kgco2e"]
    differ = ledger_market_kgco2e is not None and instruments_kg is not None and ledger_market_kgco2e != instruments_kg
    return {
        "scope2": shown, "api_query": api_query, "ledger_market_kgco2e": ledger_market_kgco2e,
        "market_difference_kgco2e": (ledger_market_kgco2e - instruments_kg) if differ else None,
    }  # fmt: skip
