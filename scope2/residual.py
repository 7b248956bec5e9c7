"""Shipped reference figures the allocation needs (pure: reads package data, no Django).

- Residual mixes (``data/residual-mixes.json``): per year and zone, gCO2e/kWh.
  The table ships EMPTY: see ``data/README.md`` for why and how an organization
  enters the figures it holds (``ResidualMixFactor``, which takes precedence).
- The grid's carbon-free share per zone and year, for the 24/7 CFE score: the
  ``carbonFreeEnergy`` field of the Electricity Maps yearly files shipped in
  ``grid/data`` (ODbL, Electricity Maps; see that README).
"""

from __future__ import annotations

import json
from decimal import Decimal
from functools import cache
from importlib import resources
from typing import Any

from scope2.allocation import ResidualMix

GRID_CFE_YEARS = range(2021, 2026)


@cache
def _residual_table() -> dict[str, Any]:
    text = resources.files("scope2").joinpath("data", "residual-mixes.json").read_text("utf-8")
    table: dict[str, Any] = json.loads(text)
    return table


def shipped_residual_mix(*, zone: str, year: int) -> ResidualMix | None:
    """The shipped figure for ``zone`` (or its country) of the latest year not after ``year``; ``None`` when the
    table has none."""
    table = _residual_table()
    published = sorted((int(shipped) for shipped in table.get("years", {}) if int(shipped) <= year), reverse=True)
    for shipped in published:
        by_zone = table["years"][str(shipped)]
        for key in (zone.upper(), zone.upper()[:2]):
            if key in by_zone:
                return ResidualMix(Decimal(str(by_zone[key])), f"{table['source']} {shipped}", shipped)
    return None


@cache
def _grid_cfe(year: int) -> dict[str, Decimal]:
    name = f"electricitymaps-yearly-{year}.json"
    rows = json.loads(resources.files("grid").joinpath("data", name).read_text("utf-8"))
    return {
        zone: Decimal(str(row["carbonFreeEnergy"]["value"])) / 100
        for zone, row in rows.items()
        if (row.get("carbonFreeEnergy") or {}).get("value") is not None
    }


def grid_cfe_share(*, zone: str, year: int) -> tuple[Decimal, str] | None:
    """The zone's yearly carbon-free share (0-1) and its source tag; the nearest shipped year stands in."""
    nearest = min(GRID_CFE_YEARS, key=lambda shipped: abs(shipped - year))
    share = _grid_cfe(nearest).get(zone.upper())
    return None if share is None else (share, f"electricitymaps-yearly-{nearest} carbonFreeEnergy")
