"""Server-rendered dashboards: views ask selectors for rows and ``common.charts`` for figures."""
