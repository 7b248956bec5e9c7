"""What-if scenarios: a named set of changes replayed on an organization's measured node-hours.

- ``changes``: the change kinds, parsed and validated (pure);
- ``replay``: one pass over the stored ledger rows, the changes applied to their sums (pure);
- ``result``: the outcome as the stored result, actual and scenario side by side (pure);
- ``models``, ``services``, ``tasks``, ``api``, ``pages``: the Django side.
"""
