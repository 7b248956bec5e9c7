"""Columnar storage is for Citus only: on plain PostgreSQL and SQLite every day partition stays as it is."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from django.db import connection

from common.citus import citus_coordinator
from telemetry.columnar import access_method, columnar_apply
from telemetry.models import GpuSample
from telemetry.partitions import partition_name, partitions_ensure, partitions_maintain

NOW = datetime(2026, 3, 20, 12, tzinfo=UTC)


def test_without_citus_no_partition_changes_storage(db: Any, settings: Any) -> None:
    if citus_coordinator(connection):
        return  # tests/citus/test_columnar.py covers the coordinator
    settings.TELEMETRY_RETENTION_DAYS = 30
    old_day = (NOW - timedelta(days=10)).date()
    partitions_ensure(days=[old_day])
    result = partitions_maintain(now=NOW)
    assert result["columnar"] == {}
    assert columnar_apply(now=NOW) == {}
    if connection.vendor == "postgresql":
        assert access_method(partition_name(GpuSample._meta.db_table, old_day)) == "heap"
