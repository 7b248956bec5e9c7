"""The node-hour stages are named once, below the apps that run them, with the values stored before."""

from __future__ import annotations

import re
from pathlib import Path

from common.stages import NodeHourStage
from telemetry.models import ParkedHour

ROOT = Path(__file__).resolve().parents[2]


def test_stage_values_are_the_stored_ones():
    assert NodeHourStage.choices == [("rollup", "hourly rollup"), ("ledger", "ledger")]
    assert ParkedHour._meta.get_field("stage").choices == NodeHourStage.choices


def test_telemetry_names_no_later_stage_of_its_own():
    # The ledger is a later app's stage: telemetry only passes the name through, from common.
    for path in (ROOT / "telemetry").rglob("*.py"):
        if "migrations" not in path.parts:
            assert not re.search(r"\bLEDGER\b", path.read_text()), path
