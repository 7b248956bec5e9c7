"""The tables are laid out on Citus as docs/scaling.md says: by node, as reference tables, on the coordinator."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django.db import connection

from telemetry.partitions import partition_name, partitions_ensure

NODE_TABLES = [
    "telemetry_rolluppending",
    "accounting_ledgerpending",
    "telemetry_usagechanged",
    "telemetry_parkedhour",
    "telemetry_nodemetersample",
    "telemetry_nodehourusage",
    "accounting_nodehourledger",
    "telemetry_collectorstatus",
    "telemetry_gpusample",
    "telemetry_servingsample",
    "telemetry_gpuhourusage",
    "telemetry_endpointhourusage",
    "accounting_ledgernodeday",
    "accounting_ledgerservingday",
    "accounting_ledgersitehourpending",
]
REFERENCE_TABLES = [
    "fleets_organization",
    "fleets_site",
    "fleets_fleet",
    "fleets_node",
    "fleets_gpu",
    "telemetry_gpuepoch",
    "telemetry_servingendpoint",
    "telemetry_endpointepoch",
    "accounting_hardwareprofile",
    "accounting_nodeprice",
    "accounting_gridintensity",
    "accounting_contractualinstrument",
]
COORDINATOR_TABLES = ["auth_user", "django_session", "django_admin_log", "axes_accessattempt", "accounting_auditentry"]


def layout(tables: list[str]) -> dict[str, tuple[str, str | None, int]]:
    """Per table: (Citus partition method, distribution column, colocation group); absent if not in Citus."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT logicalrelid::regclass::text, partmethod, column_to_column_name(logicalrelid, partkey),"
            " colocationid FROM pg_dist_partition WHERE logicalrelid::regclass::text = ANY(%s)",
            [tables],
        )
        return {table: (method, column, group) for table, method, column, group in cursor.fetchall()}


def test_node_hour_tables_are_distributed_by_node_in_one_colocation_group(db: Any) -> None:
    tables = layout(NODE_TABLES)

    assert {table: tables[table][:2] for table in NODE_TABLES} == {table: ("h", "node_id") for table in NODE_TABLES}
    assert len({group for _, _, group in tables.values()}) == 1


def test_every_key_of_a_per_node_table_leads_with_the_node(db: Any) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT conrelid::regclass::text, conname, (SELECT attname FROM pg_attribute"
            " WHERE attrelid = conrelid AND attnum = conkey[1]) FROM pg_constraint"
            " WHERE conrelid::regclass::text = ANY(%s) AND contype IN ('p', 'u')",
            [NODE_TABLES],
        )
        keys = cursor.fetchall()

    assert {table for table, _, _ in keys} == set(NODE_TABLES)
    assert [(table, name) for table, name, first in keys if first != "node_id"] == []


def test_a_new_days_partitions_of_raw_samples_join_the_node_group(db: Any) -> None:
    # when: the partitions of a day far ahead are made, as ingest and the daily task make them
    day = datetime(2031, 1, 1, tzinfo=UTC).date()
    partitions_ensure(days={day})

    # then: they are distributed by node in the one group
    tables = layout([partition_name(table, day) for table in ("telemetry_gpusample", "telemetry_servingsample")])
    group = layout(["telemetry_rolluppending"])["telemetry_rolluppending"][2]
    assert sorted(tables.values()) == [("h", "node_id", group)] * 2


def test_fleet_and_input_tables_are_reference_tables(db: Any) -> None:
    tables = layout(REFERENCE_TABLES)

    assert {table: tables[table][0] for table in REFERENCE_TABLES} == dict.fromkeys(REFERENCE_TABLES, "n")
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM citus_tables WHERE citus_table_type = 'reference'")
        assert cursor.fetchone()[0] >= len(REFERENCE_TABLES)


def test_auth_sessions_admin_throttling_and_audit_stay_on_the_coordinator(db: Any) -> None:
    tables = layout(COORDINATOR_TABLES)

    # Absent (plain local) or a Citus local table (method "n" without shards on workers): never distributed.
    assert all(method == "n" for method, _, _ in tables.values())
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM citus_tables WHERE table_name::text = ANY(%s) AND citus_table_type <> 'local'",
            [COORDINATOR_TABLES],
        )
        assert cursor.fetchone()[0] == 0
