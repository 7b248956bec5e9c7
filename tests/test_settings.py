"""Settings come from the environment and refuse bad values with a message naming the variable."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from config.env import database_from_url, env_bool, env_int

ROOT = Path(__file__).resolve().parent.parent
PRODUCTION = {
    "DEBUG": "0",
    "SECRET_KEY": "prod-" + "Zk3vQ9wLr2Xp7Tn5Bm8Hc4Jd6Fg1Sy0A" * 2,
    "ALLOWED_HOSTS": "ledger.example.com",
    "DATABASE_URL": "sqlite:///settings-test.sqlite3",
}


def run_django(env: dict[str, str], code: str = "import django; django.setup()", tmp_path: Path | None = None):
    # Start from this environment less what the test settings module relaxes.
    relaxed = {"DEBUG", "SECRET_KEY", "DATABASE_URL", "SESSION_COOKIE_SECURE", "CSRF_COOKIE_SECURE", "DEMO_ENABLED"}
    base = {k: v for k, v in os.environ.items() if k not in relaxed and not k.startswith("SECURE_")}
    base.update({"DJANGO_SETTINGS_MODULE": "config.settings", **env})
    if tmp_path is not None:
        base["WATTLEDGER_VAR_DIR"] = str(tmp_path)
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=base, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ({"DEBUG": "maybe"}, "DEBUG='maybe' is not a boolean"),
        ({"SECRET_KEY": ""}, "SECRET_KEY is required when DEBUG is off"),
        ({"SECRET_KEY": "short"}, "SECRET_KEY must be at least 50 characters"),
        ({"DATABASE_URL": "mysql://db/x"}, "DATABASE_URL scheme 'mysql' is not supported"),
        ({"DATABASE_URL": "postgres://u:secret@db:notaport/x"}, "has a port that is not a number"),
        ({"CELERY_BROKER_URL": "kafka://x"}, "CELERY_BROKER_URL='kafka://x' is not supported"),
        ({"SECURE_HSTS_SECONDS": "-1"}, "SECURE_HSTS_SECONDS=-1 is below the minimum of 0"),
        ({"LOG_LEVEL": "chatty"}, "LOG_LEVEL='CHATTY' is not a logging level"),
        ({"WATTLEDGER_OTLP_ENDPOINT": "http://collector:4318"}, "needs WATTLEDGER_OTLP_ORGANIZATION"),
    ],
)
def test_bad_setting_stops_startup_with_a_clear_message(override, message, tmp_path):
    result = run_django({**PRODUCTION, **override}, tmp_path=tmp_path)

    assert result.returncode != 0
    assert message in result.stderr
    assert "secret@" not in result.stderr


def test_production_values_pass_check_deploy(tmp_path):
    result = run_django(
        PRODUCTION,
        code="import sys; from django.core.management import execute_from_command_line as e; "
        "e(['manage.py', 'check', '--deploy', '--fail-level', 'WARNING'])",
        tmp_path=tmp_path,
    )

    assert result.returncode == 0, result.stderr
    assert "no issues" in result.stdout


@pytest.mark.parametrize(
    ("override", "installed"),
    [({}, False), ({"DEMO_ENABLED": "1"}, True), ({"DEBUG": "1", "SECRET_KEY": ""}, True)],
)
def test_the_demo_app_is_installed_only_where_the_demo_runs(override, installed, tmp_path):
    code = (
        "import django; django.setup(); from django.apps import apps; from django.conf import settings; "
        "print(apps.is_installed('demo'), any('demo.' in p for t in settings.TEMPLATES "
        "for p in t['OPTIONS']['context_processors']))"
    )
    result = run_django({**PRODUCTION, **override}, code=code, tmp_path=tmp_path)

    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [str(installed), str(installed)]


def test_debug_generates_and_keeps_a_development_key(tmp_path):
    code = "from django.conf import settings; print(settings.SECRET_KEY)"
    first = run_django({"DEBUG": "1", "SECRET_KEY": ""}, code=code, tmp_path=tmp_path)
    second = run_django({"DEBUG": "1", "SECRET_KEY": ""}, code=code, tmp_path=tmp_path)

    assert first.returncode == 0, first.stderr
    assert first.stdout == second.stdout
    assert len(first.stdout.strip()) >= 50


def test_sqlite_url_is_relative_to_var_dir_unless_absolute(tmp_path):
    assert database_from_url("sqlite:///x.sqlite3", var_dir=tmp_path)["NAME"] == str(tmp_path / "x.sqlite3")
    assert database_from_url("sqlite:////srv/x.sqlite3", var_dir=tmp_path)["NAME"] == "/srv/x.sqlite3"


def test_postgres_url_is_split_into_django_fields(tmp_path):
    db = database_from_url("postgres://led%40ger:p%2Fw@db.internal:6432/wattledger?sslmode=require", var_dir=tmp_path)

    assert db["ENGINE"] == "django.db.backends.postgresql"
    assert (db["USER"], db["PASSWORD"], db["HOST"], db["PORT"], db["NAME"]) == (
        "led@ger",
        "p/w",
        "db.internal",
        "6432",
        "wattledger",
    )
    assert db["OPTIONS"] == {"connect_timeout": 5, "prepare_threshold": 5, "sslmode": "require"}


@pytest.mark.parametrize(("query", "threshold"), [("prepare_threshold=none", None), ("prepare_threshold=0", 0)])
def test_prepared_statements_can_be_turned_off_or_on_from_the_url(tmp_path, query, threshold):
    db = database_from_url(f"postgres://db.internal/wattledger?{query}", var_dir=tmp_path)

    assert db["OPTIONS"]["prepare_threshold"] == threshold


def test_a_prepare_threshold_that_is_not_a_number_is_refused(tmp_path):
    with pytest.raises(ImproperlyConfigured, match="prepare_threshold"):
        database_from_url("postgres://db.internal/wattledger?prepare_threshold=often", var_dir=tmp_path)


def test_env_helpers_use_defaults_and_reject_garbage(monkeypatch):
    monkeypatch.delenv("X_FLAG", raising=False)
    assert env_bool("X_FLAG", True) is True
    monkeypatch.setenv("X_FLAG", "off")
    assert env_bool("X_FLAG", True) is False
    monkeypatch.setenv("X_INT", "ten")
    with pytest.raises(ImproperlyConfigured, match="X_INT='ten' is not an integer"):
        env_int("X_INT", 1)
    monkeypatch.setenv("X_INT", "20")
    with pytest.raises(ImproperlyConfigured, match="X_INT=20 is above the maximum of 19"):
        env_int("X_INT", 15, minimum=1, maximum=19)
    assert env_int("X_INT", 15, minimum=1, maximum=20) == 20
