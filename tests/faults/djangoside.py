"""The harness's window into the server's database, run as its own process on the harness's settings.

``python -m tests.faults.djangoside COMMAND [JSON]`` with ``DATABASE_URL`` (and the
rest of the server's environment) set; prints one JSON document:

* ``setup {"nodes": [...], "commissioned_at": ISO}``: enrolls each node with
  ``manage.py enroll_node`` (its own organization every second node) and
  answers ``{"nodes": {hostname: {"token", "node_id"}}, "usage_table": ...}``.
* ``api {"organization": name, "fleet": name, "start": ISO, "end": ISO}``: an
  admin of the organization with a personal token for the API, and a scenario
  of the fleet over ``[start, end)`` (stored, not run); answers their ids, the
  token and the tables the faults hold locked.
* ``gpu {"hostname": ...}``: a GPU of the node as its collector reports it
  (uuid, index, name, its first epoch) and its id.
* ``state``: how many node-hours wait for the rollup and for the ledger.
* ``dump {"start": ISO, "end": ISO}``: the raw samples, hourly usage and ledger lines of the window.
* ``recompute {"start": ISO, "end": ISO}``: recomputes every hour of the window from
  the raw samples (rollup, then ledger), as a fresh installation would, and
  dumps the result like ``dump``.
"""

from __future__ import annotations

import io
import json
import os
import sys
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import models, transaction  # noqa: E402

from accounting.models import LedgerPending, NodeHourLedger, NodePrice  # noqa: E402
from accounting.node_hour_lines import ledger_node_hours_compute  # noqa: E402
from accounting.site_hours import site_hours_check, site_hours_pending  # noqa: E402
from fleets.models import Fleet, Gpu, Membership, Node, Organization, Role  # noqa: E402
from fleets.personal_tokens import personal_token_create  # noqa: E402
from scenarios.services import scenario_create  # noqa: E402
from telemetry.models import (  # noqa: E402
    EndpointHourUsage,
    GpuEpoch,
    GpuHourUsage,
    GpuSample,
    RollupPending,
    ServingSample,
    UsageChanged,
)
from telemetry.rollup import rollup_node_hours  # noqa: E402

HOUR = timedelta(hours=1)
SKIPPED = {"id", "computed_at"}
GPU_VALUES = ["energy_j", "power_w", "util_pct", "mem_util_pct", "mem_used_mib", "temp_c"]


def plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.timestamp()
    if isinstance(value, Decimal):
        return str(value)
    return value


def setup(spec: dict[str, Any]) -> dict[str, Any]:
    nodes = {}
    commissioned_at = datetime.fromisoformat(spec["commissioned_at"])
    for i, hostname in enumerate(spec["nodes"]):
        out = io.StringIO()
        call_command(
            "enroll_node", organization=f"Faults Org {i % 2 + 1}", fleet=f"fleet-{i % 2 + 1}", site="lab",
            hostname=hostname, grid_zone="DE", country="DE", pue="1.2", stdout=out,
        )  # fmt: skip
        node = Node.objects.get(hostname=hostname)
        Node.objects.filter(pk=node.pk).update(commissioned_at=commissioned_at)  # its backfilled past is owned
        nodes[hostname] = {"token": out.getvalue().strip().splitlines()[-1], "node_id": node.pk}
    return {"nodes": nodes, "usage_table": GpuHourUsage._meta.db_table}


def api(spec: dict[str, Any]) -> dict[str, Any]:
    organization = Organization.objects.get(name=spec["organization"])
    fleet = Fleet.objects.get(organization=organization, name=spec["fleet"])
    user = get_user_model().objects.create_user(username="faults-admin", password=None)
    Membership.objects.create(user=user, organization=organization, role=Role.ADMIN)
    _, token = personal_token_create(user=user, name="fault harness")
    scenario = scenario_create(
        organization=organization, user=user, name="faults: PUE 1.3",
        period_start=datetime.fromisoformat(spec["start"]), period_end=datetime.fromisoformat(spec["end"]),
        changes=[{"kind": "move", "fleet": fleet.pk, "pue": "1.3"}],
    )  # fmt: skip
    return {
        "token": token,
        "organization_id": organization.pk,
        "scenario_id": scenario.pk,
        "ledger_table": NodeHourLedger._meta.db_table,
        "price_table": NodePrice._meta.db_table,
        "gpu_sample_table": GpuSample._meta.db_table,
    }


def gpu(spec: dict[str, Any]) -> dict[str, Any]:
    row = Gpu.objects.filter(node__hostname=spec["hostname"]).order_by("index").first()
    if row is None:
        return {}
    epoch = GpuEpoch.objects.filter(gpu=row).order_by("pk").values_list("epoch", flat=True).first() or "faults"
    identity = {"uuid": row.uuid, "index": row.index, "name": row.name, "epoch": epoch}
    return {"id": row.pk, "identity": identity | {"energy_counter_supported": bool(row.energy_counter_supported)}}


def state() -> dict[str, int]:
    return {
        "rollup_pending": RollupPending.objects.count(),
        "usage_changed": UsageChanged.objects.count(),
        "ledger_pending": LedgerPending.objects.count(),
    }


def _rows(queryset: models.QuerySet[Any], fields: list[str]) -> list[list[Any]]:
    return [[plain(v) for v in row] for row in queryset.values_list(*fields)]


def dump(spec: dict[str, Any]) -> dict[str, Any]:
    start, end = datetime.fromtimestamp(spec["start"], UTC), datetime.fromtimestamp(spec["end"], UTC)
    gpus = {g.pk: (g.node.hostname, g.uuid) for g in Gpu.objects.select_related("node")}
    gpu_epochs = dict(GpuEpoch.objects.values_list("pk", "epoch"))
    gpu_fields = ["gpu_id", "epoch_id", "ts", *GPU_VALUES]
    gpu_rows = [
        [*gpus[row[0]], gpu_epochs[row[1]], *row[2:]]
        for row in _rows(GpuSample.objects.filter(gpu_id__in=gpus), gpu_fields)
    ]
    serving_fields = ["endpoint__node__hostname", "endpoint__url", "epoch__epoch", "ts"]
    serving_fields += ["prompt_tokens", "generation_tokens", "requests"]
    usage_fields = [f.attname for f in GpuHourUsage._meta.concrete_fields if f.attname not in SKIPPED]
    endpoint_fields = [f.attname for f in EndpointHourUsage._meta.concrete_fields if f.attname not in SKIPPED]
    ledger_fields = [f.attname for f in NodeHourLedger._meta.concrete_fields if f.attname not in SKIPPED]
    window = {"hour_start__gte": start, "hour_start__lt": end}
    return {
        "gpu_samples": gpu_rows,
        "serving_samples": _rows(ServingSample.objects.all(), serving_fields),
        "gpu_usage_fields": ["gpu__uuid", *usage_fields],
        "gpu_usage": _rows(GpuHourUsage.objects.filter(**window), ["gpu__uuid", *usage_fields]),
        "endpoint_usage_fields": ["endpoint__node__hostname", *endpoint_fields],
        "endpoint_usage": _rows(
            EndpointHourUsage.objects.filter(**window), ["endpoint__node__hostname", *endpoint_fields]
        ),
        "ledger_fields": ledger_fields,
        "ledger": _rows(NodeHourLedger.objects.filter(**window), ledger_fields),
        "site_hours_problems": site_hours_check() + _marks_left(),  # the ledger's site-hours against its lines
    }


def _marks_left() -> list[str]:
    """Site-hours still marked to be summed (a Citus coordinator's, ``accounting.site_hours``): none once the
    ledger's transactions committed and its runs ended."""
    marked = site_hours_pending(organization_ids=None)
    return [f"{len(marked)} site-hour(s) marked and never summed: {sorted(marked)[:3]}"] if marked else []


def recompute(spec: dict[str, Any]) -> dict[str, Any]:
    start, end = datetime.fromtimestamp(spec["start"], UTC), datetime.fromtimestamp(spec["end"], UTC)
    hours = [start + HOUR * i for i in range(int((end - start) / HOUR))]
    for node_id in Node.objects.values_list("pk", flat=True):
        with transaction.atomic():
            rollup_node_hours(node_id=node_id, hour_starts=hours)
        with transaction.atomic():
            ledger_node_hours_compute(node_id=node_id, hour_starts=hours)
    return dump(spec)


COMMANDS = {"setup": setup, "api": api, "gpu": gpu, "dump": dump, "recompute": recompute}


def main(argv: list[str]) -> None:
    command = argv[0]
    result = state() if command == "state" else COMMANDS[command](json.loads(argv[1]))
    json.dump(result, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1:])
