"""Governance: the audit trail of every input change and locked reporting periods.

- ``models``: ``AuditEntry`` and ``LockedPeriod`` (tables kept from the ledger app's label);
- ``audit``: recording and reading entries; ``period_relevance``: which entries bear on a period (pure);
- ``locks``: refusing a change that weighs on a locked period; ``intervals``: half-open windows (pure);
- ``audited_write``: one transaction for a write, its lock check and its audit entry;
- ``report_audit``: the audit section every export carries; ``api``: the audit and lock endpoints.

It sits below the ledger: it knows periods and entries, never a ledger line.
"""
