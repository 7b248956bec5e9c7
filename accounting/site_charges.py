"""A site's monthly tariff charges: the fixed charge and the demand (kW) charge, per site and UTC month.

These are charges of the site and its month, not of a node-hour, so they are not on the
ledger's lines (nor in their ``cost``): every report, page and export that shows them reads
them from here, the one rule::

    window        = the UTC month, within the tariff's validity, the period asked for, and up to now
    fixed         = fixed_per_month x window / the month's length       (prorated by the time in force)
    peak_kw       = max over the window's hours of the site's facility kWh summed over its nodes, / 1 h
                                                                         (an hourly-mean kW)
    demand        = demand_per_kw_month x peak_kw                        (the window's peak, not prorated)
    month_complete = the month is over (a month in progress has a fixed charge to date and a peak so far)

Departure, stated: a utility's meter bills the peak of 15-minute (or shorter) intervals; the
ledger holds hours, so its peak is an hourly mean and understates a peak that lasted minutes.
Money in the site's currency, net of VAT (a tariff's ``prices_include_vat`` applies to its
prices per kWh); ``Decimal``, nothing rounded.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal

from django.db.models import DecimalField, Q, Sum

from accounting.ledger.units import ZERO
from accounting.models import NodeHourLedger, SiteTariff
from common.periods import month_bounds

_AMOUNT = DecimalField(max_digits=28, decimal_places=12)


@dataclass(frozen=True)
class SiteMonthCharge:
    """One tariff's monthly charges of one site over one UTC month's ``[start, end)`` window."""

    organization_id: int
    site_id: int
    site_name: str
    grid_zone: str
    currency: str
    month: datetime  # the month's first instant (UTC)
    tariff_id: str
    start: datetime
    end: datetime
    month_share: Decimal  # of the month's length, the window's
    fixed: Decimal
    demand: Decimal
    peak_kw: Decimal | None  # None: no line in the window
    peak_hour: datetime | None
    month_complete: bool

    @property
    def total(self) -> Decimal:
        return self.fixed + self.demand


def fixed_charge(fixed_per_month: Decimal, start: datetime, end: datetime) -> Decimal:
    """The fixed charge of ``[start, end)`` within one month: prorated by its share of the month's length."""
    window_s, month_s = _seconds(start, end)
    return fixed_per_month * window_s / month_s  # multiplied first: 300 x 7 days / 30 days is 70 exactly


def month_share(start: datetime, end: datetime) -> Decimal:
    """The share (0-1) of its UTC month that ``[start, end)`` (within that month) covers."""
    window_s, month_s = _seconds(start, end)
    return window_s / month_s


def _seconds(start: datetime, end: datetime) -> tuple[Decimal, Decimal]:
    """Whole seconds of ``[start, end)`` and of the UTC month holding ``start`` (exact: instants are on hours)."""
    month_start, month_end = month_bounds(start)
    return Decimal((end - start) // timedelta(seconds=1)), Decimal((month_end - month_start) // timedelta(seconds=1))


def demand_charge(demand_per_kw_month: Decimal, peak_kw: Decimal | None) -> Decimal:
    """The demand charge of a month: the rate per kW and month x the month's peak kW (none measured: 0)."""
    return ZERO if peak_kw is None else demand_per_kw_month * peak_kw


def site_monthly_charges(
    *,
    organization_ids: Collection[int],
    start: datetime,
    end: datetime,
    now: datetime,
    site_ids: Collection[int] = (),
) -> list[SiteMonthCharge]:
    """The fixed and demand charges of the organizations' sites (``site_ids``: only those) per UTC month of
    ``[start, end)``, up to ``now``, ordered by site, month and tariff; tariffs with neither charge give none."""
    now = now.replace(microsecond=0)  # a month in progress is charged to the second
    tariffs = SiteTariff.objects.filter(site__organization_id__in=organization_ids, valid_from__lt=min(end, now))
    tariffs = tariffs.filter(Q(valid_to__isnull=True) | Q(valid_to__gt=start))
    tariffs = tariffs.filter(Q(fixed_per_month__gt=0) | Q(demand_per_kw_month__gt=0)).select_related("site")
    if site_ids:
        tariffs = tariffs.filter(site_id__in=site_ids)
    charges = [charge for tariff in tariffs for charge in _tariff_months(tariff, start, min(end, now), now)]
    return sorted(charges, key=lambda charge: (charge.site_name, charge.site_id, charge.month, charge.start))


def _tariff_months(tariff: SiteTariff, start: datetime, end: datetime, now: datetime) -> Iterator[SiteMonthCharge]:
    """The tariff's charges in each month of ``[start, end)`` it is in force."""
    first = max(start, tariff.valid_from)
    last = min(end, tariff.valid_to) if tariff.valid_to else end
    month, _ = month_bounds(first)
    while month < last:
        next_month = month_bounds(month)[1]
        window = (max(month, first), min(next_month, last))
        if window[0] < window[1]:
            yield _month_charge(tariff, month, window, month_complete=next_month <= now)
        month = next_month


def _month_charge(
    tariff: SiteTariff, month: datetime, window: tuple[datetime, datetime], *, month_complete: bool
) -> SiteMonthCharge:
    site = tariff.site
    peak_hour, peak_kw = site_peak(site_id=site.pk, start=window[0], end=window[1])
    return SiteMonthCharge(
        organization_id=site.organization_id, site_id=site.pk, site_name=site.name, grid_zone=site.grid_zone,
        currency=site.currency, month=month, tariff_id=f"tariff-{tariff.pk}", start=window[0], end=window[1],
        month_share=month_share(*window), fixed=fixed_charge(Decimal(tariff.fixed_per_month), *window),
        demand=demand_charge(Decimal(tariff.demand_per_kw_month), peak_kw), peak_kw=peak_kw, peak_hour=peak_hour,
        month_complete=month_complete,
    )  # fmt: skip


def site_peak(*, site_id: int, start: datetime, end: datetime) -> tuple[datetime | None, Decimal | None]:
    """The hour of ``[start, end)`` whose facility kWh, summed over the site's nodes, is highest, and that
    sum as kW (an hour's kWh / 1 h); the earliest such hour; ``(None, None)`` without lines."""
    hours = NodeHourLedger.objects.filter(site_id=site_id, hour_start__gte=start, hour_start__lt=end)
    peak = (
        hours.values("hour_start")
        .annotate(kwh=Sum("facility_kwh", output_field=_AMOUNT))
        .order_by("-kwh", "hour_start")
        .first()
    )
    if peak is None:
        return None, None
    return peak["hour_start"], Decimal(peak["kwh"])
