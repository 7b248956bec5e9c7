"""What every app above fleets shares, with no models of its own.

- ``scope``: the tenancy scope of a request (the caller's organizations, a period, filters);
- ``periods``: the one period parser for pages and API;
- ``renderers``: the streaming CSV renderer; ``csv_safety``: cells a spreadsheet must not run;
- ``charts``: Plotly figures and fleet colours;
- ``stages``: the stages a node-hour passes through (rollup, ledger), so telemetry names no later app;
- ``timestamps``: the abstract base of the rows that show when they were created and last changed.

It imports fleets only (``.importlinter``'s layers contract).
"""
