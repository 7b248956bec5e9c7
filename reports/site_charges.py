"""The usage report's and the finance page's ``site_charges``: each site's fixed and demand charges per month.

The charges are worked out in one place, ``accounting.site_charges``; this module only
shows them: each month's figures rounded once to the currency's minor unit, and a total per
currency of the exact amounts, rounded once. They are the site's, not the lines': not in any
row's ``cost``, and added to a page total as a line of their own.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable
from datetime import datetime
from decimal import Decimal
from typing import Any

from rest_framework import serializers

from accounting.ledger.units import ZERO
from accounting.site_charges import SiteMonthCharge, site_monthly_charges
from reports.display import money
from reports.serializers import money_field, number


class SiteMonthChargeSerializer(serializers.Serializer):
    site_id = serializers.IntegerField()
    site = serializers.CharField()
    month = serializers.DateField(help_text="the UTC calendar month (its first day)")
    tariff_id = serializers.CharField(help_text="the site tariff carrying the charges (tariff-<id>)")
    start = serializers.DateTimeField(help_text="the part of the month charged: within the tariff and the period")
    end = serializers.DateTimeField(help_text="exclusive; the month's end, or now for the month in progress")
    currency = serializers.CharField()
    fixed = money_field("fixed_per_month x the share of the month in force (and charged so far)")
    demand = money_field("demand_per_kw_month x peak_kw")
    total = money_field("fixed + demand")
    peak_kw = number(
        "the highest hourly site demand in the window: the hour's facility kWh over the site's nodes / 1 h (an "
        "hourly mean, which understates a billing meter's 15-minute peak)"
    )
    peak_hour = serializers.DateTimeField(allow_null=True, help_text="the hour of that peak (UTC)")
    month_complete = serializers.BooleanField(help_text="false: the month is in progress, its charges so far")


class SiteChargesTotalSerializer(serializers.Serializer):
    currency = serializers.CharField()
    fixed = money_field("the months' fixed charges, summed exactly and rounded once")
    demand = money_field("the months' demand charges, summed exactly and rounded once")
    total = money_field("fixed + demand")


class SiteChargesSerializer(serializers.Serializer):
    charges = SiteMonthChargeSerializer(many=True)
    totals = SiteChargesTotalSerializer(many=True, help_text="per currency")


def site_charges_output(charges: Iterable[SiteMonthCharge]) -> dict[str, Any]:
    """The ``site_charges`` block: each site-month rounded once, and per currency the exact sums rounded once."""
    charges = list(charges)
    sums: dict[str, list[Decimal]] = defaultdict(lambda: [ZERO, ZERO])
    for charge in charges:
        sums[charge.currency][0] += charge.fixed
        sums[charge.currency][1] += charge.demand
    return {
        "charges": [_charge_output(charge) for charge in charges],
        "totals": [
            {
                "currency": currency,
                "fixed": money(fixed, currency),
                "demand": money(demand, currency),
                "total": money(fixed + demand, currency),
            }
            for currency, (fixed, demand) in sorted(sums.items())
        ],
    }


def site_charges_of(
    *, organization_ids: Collection[int], start: datetime, end: datetime, now: datetime, site_ids: Collection[int] = ()
) -> dict[str, Any]:
    """The ``site_charges`` block of a report over ``[start, end)``."""
    found = site_monthly_charges(organization_ids=organization_ids, start=start, end=end, now=now, site_ids=site_ids)
    return site_charges_output(found)


def _charge_output(charge: SiteMonthCharge) -> dict[str, Any]:
    currency = charge.currency
    return {
        "site_id": charge.site_id, "site": charge.site_name, "month": charge.month.date(),
        "tariff_id": charge.tariff_id, "start": charge.start, "end": charge.end, "currency": currency,
        "fixed": money(charge.fixed, currency), "demand": money(charge.demand, currency),
        "total": money(charge.total, currency),
        "peak_kw": None if charge.peak_kw is None else float(charge.peak_kw),
        "peak_hour": charge.peak_hour, "month_complete": charge.month_complete,
    }  # fmt: skip
