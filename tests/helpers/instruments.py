"""The hand-worked year shared by the allocation and API tests.

A site in DE draws 10 kWh of facility energy every hour of 2025 (8,760 h,
87,600 kWh), at a location-based 300 gCO2e/kWh. A solar PPA delivers, every
day: 6 kWh at 06:00 and 19:00, 10 kWh in 07-09 and 16-18 (6 hours), 20 kWh in
10-15 (6 hours): 2 x 6 + 6 x 10 + 6 x 20 = 192 kWh/day, 70,080 kWh a year.

- annual matching: 70,080 / 87,600 = 80 % covered;
- hourly matching: per day 2 x 6 + 12 x 10 = 132 kWh of the 240 consumed
  (the 10 kWh above consumption in each of the six midday hours is lost):
  132 / 240 = 55 %.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

from accounting.models import NodeHourLedger
from accounting.site_hours import site_hours_rebuild
from fleets.models import Node, Site
from scope2.quality import Evidence

YEAR_START = datetime(2025, 1, 1, tzinfo=UTC)
YEAR_END = datetime(2026, 1, 1, tzinfo=UTC)
HOURS = [YEAR_START + timedelta(hours=index) for index in range(8760)]
LOAD_KWH = Decimal(10)
LOCATION_G_PER_KWH = Decimal(300)
SOLAR_KWH_BY_HOUR_OF_DAY = {6: 6, 19: 6} | dict.fromkeys((7, 8, 9, 16, 17, 18), 10) | dict.fromkeys(range(10, 16), 20)
PPA_KWH = Decimal(192 * 365)  # 70,080 kWh


# What a cancellation statement gives an auditor (Quality Criteria 2-3), for the API and the pure tests.
EVIDENCE_FIELDS = {
    "registry": "UBA Herkunftsnachweisregister", "certificate_id_from": "DE-HKN-2025-000001",
    "certificate_id_to": "DE-HKN-2025-070080", "cancellation_date": "2026-03-31", "beneficiary": "Org A GmbH",
    "consumption_period_start": "2025-01-01", "consumption_period_end": "2025-12-31",
}  # fmt: skip
EVIDENCE = Evidence(
    registry="UBA Herkunftsnachweisregister", certificate_id_from="DE-HKN-2025-000001",
    certificate_id_to="DE-HKN-2025-070080", cancellation_date=date(2026, 3, 31), beneficiary="Org A GmbH",
    consumption_start=date(2025, 1, 1), consumption_end=date(2025, 12, 31), purchase_type="direct_line",
    attributes_exclusive=True, supplier_rate_delivered_basis=True, reference="PPA-2024-117",
)  # fmt: skip


def solar_profile_kwh() -> dict[datetime, Decimal]:
    return {
        hour: Decimal(SOLAR_KWH_BY_HOUR_OF_DAY[hour.hour]) for hour in HOURS if hour.hour in SOLAR_KWH_BY_HOUR_OF_DAY
    }


def ledger_hours(node: Node, hours: list[datetime], *, facility_kwh: Decimal, location_g_per_kwh: Decimal) -> None:
    """Stored ledger lines for ``node``: only what Scope 2 reads is meaningful (energy and location carbon)."""
    zero = Decimal(0)
    NodeHourLedger.objects.bulk_create(
        [
            NodeHourLedger(
                node=node, hour_start=hour, organization=node.fleet.organization, fleet=node.fleet, site=node.site,
                gpu_model="h100-sxm", currency="EUR", held_h=Decimal(1), observed_s=Decimal(3600), gpu_count=1,
                it_kwh=facility_kwh, facility_kwh=facility_kwh, pue=Decimal(1), electricity_cost=zero,
                hardware_cost=zero, cost=zero, location_co2e_g=facility_kwh * location_g_per_kwh,
                market_co2e_g=None, embodied_co2e_g_low=zero, embodied_co2e_g_central=zero,
                embodied_co2e_g_high=zero, embodied_unknown_gpu_h=zero, prompt_tokens=0, generation_tokens=0,
                idle_gpu_h=zero, idle_cost=zero, idle_facility_kwh=zero, energy_method="gpu_sum",
                energy_counter_j=0.0, energy_integrated_j=0.0, electricity_status="priced",
                location_gco2e_per_kwh=location_g_per_kwh, location_source="test", location_is_fallback=False,
                amortization="time",
            )
            for hour in hours
        ],
        batch_size=1000,
    )  # fmt: skip
    site_hours_rebuild()  # lines written by hand: their site-hours summed again


def ppa_body(site: Site, **changes: Any) -> dict[str, Any]:
    profile = [{"hour_start": hour.isoformat(), "mwh": str(kwh / 1000)} for hour, kwh in solar_profile_kwh().items()]
    body = {
        "site": site.pk, "kind": "ppa", "name": "Solar PPA Brandenburg", "volume_mwh": str(PPA_KWH / 1000),
        "delivery_start": "2025-01-01T00:00:00Z", "delivery_end": "2026-01-01T00:00:00Z", "vintage_year": 2025,
        "generation_zone": "DE", "technology": "solar", "evidence_reference": "PPA-2024-117, signed 2024-11-02",
        "hourly_profile": profile, "purchase_type": "direct_line", "attributes_exclusive": True, **EVIDENCE_FIELDS,
    }  # fmt: skip
    return body | changes
