"""The organizational boundary: where a node's electricity and its hardware land in the inventory.

Pure (no Django): every report that gives scopes imports these functions, so the rule lives here once.

GHG Protocol Corporate Standard, ch. 3 (setting organizational boundaries): an organization consolidates
its operations by **operational control** (the default here, as most companies use it), **financial
control** or **equity share** (its share of the operation's equity, applied to every emission figure).

Electricity (Scope 2 Guidance, ch. 5; Scope 3 Standard, Category 1, Category 8 and appendix A on leases):

- an **owned** node's electricity, and a **rented** node's whose power is billed to the organization (a
  tariff, no power in the rent), is electricity the organization purchases for equipment it operates:
  **Scope 2**;
- a **rented** node whose rent includes power (``NodePrice.includes_power``, the ledger line's
  electricity ``included``) is capacity in a facility the provider operates and powers: the provider's
  Scope 2, and the renter's **Scope 3**. By default **Category 1** (purchased goods and services: a GPU
  service, power, cooling and host in the price, as every cloud GPU rental), because Category 8
  (upstream leased assets) "is applicable only to companies that operate leased assets", and the
  renter does not operate the facility. Where the rental is a lease of an asset the organization does
  operate but its approach does not consolidate (financial control or equity share with an operating
  lease: appendix A), it may choose **Category 8** per node; where it operates the leased asset under
  operational control (appendix A: the lessee's Scope 1 and 2) it may choose **Scope 2**.

Hardware (Scope 3 Standard, Category 2 capital goods): an owned node's cards and host share are the
organization's capital goods, counted whole in the period they are acquired; a rented node's hardware
is the provider's capital good, not the renter's Category 2 (its share of it is in the service bought,
Category 1 or 8, and not estimated: stated as excluded).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from decimal import Decimal

HUNDRED = Decimal(100)
ONE = Decimal(1)


class Consolidation(enum.StrEnum):
    OPERATIONAL_CONTROL = "operational_control"
    FINANCIAL_CONTROL = "financial_control"
    EQUITY_SHARE = "equity_share"


DEFAULT_CONSOLIDATION = Consolidation.OPERATIONAL_CONTROL


class ElectricityScope(enum.StrEnum):
    """Where a node-hour's electricity lands."""

    SCOPE_2 = "scope_2"
    CATEGORY_1 = "category_1"  # Scope 3, purchased goods and services
    CATEGORY_8 = "category_8"  # Scope 3, upstream leased assets


class ElectricityChoice(enum.StrEnum):
    """An organization's choice for one node: ``auto`` follows the default rule."""

    AUTO = "auto"
    SCOPE_2 = "scope_2"
    CATEGORY_1 = "category_1"
    CATEGORY_8 = "category_8"


class HardwareScope(enum.StrEnum):
    CATEGORY_2 = "category_2"  # owned: capital goods, whole in the acquisition period
    NOT_CATEGORY_2 = "excluded_in_service"  # rented: the provider's capital good, not estimated in Category 1/8


OWNED = "owned"
RENTED = "rented"

DEFAULT_RULE = (
    "owned, or rented with power billed to the organization: Scope 2; rented with power in the rent: Scope 3 "
    "Category 1 (purchased services: the provider operates and powers the facility), unless the organization "
    "chose Category 8 (a leased asset it operates, outside its consolidation) or Scope 2 for the node"
)
RENTED_HARDWARE_NOTE = (
    "excluded: a rented node's hardware is the provider's capital good (its Category 2), not the renter's; the "
    "renter's share of it belongs with the service bought (Category 1 or 8) and is not estimated"
)


def default_electricity_scope(*, power_in_rent: bool) -> ElectricityScope:
    """The rule without a choice: only rented capacity with power in the rent leaves Scope 2 (Category 1)."""
    return ElectricityScope.CATEGORY_1 if power_in_rent else ElectricityScope.SCOPE_2


def electricity_scope(*, tenure: str, power_in_rent: bool, choice: str = ElectricityChoice.AUTO) -> ElectricityScope:
    """Where a node-hour's electricity lands: the organization's choice for a rented node, else the default.

    Power in the hour's rent means the node was rented in that hour, whatever its tenure is now (a node bought
    after it was rented: its rented hours stay Scope 3 by default). An owned node's own hours are always
    Scope 2 (``choice_problem`` refuses any other choice for an owned node)."""
    rented_then = power_in_rent or tenure == RENTED
    if rented_then and choice != ElectricityChoice.AUTO:
        return ElectricityScope(choice)
    return default_electricity_scope(power_in_rent=power_in_rent)


def choice_problem(*, tenure: str, choice: str) -> str | None:
    """Why ``choice`` cannot be made for a node of ``tenure``; ``None`` when it can."""
    if tenure == OWNED and choice not in (ElectricityChoice.AUTO, ElectricityChoice.SCOPE_2):
        return "an owned node's electricity is purchased by the organization for equipment it operates: Scope 2"
    return None


def hardware_scope(*, tenure: str) -> HardwareScope:
    return HardwareScope.CATEGORY_2 if tenure == OWNED else HardwareScope.NOT_CATEGORY_2


@dataclass(frozen=True)
class Boundary:
    """An organization's consolidation approach, and the share of every emission figure it takes."""

    approach: Consolidation = DEFAULT_CONSOLIDATION
    equity_share_pct: Decimal | None = None

    @property
    def share(self) -> Decimal:
        """1 under either control approach; the equity percentage / 100 under equity share."""
        if self.approach is Consolidation.EQUITY_SHARE and self.equity_share_pct is not None:
            return self.equity_share_pct / HUNDRED
        return ONE


def boundary_problem(*, approach: str, equity_share_pct: Decimal | None) -> dict[str, str]:
    """Field problems of a consolidation approach as given (empty when it is valid)."""
    if approach == Consolidation.EQUITY_SHARE:
        if equity_share_pct is None:
            return {"equity_share_pct": "equity share needs the organization's share of equity, in percent"}
        if not 0 < equity_share_pct <= HUNDRED:
            return {"equity_share_pct": "a share of equity is above 0 and at most 100 percent"}
    elif equity_share_pct is not None:
        return {"equity_share_pct": "only the equity share approach takes a percentage"}
    return {}
