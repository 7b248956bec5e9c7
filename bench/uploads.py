"""bench-uploads: a node-price CSV of 5,000 rows, end to end through its Celery task, on SQLite and PostgreSQL.

Each database gets its own process (``--child``): an organization of ``--nodes`` nodes with a
ledger line for every hour of ``--days`` days (bulk-created), then per repeat a file of ``--rows``
rows (each node's rentals, one row a day, so every row re-opens that day's 24 lines) POSTed to
``/api/v1/node-prices/upload/`` by a signed-in finance user, the task the commit sends run at once in
the same process (``task_always_eager``, as a worker would run it), and the status read until done.
Two files: every row good (all saved, lines re-opened), and one row in 100 naming no node (every row
checked, the refused rows listed, nothing saved). Reported: the POST's own time (store and count),
the task's (``started_at`` to ``finished_at``), the whole (POST to the status read done) per file and
per row, and the SQL statements per row (each a round trip), against the web worker's 30 s timeout that
the synchronous upload used to hit (the task's own limit is ``CELERY_TASK_SOFT_TIME_LIMIT``, 540 s).

    python -m bench.uploads [--databases sqlite,postgresql] [--rows 5000] [--nodes 50] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from bench.common import (
    ROOT,
    bench_env,
    database_create,
    database_url,
    median,
    results_write,
    table_print,
    targets_print,
)
from bench.common import target as target_of

# The 30 s web-worker timeout the synchronous upload hit; the task itself may run CELERY_TASK_SOFT_TIME_LIMIT (540 s).
TARGET_S = 30.0
ORG = "Bench Uploads"
URL = "/api/v1/node-prices/upload/"
HEADER = "fleet,node,kind,rate_per_h,rate_per,capex,lifetime_years,valid_from,valid_to\n"
DATABASES = {
    "sqlite": f"sqlite:///{ROOT / 'var' / 'bench' / 'uploads.sqlite3'}",
    "postgresql": None,  # BENCH_DATABASE_URL
}


def child_setup(url: str) -> None:
    import os

    if url.startswith("postgres"):
        database_create(url)
    (ROOT / "var" / "bench" / "static").mkdir(parents=True, exist_ok=True)
    os.environ.update(bench_env(url, ALLOWED_HOSTS="testserver,127.0.0.1"))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)


def inventory(nodes: int) -> dict[str, Any]:
    from django.contrib.auth import get_user_model

    from fleets.models import Membership, Node, Role
    from fleets.services import node_enroll

    enrolled = [
        node_enroll(organization_name=ORG, fleet_name="inference", site_name="site-0", hostname=f"up-{n:03d}",
                    site_defaults={"grid_zone": "DE", "country": "DE"}).node
        for n in range(nodes)
    ]  # fmt: skip
    organization = enrolled[0].fleet.organization
    user, _ = get_user_model().objects.get_or_create(username="bench-uploads-finance")
    Membership.objects.get_or_create(user=user, organization=organization, defaults={"role": Role.FINANCE})
    return {
        "organization": organization,
        "user": user,
        "nodes": list(Node.objects.filter(pk__in=[n.pk for n in enrolled])),
    }


def _zero(field: Any) -> Any:
    kind = field.get_internal_type()
    if kind in ("CharField", "TextField"):
        return "unknown" if field.name == "gpu_model" else ("EUR" if field.name == "currency" else "")
    if kind == "JSONField":
        return []
    if kind == "BooleanField":
        return False
    return 0


def ledger_seed(nodes: list[Any], start: datetime, days: int) -> int:
    """A line for every node and hour of ``days`` days from ``start`` (zeros: the upload only re-opens them)."""
    from django.utils import timezone

    from accounting.models import NodeHourLedger

    NodeHourLedger.objects.filter(node__in=nodes).delete()
    fields = [
        f for f in NodeHourLedger._meta.concrete_fields
        if not f.primary_key and not f.null and not f.has_default() and not f.is_relation
    ]  # fmt: skip
    base = {f.attname: _zero(f) for f in fields}
    now = timezone.now()
    rows = [
        NodeHourLedger(**{**base, "node_id": node.pk, "organization_id": node.fleet.organization_id,
                          "fleet_id": node.fleet_id, "site_id": node.site_id, "hour_start": start + timedelta(hours=h),
                          "computed_at": now})
        for node in nodes
        for h in range(24 * days)
    ]  # fmt: skip
    NodeHourLedger.objects.bulk_create(rows, batch_size=2000)
    return len(rows)


def csv_file(nodes: list[Any], start: datetime, rows: int, *, bad_every: int = 0) -> bytes:
    lines = [HEADER]
    for i in range(rows):
        node, day = nodes[i % len(nodes)], i // len(nodes)
        valid_from, valid_to = start + timedelta(days=day), start + timedelta(days=day + 1)
        hostname = "no-such-node" if bad_every and i % bad_every == bad_every - 1 else node.hostname
        lines.append(f"inference,{hostname},rented,2.50,gpu,,,{valid_from:%Y-%m-%d},{valid_to:%Y-%m-%d}\n")
    return "".join(lines).encode()


def upload_timed(client: Any, organization: Any, content: bytes) -> dict[str, Any]:
    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.db import connection

    from accounting.models import InputUpload, LedgerPending, NodePrice

    NodePrice.objects.filter(fleet__organization=organization).delete()
    LedgerPending.objects.filter(node__fleet__organization=organization).delete()
    statements = [0]

    def counted(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        statements[0] += 1
        return execute(sql, params, many, context)

    begun = time.perf_counter()
    with connection.execute_wrapper(counted):
        posted = client.post(URL, {"file": SimpleUploadedFile("prices.csv", content)})
    post_s = time.perf_counter() - begun
    assert posted.status_code == 202, posted.content
    status = client.get(posted["Location"]).json()
    total_s = time.perf_counter() - begun
    assert status["state"] == "done", status
    upload = InputUpload.objects.get(pk=status["id"])
    assert upload.started_at is not None and upload.finished_at is not None
    task_s = (upload.finished_at - upload.started_at).total_seconds()
    result = status["result"]
    return {
        "total_s": total_s, "task_s": task_s, "post_s": post_s - task_s, "status": status["result_status"],
        "saved": result.get("saved", 0), "refused": len(result.get("refused", [])),
        "reopened": result.get("ledger_hours_reopened", 0), "statements": statements[0],
    }  # fmt: skip


def child(url: str, args: argparse.Namespace) -> dict[str, Any]:
    child_setup(url)
    from django.db import connection
    from django.test import Client

    from config.celery import app

    app.conf.task_always_eager = app.conf.task_eager_propagates = True
    inv = inventory(args.nodes)
    days = -(-args.rows // args.nodes)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    lines = ledger_seed(inv["nodes"], start, days)
    client = Client()
    client.force_login(inv["user"])
    files = {
        "good": csv_file(inv["nodes"], start, args.rows),
        "errors": csv_file(inv["nodes"], start, args.rows, bad_every=100),
    }
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in files}
    for _ in range(args.repeats):
        for name, content in files.items():
            runs[name].append(upload_timed(client, inv["organization"], content))
    return {"vendor": connection.vendor, "ledger_lines": lines, "rows": args.rows, "runs": runs}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--databases", default="sqlite,postgresql")
    parser.add_argument("--rows", type=int, default=5000)
    parser.add_argument("--nodes", type=int, default=50, help="the rows are spread over these nodes, a day each")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, args)))
        return
    metrics, targets = {}, {}
    for name in args.databases.split(","):
        url = DATABASES[name] or database_url()
        if name == "sqlite":
            (ROOT / "var" / "bench" / "uploads.sqlite3").unlink(missing_ok=True)
        command = [sys.executable, "-m", "bench.uploads", "--child", url, "--rows", str(args.rows),
                   "--nodes", str(args.nodes), "--repeats", str(args.repeats)]  # fmt: skip
        out = subprocess.run(command, cwd=ROOT, check=True, capture_output=True, text=True).stdout
        metrics[name] = json.loads(out.strip().splitlines()[-1])
    rows = []
    for name, figures in metrics.items():
        for kind, runs in figures["runs"].items():
            total = median([r["total_s"] for r in runs])
            last = runs[-1]
            rows.append((name, kind, median([r["post_s"] for r in runs]), median([r["task_s"] for r in runs]), total,
                         round(1000 * total / figures["rows"], 2), round(last["statements"] / figures["rows"], 1),
                         last["status"], last["saved"], last["refused"], last["reopened"]))  # fmt: skip
            targets[f"{name} {kind} {figures['rows']} rows, s"] = target_of(round(total, 2), TARGET_S)
    header = ("database", "file", "POST s", "task s", "total s", "ms/row", "SQL/row", "answer", "saved", "refused",
              "lines re-opened")  # fmt: skip
    table_print(f"node-price upload, {args.rows} rows over {args.nodes} nodes (medians of {args.repeats})", rows,
                header=header)  # fmt: skip
    targets_print(targets)
    path = results_write("uploads", metrics=metrics, targets=targets, run=vars(args))
    print(f"\nwritten to {path}")


if __name__ == "__main__":
    main()
