"""The reports API: cost, energy, carbon and tokens over any period, read from the stored ledger.

- ``selectors`` (a package): what dashboards and the API call — ``report_rows``,
  ``report_page``, ``report_rows_iter``, ``fleet_comparison``, ``sustainability_report``.
  They read ``NodeHourLedger`` and hourly usage only, and aggregate in SQL.
- ``aggregates``: the SQL sums over ledger lines; ``metrics``, ``periods``, ``factors``:
  pure derivations (per-token figures, ratios, periods and buckets, factor licences).
- ``output``: the one place report figures are rounded for display (money with
  ``accounting.ledger.money_quantize``).
- ``views``, ``scope``, ``serializers``, ``renderers`` (CSV), ``urls``: the HTTP edge.
- ``tokens``, ``authentication``, ``tokens_api``: personal API tokens (``wlp_...``).
"""
