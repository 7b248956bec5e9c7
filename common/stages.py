"""The stages a node-hour passes through on the server, named here so that no app names a later one.

Telemetry rolls an hour's samples up (``ROLLUP``); the ledger app then writes the
hour's cost and carbon line (``LEDGER``). Each stage's queue parks the hours it
fails to compute (``telemetry.parking``) under its stage name, and the node page
and ``/api/v1/nodes/`` show which stage an hour is parked in. The values are
stored (``ParkedHour.stage``): renaming one needs a data migration.
"""

from __future__ import annotations

from django.db import models


class NodeHourStage(models.TextChoices):
    ROLLUP = "rollup", "hourly rollup"
    LEDGER = "ledger", "ledger"
