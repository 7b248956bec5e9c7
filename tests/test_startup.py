"""A gunicorn worker (``config/gunicorn.conf.py``'s ``post_worker_init``) loads every view and Plotly before its
first request, then freezes them out of the garbage collector's full collections (``config.startup``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.processes import subprocess_env

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parent.parent

_PROBE = """
import gc, json, runpy, sys
import config.wsgi
conf = runpy.run_path("config/gunicorn.conf.py")
conf["post_worker_init"](None)
print(json.dumps({
    "frozen": gc.get_freeze_count(),
    "tracked": len(gc.get_objects()),
    "views": all(m in sys.modules for m in ("dashboards.nodes", "dashboards.sustainability", "reports.api")),
    "plotly": "plotly.graph_objs._figure" in sys.modules,
}))
"""


def test_a_gunicorn_worker_starts_with_its_views_loaded_and_frozen():
    done = subprocess.run(
        [sys.executable, "-c", _PROBE],
        env=subprocess_env(),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["views"] and found["plotly"]
    # What a full collection still scans is what the worker allocated since: a small part of it.
    assert found["frozen"] > 50_000
    assert found["tracked"] < found["frozen"] / 10
