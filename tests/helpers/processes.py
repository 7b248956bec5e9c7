"""The environment of the server and worker processes that tests start on the test database."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the repository, where the processes run


def database_url_for_subprocesses() -> str:
    """A DATABASE_URL naming the test database, for processes started by the tests."""
    from django.db import connection

    db = connection.settings_dict
    if db["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{Path(db['NAME']).resolve()}"
    auth = db["USER"] + (f":{db['PASSWORD']}" if db["PASSWORD"] else "")
    return f"postgres://{auth}@{db['HOST'] or 'localhost'}:{db['PORT'] or 5432}/{db['NAME']}"


def subprocess_env() -> dict[str, str]:
    """The environment for a server or worker process that the tests start on the test database."""
    database_url = database_url_for_subprocesses()
    return {**os.environ, "DATABASE_URL": database_url, "DJANGO_SETTINGS_MODULE": "config.settings_test"}
