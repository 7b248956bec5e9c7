from __future__ import annotations

import pytest

from demo.status import state_path


@pytest.fixture(autouse=True)
def no_backfill_state():
    """Each test starts without a demo history plan (var/demo/backfill.json), and leaves none."""
    state_path().unlink(missing_ok=True)
    yield
    state_path().unlink(missing_ok=True)
