"""Over-allocation: no instrument is claimed beyond what it holds (pure: no Django).

Refused, each with a sentence that names what is already claimed:

- an hourly profile delivering more than the instrument's volume;
- rows claiming one certificate batch (same ``certificate_ref``) for more MWh
  than the batch holds;
- shares of one site's consumption adding up to more than 100 % in any instant
  of overlapping delivery periods.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal


class OverAllocationError(ValueError):
    """An instrument would be claimed for more energy than it holds, or a site covered beyond 100 %."""


@dataclass(frozen=True)
class Claim:
    """One register row as the checks see it (``id`` is ``None`` for a row being created)."""

    id: int | None
    name: str
    start: datetime
    end: datetime
    amount: Decimal  # MWh, or a share (0-1)


def profile_check(*, name: str, volume_mwh: Decimal, profile_mwh: Iterable[Decimal]) -> None:
    delivered_mwh = sum(profile_mwh, Decimal(0))
    if delivered_mwh > volume_mwh:
        raise OverAllocationError(
            f"over-allocated: the hourly profile of {name!r} delivers {delivered_mwh} MWh, "
            f"more than its volume of {volume_mwh} MWh"
        )


def certificate_check(*, ref: str, certificate_mwh: Decimal, claim: Claim, others: Sequence[Claim]) -> None:
    """``others``: the rows already claiming ``ref`` (the row being changed excluded)."""
    claimed_mwh = sum((other.amount for other in others), Decimal(0))
    if claimed_mwh + claim.amount > certificate_mwh:
        already = ", ".join(f"{other.name!r} {other.amount} MWh" for other in others) or "nothing"
        raise OverAllocationError(
            f"over-allocated: certificate {ref!r} holds {certificate_mwh} MWh; already claimed: {already}; "
            f"{claim.amount} MWh more for {claim.name!r} would claim {claimed_mwh + claim.amount} MWh"
        )


def share_check(*, site: str, claim: Claim, others: Sequence[Claim]) -> None:
    """Shares of one site: at the busiest instant of ``claim``'s period, their sum stays within 1."""
    overlapping = [other for other in others if other.start < claim.end and claim.start < other.end]
    # The sum of shares only changes where a period starts, so those instants are the ones to check.
    instants = {claim.start} | {other.start for other in overlapping if other.start > claim.start}
    for instant in sorted(instants):
        live = [other for other in overlapping if other.start <= instant < other.end]
        total = claim.amount + sum((other.amount for other in live), Decimal(0))
        if total > 1:
            named = ", ".join(f"{other.name!r} {_percent(other.amount)} %" for other in live)
            raise OverAllocationError(
                f"over-allocated: on {instant:%Y-%m-%d %H:%M} UTC site {site!r} is already covered by {named}; "
                f"{_percent(claim.amount)} % more for {claim.name!r} would cover {_percent(total)} %"
            )


def _percent(share: Decimal) -> str:
    return f"{(share * 100).normalize():f}"
