"""The embedded default: annual average (and advisory marginal) intensity per zone.

Lookup rules for ``annual_intensity(zone, year)``:

1. ``zone`` is an Electricity Maps zone key, matched case-insensitively
   ("DE", "SE-SE3", "US-CAL-CISO"). The Electricity Maps yearly file of the
   nearest year available is used: a year past the newest file uses the newest,
   a year before the oldest uses the oldest, a tie between two years uses the later.
2. A zone missing from Electricity Maps falls back to Ember's latest yearly value
   for its country: the letters before the first "-" as ISO 3166 alpha-2
   ("GB-REGION-3" → "GB" → "GBR"), mapped to alpha-3 through the UNFCCC file's
   pairs. Ember has one value per country (its own latest year, e.g. 2023).
3. Otherwise None: the caller shows the zone as unknown, never as 0.

``marginal_intensity(zone)`` gives the UNFCCC operating-margin factor of the
zone's country (kind "marginal", for placement advice only, never inventories).
A factor published as "0" means "no data" there and is returned as None.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from functools import cache
from pathlib import Path
from typing import Any

from grid.hours import hour_starts
from grid.intensity import AVERAGE, DIRECT, LIFECYCLE, MARGINAL, Basis, HourlyIntensity, Kind, quantize_intensity

DATA_DIR = Path(__file__).resolve().parent / "data"

EM_LICENCE = "ODbL-1.0"
EM_ATTRIBUTION = "Electricity Maps (electricitymaps.com) yearly data, via the Green Web Foundation's CO2.js"
EMBER_LICENCE = "CC-BY-SA-4.0"
EMBER_ATTRIBUTION = "Ember (ember-energy.org) yearly electricity data, via the Green Web Foundation's CO2.js"
UNFCCC_SOURCE = "unfccc-ifi-2021"
UNFCCC_YEAR = 2021
UNFCCC_LICENCE = "CC-BY-SA-4.0"
UNFCCC_ATTRIBUTION = "UNFCCC IFI harmonized default grid emission factors (2021), via the Green Web Foundation's CO2.js"
# Why the shipped annual averages stand on the lifecycle basis in Scope 2 (grid/data/README.md, docs/grid.md).
LIFECYCLE_ONLY_NOTE = "lifecycle basis: includes upstream (Scope 3 Cat 3) emissions; direct factor unavailable"

# The UNFCCC file gives Cayman Islands the code "CY" (Cyprus); its real alpha-2 is
# "KY". Ember also has Hong Kong and Macao, which the UNFCCC file lacks.
_ISO2_CORRECTIONS = {"CY": "CYP", "KY": "CYM", "HK": "HKG", "MO": "MAC"}


@dataclass(frozen=True)
class AnnualIntensity:
    """One yearly figure with everything a report must show beside it.

    ``year`` is the data's year (which may differ from the year asked for);
    ``source`` is e.g. "electricitymaps-yearly-2024", "ember-2023", "unfccc-ifi-2021".
    ``basis``: the Electricity Maps yearly and Ember figures are lifecycle (no direct
    figure is shipped for them: ``LIFECYCLE_ONLY_NOTE``); the UNFCCC operating-margin
    factors count fuel combustion only (direct).
    """

    zone: str
    year: int
    gco2e_per_kwh: Decimal
    kind: Kind
    source: str
    licence: str
    attribution: str
    basis: Basis = LIFECYCLE


@dataclass(frozen=True)
class AnnualData:
    electricitymaps: dict[int, dict[str, Decimal]]
    ember: dict[str, tuple[int, Decimal]]
    marginal: dict[str, Decimal]
    iso3_by_iso2: dict[str, str]

    def nearest_year(self, year: int) -> int:
        return min(self.electricitymaps, key=lambda available: (abs(available - year), -available))

    def average(self, zone: str, year: int) -> AnnualIntensity | None:
        key = normalize_zone(zone)
        data_year = self.nearest_year(year)
        value = self.electricitymaps[data_year].get(key)
        if value is not None:
            source = f"electricitymaps-yearly-{data_year}"
            return AnnualIntensity(key, data_year, value, AVERAGE, source, EM_LICENCE, EM_ATTRIBUTION)
        return self._ember(key)

    def _ember(self, zone: str) -> AnnualIntensity | None:
        iso3 = self.iso3_by_iso2.get(country_of(zone))
        if iso3 is None or iso3 not in self.ember:
            return None
        data_year, value = self.ember[iso3]
        return AnnualIntensity(zone, data_year, value, AVERAGE, f"ember-{data_year}", EMBER_LICENCE, EMBER_ATTRIBUTION)

    def marginal_for(self, zone: str) -> AnnualIntensity | None:
        key = normalize_zone(zone)
        value = self.marginal.get(country_of(key))
        if value is None:
            return None
        return AnnualIntensity(
            key, UNFCCC_YEAR, value, MARGINAL, UNFCCC_SOURCE, UNFCCC_LICENCE, UNFCCC_ATTRIBUTION, basis=DIRECT
        )


def normalize_zone(zone: str) -> str:
    return zone.strip().upper()


def country_of(zone: str) -> str:
    """ISO alpha-2 part of a zone key: "US-CAL-CISO" → "US"."""
    return normalize_zone(zone).split("-", 1)[0]


def _read(name: str) -> Any:
    with (DATA_DIR / name).open(encoding="utf-8") as handle:
        return json.load(handle, parse_float=Decimal, parse_int=Decimal)


def _electricitymaps() -> dict[int, dict[str, Decimal]]:
    years: dict[int, dict[str, Decimal]] = {}
    for path in sorted(DATA_DIR.glob("electricitymaps-yearly-*.json")):
        year = int(path.stem.rsplit("-", 1)[1])
        zones = _read(path.name)
        years[year] = {
            key.upper(): quantize_intensity(entry["carbonIntensity"]["value"]) for key, entry in zones.items()
        }
    if not years:
        raise RuntimeError(f"no electricitymaps-yearly-*.json under {DATA_DIR}")
    return years


def _ember() -> dict[str, tuple[int, Decimal]]:
    entries = _read("ember-average-intensities.json").values()
    return {
        entry["country_code"]: (int(entry["year"]), quantize_intensity(entry["emissions_intensity_gco2_per_kwh"]))
        for entry in entries
        if entry["country_code"]  # regions (World, EU, G20) have no country code
    }


def _unfccc_rows() -> list[dict[str, str]]:
    rows = _read("unfccc-marginal-intensities-2021.json").values()
    return [row for row in rows if row.get("country_code_iso_2") and row.get("country_code_iso_3")]


def _iso3_by_iso2(rows: list[dict[str, str]]) -> dict[str, str]:
    mapping: dict[str, str] = {}
    for row in rows:
        iso2, iso3 = row["country_code_iso_2"].upper(), row["country_code_iso_3"].upper()
        if iso2 in _ISO2_CORRECTIONS:
            continue
        if mapping.setdefault(iso2, iso3) != iso3:
            raise RuntimeError(f"ambiguous ISO alpha-2 {iso2}: {mapping[iso2]} or {iso3}; add a correction")
    return {**mapping, **_ISO2_CORRECTIONS}


def _marginal(rows: list[dict[str, str]], iso3_by_iso2: dict[str, str]) -> dict[str, Decimal]:
    iso2_by_iso3 = {iso3: iso2 for iso2, iso3 in iso3_by_iso2.items()}
    factors = {}
    for row in rows:
        value = Decimal(row["Operating Margin Grid Emission"])
        iso2 = iso2_by_iso3.get(row["country_code_iso_3"].upper())
        if iso2 is not None and value > 0:  # "0" marks a country without a published factor
            factors[iso2] = quantize_intensity(value)
    return factors


@cache
def load_annual_data() -> AnnualData:
    """The shipped files, parsed once per process."""
    rows = _unfccc_rows()
    iso3_by_iso2 = _iso3_by_iso2(rows)
    return AnnualData(_electricitymaps(), _ember(), _marginal(rows, iso3_by_iso2), iso3_by_iso2)


def annual_intensity(zone: str, year: int) -> AnnualIntensity | None:
    """Average intensity of ``zone`` in ``year`` from the shipped data, or None if unknown."""
    return load_annual_data().average(zone, year)


def marginal_intensity(zone: str) -> AnnualIntensity | None:
    """UNFCCC operating-margin factor of the zone's country (advice only), or None."""
    return load_annual_data().marginal_for(zone)


class AnnualProvider:
    """The shipped annual averages as an IntensityProvider: each hour gets its year's average.

    Hours are flagged ``is_estimated``: a yearly mean stands in for the hour. An
    unknown zone gives an empty list, like a live provider with no data.
    """

    name = "annual"

    def fetch(self, zone: str, start: datetime, end: datetime) -> list[HourlyIntensity]:
        hours, by_year = hour_starts(start, end), {}
        for hour in hours:
            if hour.year not in by_year:
                by_year[hour.year] = annual_intensity(zone, hour.year)
        return [_annual_hour(zone, hour, value) for hour in hours if (value := by_year[hour.year]) is not None]


def _annual_hour(zone: str, hour: datetime, value: AnnualIntensity) -> HourlyIntensity:
    return HourlyIntensity(
        zone=zone,
        hour_start=hour,
        gco2e_per_kwh=value.gco2e_per_kwh,
        kind=AVERAGE,
        source=value.source,
        is_estimated=True,
        basis=value.basis,
    )
