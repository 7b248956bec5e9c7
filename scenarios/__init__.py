"""What-if scenarios: a named set of changes replayed on an organization's measured node-hours.

Pure (no framework, ``.importlinter``'s scenarios-pure contract):

- ``changes``: the change kinds, parsed and validated;
- ``replay``: one pass over the stored ledger rows, the changes applied to their sums;
- ``latency``: TTFT under the scenario, read on each fleet's measured latency-by-load curve;
- ``result``: the outcome as the stored result, actual and scenario side by side.

Django: ``models``, ``services`` (create, claim, run), ``tasks``, ``api``, ``pages``.
See docs/scenarios.md.
"""
