"""Where the fault harness cannot run, it says why (``make test`` shows it as the skip reason)."""

from __future__ import annotations

import pytest

from tests.faults import procs


def test_without_postgresql_binaries_the_reason_says_how_to_get_them(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(procs, "pg_bin_dir", lambda: None)

    assert procs.missing_tools() == (
        "PostgreSQL server binaries not found (set PG_BIN, or install postgresql: apt-get install postgresql)"
    )


def test_without_redis_server_the_reason_names_it(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setattr(procs, "pg_bin_dir", lambda: tmp_path)
    monkeypatch.setattr(procs.shutil, "which", lambda name: None)

    assert procs.missing_tools() == "redis-server not found (apt-get install redis-server)"


def test_pg_bin_is_honoured(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    (tmp_path / "initdb").touch()
    monkeypatch.setenv("PG_BIN", str(tmp_path))

    assert procs.pg_bin_dir() == tmp_path
