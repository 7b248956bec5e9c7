"""The organizations' own journal account maps, as the journal reads them (``reports.journal.AccountMaps``)."""

from __future__ import annotations

from collections.abc import Collection

from accounting.models import JournalAccount
from reports.journal import Account, AccountMaps


def account_maps(*, organization_ids: Collection[int]) -> AccountMaps:
    """Per organization, the (debit, credit) accounts of each charge kind it maps; one query."""
    maps: dict[int, dict[str, tuple[Account, Account]]] = {}
    for row in JournalAccount.objects.filter(organization_id__in=organization_ids):
        debit = Account(row.debit_account_code, row.debit_account_name)
        credit = Account(row.credit_account_code, row.credit_account_name)
        maps.setdefault(row.organization_id, {})[row.charge_kind] = (debit, credit)
    return maps
