"""Read settings from the environment, failing loudly on values that make no sense.

Every helper raises ``ImproperlyConfigured`` naming the variable and what it
expected, so a typo in a deployment stops the process at start-up instead of
surfacing hours later as odd behaviour.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import SplitResult, parse_qsl, unquote, urlsplit

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str | None = None) -> str | None:
    value = os.environ.get(name)
    return default if value is None else value.strip()


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean; use one of 1/0, true/false, yes/no, on/off")


def env_int(name: str, default: int, *, minimum: int | None = None, maximum: int | None = None) -> int:
    raw = os.environ.get(name)
    if raw is None:
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not an integer") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}={value} is below the minimum of {minimum}")
    if maximum is not None and value > maximum:
        raise ImproperlyConfigured(f"{name}={value} is above the maximum of {maximum}")
    return value


_RATE = re.compile(r"^[1-9][0-9]*/(second|minute|hour|day)$")


def env_rate(name: str, default: str) -> str:
    """A request rate as DRF's throttles take it: ``N/second``, ``N/minute``, ``N/hour`` or ``N/day``."""
    value = env_str(name) or default
    if not _RATE.match(value):
        raise ImproperlyConfigured(f"{name}={value!r} is not a rate; use N/second, N/minute, N/hour or N/day")
    return value


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def database_from_url(url: str, *, var_dir: Path) -> dict[str, object]:
    """Turn ``DATABASE_URL`` into a Django ``DATABASES`` entry.

    Accepted: ``sqlite:///relative/or/absolute/path.sqlite3`` (relative to the
    ``var`` directory when not absolute) and
    ``postgres://user:password@host:port/name?option=value`` (``postgresql://``
    too; query options go to psycopg, e.g. ``sslmode=require``).
    """
    parts = urlsplit(url)
    if parts.scheme == "sqlite":
        return _sqlite_database(url, parts.path, var_dir=var_dir)
    if parts.scheme in {"postgres", "postgresql"}:
        return _postgres_database(url, parts)
    raise ImproperlyConfigured(
        f"DATABASE_URL scheme {parts.scheme!r} is not supported; use sqlite:///path or postgres://user@host:port/name"
    )


def _sqlite_database(url: str, path: str, *, var_dir: Path) -> dict[str, object]:
    # sqlite:///name.sqlite3 lives under var/; sqlite:////abs/path.sqlite3 is absolute.
    name = path[1:] if path.startswith("/") else path
    if not name:
        raise ImproperlyConfigured(f"DATABASE_URL={url!r} names no SQLite file; e.g. sqlite:///wattledger.sqlite3")
    file = Path(name) if name.startswith("/") else var_dir / name
    return {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": str(file),
        # IMMEDIATE transactions and WAL let the web server, the worker and beat
        # share one file without "database is locked" on concurrent writes.
        "OPTIONS": {
            "transaction_mode": "IMMEDIATE",
            "timeout": 30,
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        },
        "TEST": {"NAME": str(var_dir / "test.sqlite3")},
    }


def _postgres_database(url: str, parts: SplitResult) -> dict[str, object]:
    name = unquote(parts.path.lstrip("/"))
    if not name:
        raise ImproperlyConfigured(f"DATABASE_URL={_redact(url)!r} names no database")
    try:
        port = parts.port
    except ValueError:
        raise ImproperlyConfigured(f"DATABASE_URL={_redact(url)!r} has a port that is not a number") from None
    # prepare_threshold: Django's supported option for psycopg's prepared statements (they apply to
    # server-side binding cursors only; Django's default cursors bind on the client and never prepare).
    options: dict[str, object] = {"connect_timeout": 5, "prepare_threshold": 5}
    options.update(dict(parse_qsl(parts.query)))
    threshold = options["prepare_threshold"]
    if isinstance(threshold, str):  # ?prepare_threshold=none turns them off (a transaction-pooling PgBouncer < 1.21)
        try:
            options["prepare_threshold"] = None if threshold.lower() in ("", "none") else int(threshold)
        except ValueError:
            raise ImproperlyConfigured(
                f"DATABASE_URL={_redact(url)!r}: prepare_threshold must be a number or 'none'"
            ) from None
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": name,
        "USER": unquote(parts.username or ""),
        "PASSWORD": unquote(parts.password or ""),
        "HOST": parts.hostname or "",
        "PORT": str(port or ""),
        "CONN_MAX_AGE": 60,
        "CONN_HEALTH_CHECKS": True,
        "OPTIONS": options,
    }


def _redact(url: str) -> str:
    parts = urlsplit(url)
    if parts.password:
        return url.replace(f":{parts.password}@", ":***@")
    return url
