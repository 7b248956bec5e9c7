"""A month's ledger as journal entries for the books: the default account map and the footing, pure (no Django).

The entries are the FOCUS export's usage charges (``reports.focus.charges``) added
up per organization (entity), fleet (cost centre), currency and charge kind, at
their effective (amortized) cost: each is one debit to the charge kind's expense
account and one credit to its counter account, rounded once to the currency's
minor unit. Per organization and currency the expense debits then foot to the
usage report's cost for the month (the exact total rounded once): where the
rounded entries differ from it by some minor units, a rounding line makes up
the difference. Corrections of closed periods booked in the month are entries of
their own on the same accounts (``charge_class`` Correction), footed apart to the
usage report's ``corrections`` cost. Debits equal credits in every case.
An organization's own account map (``accounting.JournalAccount``, read by the view) replaces the default
one for the kinds it maps; each row names the map it used (``account_map``). docs/focus.md, "Journal".
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from accounting.ledger.units import money_quantize
from reports.focus.columns import CORRECTION, SITE_KINDS, ZERO, Charge, ChargeKind


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
    ChargeKind.FIXED_CHARGE: (
        Account("6410", "Electricity fixed and demand charges"),
        Account("2000", "Accounts payable and accruals"),
    ),
    ChargeKind.DEMAND_CHARGE: (
        Account("6410", "Electricity fixed and demand charges"),
        Account("2000", "Accounts payable and accruals"),
    ),
    ChargeKind.ENERGY_TAX: (Account("6450", "Energy tax"), Account("2000", "Accounts payable and accruals")),
    ChargeKind.VAT: (Account("6460", "Non-recoverable VAT"), Account("2000", "Accounts payable and accruals")),
    # Recoverable input VAT is not an expense: a receivable from the tax authority, paid to the supplier.
    ChargeKind.INPUT_VAT: (Account("1650", "Input VAT receivable"), Account("2000", "Accounts payable and accruals")),
}
# Entries that are no expense and so foot to no report's cost: each is rounded once on its own.
_NOT_EXPENSE = frozenset({ChargeKind.INPUT_VAT})
ROUNDING_ACCOUNTS = (Account("6990", "Rounding differences"), Account("2000", "Accounts payable and accruals"))
ROUNDING = "rounding"

# Per organization, its own accounts for the kinds it maps (charge kind value, or "rounding"): (debit, credit).
AccountMaps = Mapping[int, Mapping[str, tuple[Account, Account]]]
DEFAULT_MAP, OWN_MAP = "default", "organization"

JOURNAL_COLUMNS = [
    "entity", "entity_id", "period", "account", "account_name", "cost_centre", "cost_centre_id", "currency",
    "debit", "credit", "amount", "charge_kind", "source_lines", "reference", "charge_class", "account_map",
]  # fmt: skip

# What a rounding line foots to, per footing (``_footing``): the usage report's cost, its ``corrections`` cost,
# or its ``site_charges`` totals.
_LINES, _CORRECTIONS, _SITE_CHARGES = "lines", "corrections", "site_charges"
_FOOTED_TO = {
    _LINES: "the usage report's total rounded once, less the lines above",
    _CORRECTIONS: "the usage report's corrections booked in the month, rounded once, less the correction lines above",
    _SITE_CHARGES: "the usage report's site_charges total rounded once, less the site charge lines above",
}


@dataclass
class _Group:
    entity: str
    cost_centre: str
    exact: Decimal = ZERO
    lines: int = 0


def accounts_for(kind: str, organization_id: int, maps: AccountMaps) -> tuple[tuple[Account, Account], str]:
    """The (debit, credit) accounts of ``kind`` for the organization, and which map gave them: its own where
    it maps the kind, else the default map (``ROUNDING_ACCOUNTS`` for the rounding line)."""
    own = maps.get(organization_id, {}).get(kind)
    if own is not None:
        return own, OWN_MAP
    return (ROUNDING_ACCOUNTS if kind == ROUNDING else DEFAULT_ACCOUNT_MAP[ChargeKind(kind)]), DEFAULT_MAP


def journal_rows(
    charges: Iterable[Charge], *, period: str, reference: str, account_maps: AccountMaps | None = None
) -> Iterator[dict[str, Any]]:
    """Journal lines of ``charges`` (usage charges of the period), grouped, rounded, footed with a rounding line.

    ``account_maps``: organizations' own accounts, in place of the default map for the kinds they map.
    Corrections of closed periods booked in the month (``charge_class`` Correction) are entries of their own
    on the same accounts, footed apart: to the usage report's ``corrections`` cost, as the lines are to its cost.
    The sites' monthly tariff charges foot apart too, to its ``site_charges`` totals. Recoverable input VAT
    (the part of a VAT charge that is no cost) is debited to the receivable and foots to no cost.
    ``reference`` is a template naming the source rows, formatted with ``organization``, ``fleet`` and ``kind``.
    """
    groups, maps = _groups(charges), account_maps or {}
    exact_totals: dict[tuple[int, str, str], Decimal] = defaultdict(Decimal)
    rounded_totals: dict[tuple[int, str, str], Decimal] = defaultdict(Decimal)
    entities: dict[int, str] = {}
    for (organization_id, currency, correction, fleet_id, kind), group in sorted(groups.items()):
        amount = money_quantize(group.exact, currency)
        footing = _footing(correction, kind)
        if kind not in _NOT_EXPENSE:
            exact_totals[(organization_id, currency, footing)] += group.exact
            rounded_totals[(organization_id, currency, footing)] += amount
        entities[organization_id] = group.entity
        source = reference.format(organization=organization_id, fleet=fleet_id, kind=kind.value)
        base = {
            "entity": group.entity, "entity_id": organization_id, "period": period,
            "cost_centre": group.cost_centre or None, "cost_centre_id": fleet_id or None, "currency": currency,
            "charge_kind": kind.value, "source_lines": group.lines,
            "reference": f"{source} ChargeClass={CORRECTION}" if correction else source,
            "charge_class": CORRECTION if correction else None,
        }  # fmt: skip
        accounts, used = accounts_for(kind.value, organization_id, maps)
        yield from _entry(base | {"account_map": used}, accounts, amount)
    for (organization_id, currency, footing), exact in sorted(exact_totals.items()):
        difference = money_quantize(exact, currency) - rounded_totals[(organization_id, currency, footing)]
        if difference:
            base = {
                "entity": entities[organization_id], "entity_id": organization_id, "period": period,
                "cost_centre": None, "cost_centre_id": None, "currency": currency, "charge_kind": ROUNDING,
                "source_lines": 0, "reference": _FOOTED_TO[footing],
                "charge_class": CORRECTION if footing == _CORRECTIONS else None,
            }  # fmt: skip
            accounts, used = accounts_for(ROUNDING, organization_id, maps)
            yield from _entry(base | {"account_map": used}, accounts, difference)


def _footing(correction: bool, kind: ChargeKind) -> str:
    """Which report total an entry foots to: the lines' cost, the corrections' or the site charges'."""
    if correction:
        return _CORRECTIONS
    return _SITE_CHARGES if kind in SITE_KINDS else _LINES


def _groups(charges: Iterable[Charge]) -> dict[tuple[int, str, bool, int, ChargeKind], _Group]:
    """The charges' effective cost added up per organization, currency, correction or not, fleet and kind;
    ``lines``: the node-hour lines (or, for corrections, the corrections) added in. A VAT charge's recoverable
    part (billed less effective) is added up apart, as input VAT."""
    groups: dict[tuple[int, str, bool, int, ChargeKind], _Group] = {}
    for charge in charges:
        if charge.kind not in DEFAULT_ACCOUNT_MAP:
            continue
        parts = [(charge.kind, charge.effective)]
        if charge.kind is ChargeKind.VAT:  # its two parts, each only where it is not 0
            parts = [(kind, amount) for kind, amount in _vat_parts(charge) if amount]
        for kind, amount in parts:
            account = charge.account
            key = (account.organization_id, charge.currency, charge.correction, account.fleet_id, kind)
            group = groups.setdefault(key, _Group(account.organization_name, account.fleet_name))
            group.exact += amount
            if charge.footprint is not None:
                group.lines += charge.footprint.ledger_hours + charge.footprint.corrections
    return groups


def _vat_parts(charge: Charge) -> list[tuple[ChargeKind, Decimal]]:
    """A VAT charge as the journal books it: the non-recoverable part (its effective cost, an expense) and the
    recoverable part (billed less effective: input VAT receivable)."""
    return [(ChargeKind.VAT, charge.effective), (ChargeKind.INPUT_VAT, charge.billed - charge.effective)]


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
