"""Past one database server: on a Citus coordinator, distribute the telemetry and ledger tables by node.

Does nothing on SQLite or on PostgreSQL without the ``citus`` extension (the guard). Where the
extension is present (docs/scaling.md, "Citus"):

- reference tables (a copy on every node): the organizations, sites, fleets, nodes and GPUs, the
  epochs and serving endpoints, the hardware catalog, the dated inputs, grid intensities and
  contractual instruments, which every node-hour reads;
- distributed by ``node_id`` in one colocation group (a node's rows of every table on the same
  worker, so a node-hour's rollup and ledger run on one shard): node-meter samples, the rollup and
  ledger queues, parked hours, usage-changed marks, hourly node usage, node-hour ledger lines and
  collector status. Citus wants every primary key of a distributed table to hold the distribution
  column: here (and only here) their ``id`` keys become ``(node_id, id)``, which still identifies
  one row; the model's unique (node, ...) constraints already lead with the node;
- the tables keyed by GPU or endpoint (raw GPU and serving samples, hourly GPU and endpoint usage)
  had no node column when this ran first: distributed by ``gpu_id`` (raw samples and hourly usage
  each a group of its own: the raw table's ``gpu_id`` is 4 bytes) and by ``endpoint_id`` (raw
  samples with their hourly usage). 0026 moves them into the node group, by their ``node_id``
  (telemetry 0012);
- everything else (auth, sessions, admin, login throttling, audit, reports' own tables) stays on
  the coordinator; tables with a foreign key to a reference table become Citus local tables.

Daily partitions follow their parent: a partition created later (``telemetry.partitions``) of a
distributed table is distributed by Citus when it is attached.
"""

from django.db import migrations

from common.citus import primary_key

REFERENCE = [
    # Parents before children: a reference table's foreign keys point at reference tables.
    "fleets_organization",
    "fleets_site",
    "fleets_fleet",
    "fleets_node",
    "fleets_gpu",
    "fleets_gpuinstallation",
    "telemetry_gpuepoch",
    "telemetry_servingendpoint",
    "telemetry_servingendpoint_gpus",
    "telemetry_endpointepoch",
    "accounting_hardwareprofile",
    "accounting_nodeprice",
    "accounting_gpuasset",
    "accounting_sitepue",
    "accounting_sitetariff",
    "accounting_sitetax",
    "accounting_sitemarketfactor",
    "accounting_residualmixfactor",
    "accounting_exchangerate",
    "accounting_gridintensity",
    "accounting_contractualinstrument",
    "accounting_instrumenthour",
]

# (table, distribution column, the table it is colocated with, or None for the group's first)
DISTRIBUTED = [
    ("telemetry_rolluppending", "node_id", None),
    ("accounting_ledgerpending", "node_id", "telemetry_rolluppending"),
    ("telemetry_usagechanged", "node_id", "telemetry_rolluppending"),
    ("telemetry_parkedhour", "node_id", "telemetry_rolluppending"),
    ("telemetry_nodemetersample", "node_id", "telemetry_rolluppending"),
    ("telemetry_nodehourusage", "node_id", "telemetry_rolluppending"),
    ("accounting_nodehourledger", "node_id", "telemetry_rolluppending"),
    ("telemetry_collectorstatus", "node_id", "telemetry_rolluppending"),
    ("telemetry_gpusample", "gpu_id", None),
    # Not colocated with the raw samples: their gpu_id is a 4-byte integer, the usage's 8 bytes.
    ("telemetry_gpuhourusage", "gpu_id", None),
    ("telemetry_servingsample", "endpoint_id", None),
    ("telemetry_endpointhourusage", "endpoint_id", "telemetry_servingsample"),
]


def citus_present(schema_editor) -> bool:
    if schema_editor.connection.vendor != "postgresql":
        return False
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_extension WHERE extname = 'citus'")
        return cursor.fetchone() is not None


def primary_key_with(cursor, table: str, column: str) -> None:
    """Make ``table``'s primary key hold ``column`` (first), as Citus requires of a distributed table."""
    name, columns = primary_key(cursor, table)
    if column in columns:
        return
    keys = ", ".join(f'"{c}"' for c in [column, *columns])
    cursor.execute(f'ALTER TABLE "{table}" DROP CONSTRAINT "{name}"')
    cursor.execute(f'ALTER TABLE "{table}" ADD CONSTRAINT "{name}" PRIMARY KEY ({keys})')


def foreign_keys_dropped(cursor, table: str) -> list[str]:
    """Drop ``table``'s foreign keys; return the statements that add them back."""
    cursor.execute(
        "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = %s::regclass AND contype = 'f'",
        [table],
    )
    keys = cursor.fetchall()
    for name, _ in keys:
        cursor.execute(f'ALTER TABLE "{table}" DROP CONSTRAINT "{name}"')
    return [f'ALTER TABLE "{table}" ADD CONSTRAINT "{name}" {definition}' for name, definition in keys]


def distribute(apps, schema_editor) -> None:
    if not citus_present(schema_editor):
        return
    with schema_editor.connection.cursor() as cursor:
        # One connection per worker inside this transaction: DDL and foreign keys to reference
        # tables in the same transaction need it.
        cursor.execute("SET LOCAL citus.multi_shard_modify_mode TO 'sequential'")
        # Distributed first, their foreign keys (all to tables that become reference tables) set
        # aside meanwhile: a local table with a key to a reference table would become a Citus
        # local table, which Citus cannot distribute with an identity column.
        restore: list[str] = []
        for table, column, colocate_with in DISTRIBUTED:
            restore += foreign_keys_dropped(cursor, table)
            primary_key_with(cursor, table, column)
            cursor.execute(
                "SELECT create_distributed_table(%s, %s, colocate_with => %s)",
                [table, column, colocate_with or "none"],
            )
        for table in REFERENCE:
            cursor.execute("SELECT create_reference_table(%s)", [table])
        for statement in restore:
            cursor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [
        ("accounting", "0024_basis_ledger_direct"),
        ("fleets", "0005_personaltoken_scope_metrics"),
        ("governance", "0001_initial"),
        ("grid", "0002_basis_intensity_basis"),
        ("scope2", "0003_instrument_evidence_disclosure"),
        ("telemetry", "0010_permodel_itl"),
    ]

    operations = [migrations.RunPython(distribute, migrations.RunPython.noop, elidable=False)]
