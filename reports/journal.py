"""A month's ledger as journal entries for the books: the default account map and the footing, pure (no Django).

The entries are the FOCUS export's usage charges (``reports.focus.charges``) added
up per organization (entity), fleet (cost centre), currency and charge kind, at
their effective (amortized) cost: each is one debit to the charge kind's expense
account and one credit to its counter account, rounded once to the currency's
minor unit. Per organization and currency the expense debits then foot to the
usage report's cost for the month (the exact total rounded once): where the
rounded entries differ from it by some minor units, a rounding line makes up
the difference. Debits equal credits in every case. docs/focus.md, "Journal".
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from accounting.ledger.units import money_quantize
from reports.focus.columns import ZERO, Charge, ChargeKind


@dataclass(frozen=True)
class Account:
    number: str
    name: str


# The default account map, the one place it is written: charge kind -> (expense debited, account credited).
DEFAULT_ACCOUNT_MAP: dict[ChargeKind, tuple[Account, Account]] = {
    ChargeKind.RENT: (Account("6100", "GPU capacity rent"), Account("2000", "Accounts payable and accruals")),
    ChargeKind.DEPRECIATION: (
        Account("6200", "Depreciation of GPU hardware"),
        Account("1290", "Accumulated depreciation of GPU hardware"),
    ),
    ChargeKind.OPEX: (Account("6300", "GPU hardware running cost"), Account("2000", "Accounts payable and accruals")),
    ChargeKind.ELECTRICITY: (Account("6400", "Electricity"), Account("2000", "Accounts payable and accruals")),
}
ROUNDING_ACCOUNTS = (Account("6990", "Rounding differences"), Account("2000", "Accounts payable and accruals"))

JOURNAL_COLUMNS = [
    "entity", "entity_id", "period", "account", "account_name", "cost_centre", "cost_centre_id", "currency",
    "debit", "credit", "amount", "charge_kind", "source_lines", "reference",
]  # fmt: skip


@dataclass
class _Group:
    entity: str
    cost_centre: str
    exact: Decimal = ZERO
    lines: int = 0


def journal_rows(charges: Iterable[Charge], *, period: str, reference: str) -> Iterator[dict[str, Any]]:
    """Journal lines of ``charges`` (usage charges of the period), grouped, rounded, footed with a rounding line.

    ``reference`` is a template naming the source rows, formatted with ``organization``, ``fleet`` and ``kind``.
    """
    groups: dict[tuple[int, str, int, ChargeKind], _Group] = {}
    for charge in charges:
        if charge.kind not in DEFAULT_ACCOUNT_MAP:
            continue
        account = charge.account
        key = (account.organization_id, charge.currency, account.fleet_id, charge.kind)
        group = groups.setdefault(key, _Group(account.organization_name, account.fleet_name))
        group.exact += charge.effective
        group.lines += charge.footprint.ledger_hours if charge.footprint is not None else 0
    exact_totals: dict[tuple[int, str], Decimal] = defaultdict(Decimal)
    rounded_totals: dict[tuple[int, str], Decimal] = defaultdict(Decimal)
    entities: dict[int, str] = {}
    for (organization_id, currency, fleet_id, kind), group in sorted(groups.items()):
        amount = money_quantize(group.exact, currency)
        exact_totals[(organization_id, currency)] += group.exact
        rounded_totals[(organization_id, currency)] += amount
        entities[organization_id] = group.entity
        base = {
            "entity": group.entity, "entity_id": organization_id, "period": period, "cost_centre": group.cost_centre,
            "cost_centre_id": fleet_id, "currency": currency, "charge_kind": kind.value, "source_lines": group.lines,
            "reference": reference.format(organization=organization_id, fleet=fleet_id, kind=kind.value),
        }  # fmt: skip
        yield from _entry(base, DEFAULT_ACCOUNT_MAP[kind], amount)
    for (organization_id, currency), exact in sorted(exact_totals.items()):
        difference = money_quantize(exact, currency) - rounded_totals[(organization_id, currency)]
        if difference:
            base = {
                "entity": entities[organization_id], "entity_id": organization_id, "period": period,
                "cost_centre": None, "cost_centre_id": None, "currency": currency, "charge_kind": "rounding",
                "source_lines": 0, "reference": "the usage report's total rounded once, less the lines above",
            }  # fmt: skip
            yield from _entry(base, ROUNDING_ACCOUNTS, difference)


def _entry(base: dict[str, Any], accounts: tuple[Account, Account], amount: Decimal) -> Iterator[dict[str, Any]]:
    """A debit of ``amount`` to the first account and a credit to the second (reversed when it is negative)."""
    debited, credited = accounts
    zero = amount - amount  # 0 with the amount's exponent: 0.00
    for account, signed in ((debited, amount), (credited, -amount if amount else zero)):
        debit, credit = (signed, zero) if signed >= 0 else (zero, -signed)
        yield base | {
            "account": account.number,
            "account_name": account.name,
            "debit": debit,
            "credit": credit,
            "amount": signed,
        }
