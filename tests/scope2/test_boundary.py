"""The boundary rule itself (``scope2.boundary``), without a database: where a node-hour's electricity lands."""

from __future__ import annotations

from decimal import Decimal

import pytest

from scope2.boundary import (
    Boundary,
    Consolidation,
    ElectricityScope,
    HardwareScope,
    boundary_problem,
    choice_problem,
    electricity_scope,
    hardware_scope,
)


@pytest.mark.parametrize(
    ("tenure", "power_in_rent", "choice", "expected"),
    [
        ("owned", False, "auto", ElectricityScope.SCOPE_2),
        ("rented", False, "auto", ElectricityScope.SCOPE_2),  # power billed to the organization
        ("rented", True, "auto", ElectricityScope.CATEGORY_1),  # the provider operates and powers it
        ("rented", True, "category_8", ElectricityScope.CATEGORY_8),
        ("rented", True, "scope_2", ElectricityScope.SCOPE_2),
        ("rented", False, "category_8", ElectricityScope.CATEGORY_8),  # an operating lease under financial control
        ("owned", True, "auto", ElectricityScope.CATEGORY_1),  # bought since: its rented hours stay Scope 3
        ("owned", False, "category_8", ElectricityScope.SCOPE_2),  # a choice made while rented: owned hours are 2
    ],
)
def test_where_a_node_hours_electricity_lands(tenure: str, power_in_rent: bool, choice: str, expected: str) -> None:
    assert electricity_scope(tenure=tenure, power_in_rent=power_in_rent, choice=choice) is expected


def test_an_owned_node_takes_no_scope_3_choice_and_its_hardware_is_category_2() -> None:
    assert choice_problem(tenure="owned", choice="category_1") is not None
    assert choice_problem(tenure="owned", choice="scope_2") is None
    assert choice_problem(tenure="rented", choice="category_8") is None
    assert (hardware_scope(tenure="owned"), hardware_scope(tenure="rented")) == (
        HardwareScope.CATEGORY_2, HardwareScope.NOT_CATEGORY_2,
    )  # fmt: skip


def test_equity_share_is_the_only_approach_with_a_share() -> None:
    assert Boundary().share == 1 and Boundary().approach is Consolidation.OPERATIONAL_CONTROL
    assert Boundary(Consolidation.EQUITY_SHARE, Decimal(40)).share == Decimal("0.4")
    assert "equity_share_pct" in boundary_problem(approach="equity_share", equity_share_pct=None)
    assert "equity_share_pct" in boundary_problem(approach="equity_share", equity_share_pct=Decimal(0))
    assert "equity_share_pct" in boundary_problem(approach="financial_control", equity_share_pct=Decimal(40))
    assert boundary_problem(approach="equity_share", equity_share_pct=Decimal(100)) == {}
