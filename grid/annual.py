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

Both yearly figures are lifecycle. Beside each stands a direct figure where the zone's country
(the same alpha-2 → alpha-3 mapping) has a generation mix in ``direct-annual-2021.json``: the
zone's lifecycle figure x the mix's direct factor / its lifecycle factor (both the sum over
sources of share x Electricity Maps' per-mode factor; bin/build-direct-annual). A zone whose
country has no mix keeps the lifecycle figure alone (``LIFECYCLE_ONLY_NOTE``).

``marginal_intensity(zone)`` gives the UNFCCC operating-margin factor of the
zone's country (kind "marginal", for placement advice only, never inventories).
A factor published as "0" means "no data" there and is returned as None.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from functools import cache
from pathlib import Path
from typing import Any

from grid.hours import hour_starts
from grid.intensity import AVERAGE, DIRECT, LIFECYCLE, MARGINAL, Basis, HourlyIntensity, Kind, quantize_intensity

DATA_DIR = Path(__file__).resolve().parent / "data"

EM_LICENCE = "ODbL-1.0"
# The direct figure beside a yearly figure (module docstring; grid/data/README.md states the method).
DIRECT_MIX_FILE = "direct-annual-2021.json"
DIRECT_MIX_LICENCE = "CC-BY-4.0"
DIRECT_MIX_ATTRIBUTION = (
    "direct figure: the yearly figure x the direct/lifecycle ratio of the country's generation mix "
    "(Our World in Data energy data, CC BY 4.0, from Ember and the BP Statistical Review of World Energy; "
    "Electricity Maps per-production-mode factors, MIT)"
)
EM_ATTRIBUTION = (
    "Electricity Maps (electricitymaps.com) yearly data, via the Green Web Foundation's CO2.js; "
    + DIRECT_MIX_ATTRIBUTION
)
EMBER_LICENCE = "CC-BY-SA-4.0"
EMBER_ATTRIBUTION = (
    f"Ember (ember-energy.org) yearly electricity data, via the Green Web Foundation's CO2.js; {DIRECT_MIX_ATTRIBUTION}"
)
UNFCCC_SOURCE = "unfccc-ifi-2021"
UNFCCC_YEAR = 2021
UNFCCC_LICENCE = "CC-BY-SA-4.0"
UNFCCC_ATTRIBUTION = "UNFCCC IFI harmonized default grid emission factors (2021), via the Green Web Foundation's CO2.js"
# Why a shipped annual average of a zone without a country mix stands on the lifecycle basis in Scope 2
# (grid/data/README.md, docs/grid.md).
LIFECYCLE_ONLY_NOTE = "lifecycle basis: includes upstream (Scope 3 Cat 3) emissions; direct factor unavailable"

# The UNFCCC file gives Cayman Islands the code "CY" (Cyprus); its real alpha-2 is
# "KY". Ember also has Hong Kong and Macao, which the UNFCCC file lacks.
_ISO2_CORRECTIONS = {"CY": "CYP", "KY": "CYM", "HK": "HKG", "MO": "MAC"}


@dataclass(frozen=True)
class AnnualIntensity:
    """One yearly figure with everything a report must show beside it.

    ``year`` is the data's year (which may differ from the year asked for);
    ``source`` is e.g. "electricitymaps-yearly-2024", "ember-2023", "unfccc-ifi-2021".
    ``basis``: the Electricity Maps yearly and Ember figures are lifecycle, with
    ``direct_gco2e_per_kwh`` beside them where the country's generation mix gives one
    (None: ``LIFECYCLE_ONLY_NOTE``); the UNFCCC operating-margin factors count fuel
    combustion only (direct).
    """

    zone: str
    year: int
    gco2e_per_kwh: Decimal
    kind: Kind
    source: str
    licence: str
    attribution: str
    basis: Basis = LIFECYCLE
    direct_gco2e_per_kwh: Decimal | None = None


@dataclass(frozen=True)
class MixFactors:
    """One country's generation mix as ``direct-annual-2021.json`` gives it: its year and its two factors."""

    year: int
    direct_gco2_per_kwh: Decimal
    lifecycle_gco2_per_kwh: Decimal

    def direct_of(self, lifecycle_gco2e_per_kwh: Decimal) -> Decimal:
        """The direct part of a lifecycle figure of this country's grid: at most the figure (so per source)."""
        return quantize_intensity(lifecycle_gco2e_per_kwh * self.direct_gco2_per_kwh / self.lifecycle_gco2_per_kwh)


@dataclass(frozen=True)
class AnnualData:
    electricitymaps: dict[int, dict[str, Decimal]]
    ember: dict[str, tuple[int, Decimal]]
    marginal: dict[str, Decimal]
    iso3_by_iso2: dict[str, str]
    mix: dict[str, MixFactors] = field(default_factory=dict)  # by ISO 3166 alpha-3

    def nearest_year(self, year: int) -> int:
        return min(self.electricitymaps, key=lambda available: (abs(available - year), -available))

    def average(self, zone: str, year: int) -> AnnualIntensity | None:
        key = normalize_zone(zone)
        data_year = self.nearest_year(year)
        value = self.electricitymaps[data_year].get(key)
        if value is not None:
            source = f"electricitymaps-yearly-{data_year}"
            direct = self.direct_of(key, value)
            return AnnualIntensity(
                key, data_year, value, AVERAGE, source, EM_LICENCE, EM_ATTRIBUTION, direct_gco2e_per_kwh=direct
            )
        return self._ember(key)

    def mix_of(self, zone: str) -> MixFactors | None:
        """The generation mix of the zone's country, or None."""
        iso3 = self.iso3_by_iso2.get(country_of(zone))
        return None if iso3 is None else self.mix.get(iso3)

    def direct_of(self, zone: str, lifecycle_gco2e_per_kwh: Decimal) -> Decimal | None:
        mix = self.mix_of(zone)
        return None if mix is None else mix.direct_of(lifecycle_gco2e_per_kwh)

    def _ember(self, zone: str) -> AnnualIntensity | None:
        iso3 = self.iso3_by_iso2.get(country_of(zone))
        if iso3 is None or iso3 not in self.ember:
            return None
        data_year, value = self.ember[iso3]
        return AnnualIntensity(
            zone, data_year, value, AVERAGE, f"ember-{data_year}", EMBER_LICENCE, EMBER_ATTRIBUTION,
            direct_gco2e_per_kwh=self.direct_of(zone, value),
        )  # fmt: skip

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


def _mix() -> dict[str, MixFactors]:
    countries = _read(DIRECT_MIX_FILE)["countries"]
    return {
        iso3: MixFactors(
            int(entry["year"]), Decimal(entry["direct_gco2_per_kwh"]), Decimal(entry["lifecycle_gco2_per_kwh"])
        )
        for iso3, entry in countries.items()
        if Decimal(entry["lifecycle_gco2_per_kwh"]) > 0
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
    return AnnualData(_electricitymaps(), _ember(), _marginal(rows, iso3_by_iso2), iso3_by_iso2, _mix())


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
        direct_gco2e_per_kwh=value.direct_gco2e_per_kwh,
    )
