"""Tests of the Citus layout (docs/scaling.md, "Citus"): skipped unless the database is a Citus coordinator.

`make test-citus PYTEST_ARGS=tests/citus` runs them on a throwaway cluster of a coordinator and two workers.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection

from common.citus import citus_coordinator


@pytest.fixture(autouse=True)
def _citus_only(db: Any) -> None:
    if not citus_coordinator(connection):
        pytest.skip("needs a Citus coordinator with workers: make test-citus PYTEST_ARGS=tests/citus")
