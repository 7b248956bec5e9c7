"""``{% scope2_panel organization period api_query %}``: Scope 2 dual reporting from contractual
instruments and the 24/7 CFE score, on the sustainability dashboard (a panel of its own, so that
the dashboard's view stays as it is)."""

from __future__ import annotations

from typing import Any

from django import template

from accounting.instruments.exports import scope2_output
from accounting.instruments.selectors import scope2_report

register = template.Library()


@register.inclusion_tag("accounting/scope2_panel.html")
def scope2_panel(organization: Any, period: Any, api_query: str) -> dict[str, Any]:
    if organization is None:
        return {"scope2": None}
    report = scope2_report(organization_id=organization.pk, start=period.start, end=period.end)
    return {"scope2": scope2_output(report, organization), "api_query": api_query}
