"""Market-based Scope 2 from contractual instruments (GHG Protocol Scope 2 Guidance, ch. 6-7).

- ``models``: the register (PPAs, guarantees of origin, RECs, supplier-specific
  rates), their hourly profiles and an organization's residual-mix factors.
- ``quality``, ``markets``, ``allocation``, ``year_to_date``, ``cfe``, ``claims``: the arithmetic, pure (no Django).
- ``residual``: the shipped residual-mix table (see ``data/README.md``).
- ``services`` write, ``selectors`` read; ``api`` (the register) and ``reports_api`` (the reports) are the REST doors.
"""
