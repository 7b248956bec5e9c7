"""Server-rendered dashboards: views ask selectors for rows and ``accounting.charts`` for figures."""
