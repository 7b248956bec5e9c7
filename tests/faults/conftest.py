"""The fault harness's marker: ``-m faults`` runs it alone, ``-m "not faults"`` leaves it out."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "faults: the fault harness (own PostgreSQL cluster, Redis, gunicorn, Celery; about 3 minutes)"
    )
