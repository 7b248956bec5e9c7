"""A PostgreSQL database filled before the apps had their own labels upgrades with ``migrate`` and loses nothing.

The source of the last release before the split (``BEFORE``, from git) migrates a
fresh database and seeds the demo into it through its own code; today's code then
runs ``migrate`` on that database. Every table keeps every row, byte for byte
(an md5 over the rows in order); only the moved models' content types change
label, and nothing in the schema changes (the models moved state-only, tables kept).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from django.db import connection

ROOT = Path(__file__).resolve().parent.parent
# The last main whose models all carried the `accounting` label.
BEFORE = "cc88dba"
MOVED = {
    "grid": {"gridintensity", "gridfetchstate"},
    "governance": {"auditentry", "lockedperiod"},
    "scope2": {"contractualinstrument", "instrumenthour", "residualmixfactor"},
    "advice": {"workloadclass", "advicesettings", "advice", "advicenotification"},
    "scenarios": {"scenario"},
}

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


def _source_before(where: Path) -> Path:
    """The tree at ``BEFORE``, from this checkout's git history (skips where there is none)."""
    if shutil.which("git") is None:
        pytest.skip("git is needed to read the release before the app split")
    found = subprocess.run(["git", "cat-file", "-e", f"{BEFORE}^{{commit}}"], cwd=ROOT, capture_output=True)
    if found.returncode != 0:
        pytest.skip(f"commit {BEFORE} is not in this checkout's history (a shallow clone?)")
    archive = where / "before.tar"
    subprocess.run(["git", "archive", "--format=tar", "-o", str(archive), BEFORE], cwd=ROOT, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(where / "before", filter="data")
    return where / "before"


@pytest.fixture
def empty_database() -> Iterator[str]:
    """A database of its own on the test server, dropped after."""
    settings = connection.settings_dict
    if not settings["ENGINE"].endswith("postgresql"):
        pytest.skip("the upgrade is checked on PostgreSQL (make test-pg, CI)")
    name = f"wattledger_upgrade_{uuid.uuid4().hex[:8]}"
    auth = settings["USER"] + (f":{settings['PASSWORD']}" if settings["PASSWORD"] else "")
    server = f"postgres://{auth}@{settings['HOST'] or 'localhost'}:{settings['PORT'] or 5432}"
    with psycopg.connect(f"{server}/postgres", autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"{server}/{name}"
    finally:
        with psycopg.connect(f"{server}/postgres", autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _manage(tree: Path, database_url: str, *args: str) -> None:
    env = {**os.environ, "DATABASE_URL": database_url, "DEBUG": "1", "DJANGO_SETTINGS_MODULE": "config.settings"}
    env.pop("PYTEST_CURRENT_TEST", None)
    done = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=tree, env=env, capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, f"manage.py {' '.join(args)} in {tree}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"


def _snapshot(database_url: str, tables_columns: dict[str, list[str]] | None = None) -> dict[str, Any]:
    """Each table's row count and an md5 of its rows in order (over ``tables_columns``' columns where given:
    later releases may add tables and columns), the schema's columns and indexes, and the content types."""
    with psycopg.connect(database_url) as db:
        columns = db.execute(
            "SELECT table_name, column_name, data_type, is_nullable FROM information_schema.columns "
            "WHERE table_schema = 'public' ORDER BY 1, ordinal_position"
        ).fetchall()
        current: dict[str, list[str]] = {}
        for table, column, _, _ in columns:
            if table != "django_migrations":
                current.setdefault(table, []).append(column)
        wanted = tables_columns or current
        rows = {}
        for table, names in wanted.items():
            row = ", ".join(f't."{name}"' for name in names)
            rows[table] = db.execute(
                f"SELECT count(*), md5(coalesce(string_agg(ROW({row})::text, E'\\n' ORDER BY ROW({row})::text), '')) "
                f'FROM "{table}" t'
            ).fetchone()
        indexes = db.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'public' ORDER BY 1"
        ).fetchall()
        content_types = set(db.execute("SELECT id, app_label, model FROM django_content_type").fetchall())
        permissions = set(db.execute("SELECT id, content_type_id, codename FROM auth_permission").fetchall())
    return {"tables": current, "rows": rows, "columns": set(columns), "indexes": set(indexes),
            "content_types": content_types, "permissions": permissions}  # fmt: skip


def test_a_database_seeded_before_the_app_split_keeps_every_row_after_migrate(tmp_path, empty_database):
    # given: a database migrated and seeded with the demo by the release before the split
    before = _source_before(tmp_path)
    _manage(before, empty_database, "migrate", "--noinput")
    _manage(before, empty_database, "seed_demo", "--hours", "3")
    old = _snapshot(empty_database)
    assert old["rows"]["accounting_nodehourledger"][0] > 0, "the seeded demo holds ledger lines"
    assert old["rows"]["accounting_gridintensity"][0] > 0 and old["rows"]["accounting_workloadclass"][0] > 0

    # when: today's code migrates it
    _manage(ROOT, empty_database, "migrate", "--noinput")
    new = _snapshot(empty_database, old["tables"])

    # then: every table holds the same rows in the columns it had, and the schema lost nothing
    # (later migrations may add tables, columns, indexes, permissions and content types: never change these)
    app_of = {model: app for app, models in MOVED.items() for model in models}
    grown = {"django_content_type", "auth_permission"}
    assert {t: r for t, r in new["rows"].items() if t not in grown} == {
        t: r for t, r in old["rows"].items() if t not in grown
    }
    assert old["columns"] <= new["columns"]
    # Keys telemetry 0012 made lead with the node (raw samples' primary keys, by day too; hourly usage's
    # unique keys): replaced by keys that hold the same rows unique.
    rekeyed = {"gpuhourusage_unique_gpu_hour", "endpointhourusage_unique_endpoint_hour"}
    assert {
        (name, definition)
        for name, definition in old["indexes"]
        if name not in rekeyed
        and not (name.startswith(("telemetry_gpusample", "telemetry_servingsample")) and name.endswith("_pkey"))
    } <= new["indexes"]
    assert old["permissions"] <= new["permissions"]
    # and: the moved models' content types keep their ids (permissions, admin history) under their new label
    relabelled = {
        (pk, app_of[model] if label == "accounting" and model in app_of else label, model)
        for pk, label, model in old["content_types"]
    }
    old_ids = {pk for pk, _, _ in old["content_types"]}
    assert {ct for ct in new["content_types"] if ct[0] in old_ids} == relabelled
    assert not {ct for ct in new["content_types"] if ct[1] == "accounting" and ct[2] in app_of}
