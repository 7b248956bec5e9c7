"""bench-scenarios: a what-if scenario replayed over 90 days x 500 GPUs of stored ledger rows.

Seeds (once; ``--reseed`` to rebuild) an organization with two fleets (H100 and RTX
4090 nodes, 8 GPUs each, 500 GPUs in all, one serving endpoint per node for one
LLM model) and ``--days`` of node-hour ledger rows and endpoint-hour usage written
straight by SQL (``INSERT ... SELECT generate_series``: ~136k rows each for 90 days).
Then one scenario with every kind of change (nodes added, a lifetime extension, a
zone move with a PUE and tariff, renting instead of owning, a routing share) is run
``--repeats`` times the way the Celery task runs it (``scenario_run``, in process),
and the median wall time is reported against the one-minute target.

    python -m bench.scenarios [--gpus 500] [--days 90] [--repeats 3] [--reseed]
"""

from __future__ import annotations

import argparse
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from bench.common import (
    GPUS_PER_NODE,
    SQL_HOURS,
    SQL_LOAD,
    background_settle,
    bench_nodes,
    django_setup,
    ledger_seeded,
    median,
    results_write,
    sql_insert,
    table_print,
    target,
    targets_print,
)

TARGET_RUN_S = 60.0
ORG = "Bench Scenarios"
MODEL = "llama-3.1-8b"


def inventory(gpus: int) -> dict[str, Any]:
    """The bench organization, its two fleets, nodes, GPUs and one endpoint per node."""
    from telemetry.models import ServingEndpoint

    nodes = bench_nodes(organization_name=ORG, prefix="scenarios", gpus=gpus, gpu_prefix="scen")
    for node in nodes:
        ServingEndpoint.objects.get_or_create(
            node=node, url="http://127.0.0.1:8000/metrics", defaults={"kind": "vllm", "model_name": MODEL}
        )
    return {"organization": nodes[0].fleet.organization, "nodes": nodes}


def seed(nodes: list[Any], start: datetime, end: datetime) -> None:
    """Node-hour ledger rows and endpoint-hour usage for every node and hour of ``[start, end)``, by SQL."""
    from django.db import connection

    from accounting.models import NodeHourLedger
    from telemetry.models import EndpointHourUsage

    node_ids = [node.pk for node in nodes]
    hours, load = SQL_HOURS, SQL_LOAD
    enterprise = "f.name = 'enterprise'"
    params = {"start": start, "end": end, "nodes": node_ids}
    with connection.cursor() as cursor:
        cursor.execute(
            f"DELETE FROM {EndpointHourUsage._meta.db_table} WHERE endpoint_id IN "
            "(SELECT id FROM telemetry_servingendpoint WHERE node_id = ANY(%s))",
            [node_ids],
        )
        cursor.execute(f"DELETE FROM {NodeHourLedger._meta.db_table} WHERE node_id = ANY(%s)", [node_ids])
        tokens = f"(8 * CASE WHEN {enterprise} THEN 6000 ELSE 3300 END * 3600 * {load})::bigint"
        sql_insert(
            cursor,
            EndpointHourUsage,
            f"telemetry_servingendpoint o JOIN fleets_node n ON n.id = o.node_id "
            f"JOIN fleets_fleet f ON f.id = n.fleet_id, {hours}",
            "o.node_id = ANY(%(nodes)s)",
            params,
            {
                "node_id": "o.node_id",
                "endpoint_id": "o.id",
                "hour_start": "h",
                "prompt_tokens": f"2 * {tokens}",
                "generation_tokens": tokens,
                "requests": f"{tokens} / 256",
                "ttft_bucket_bounds_s": "'[0.05, 0.1, 0.25, 0.5, 1]'::jsonb",
                "ttft_bucket_counts": f"CASE WHEN {enterprise} THEN '[900, 80, 15, 5, 0, 0]'::jsonb "
                "ELSE '[100, 300, 400, 150, 40, 10]'::jsonb END",
                "observed_s": "3600",
                "reset_count": "0",
                "computed_at": "now()",
            },
        )
        kwh = f"8 * (CASE WHEN {enterprise} THEN 0.07 + 0.63 * {load} ELSE 0.03 + 0.42 * {load} END)"
        sql_insert(
            cursor,
            NodeHourLedger,
            f"fleets_node o JOIN fleets_fleet f ON f.id = o.fleet_id, {hours}",
            "o.id = ANY(%(nodes)s)",
            params,
            {
                "node_id": "o.id",
                "hour_start": "h",
                "organization_id": "f.organization_id",
                "fleet_id": "o.fleet_id",
                "site_id": "o.site_id",
                "gpu_model": f"CASE WHEN {enterprise} THEN 'h100-sxm' ELSE 'rtx-4090' END",
                "currency": "'USD'",
                "held_h": "1",
                "observed_s": "28800",
                "gpu_count": "8",
                "gpu_h": "8",
                "it_kwh": kwh,
                "gpu_kwh": kwh,
                "facility_kwh": f"1.2 * {kwh}",
                "pue": "1.2",
                "electricity_cost": f"1.2 * {kwh} * 0.25",
                "hardware_cost": f"8 * CASE WHEN {enterprise} THEN 2.5 ELSE 0.6 END",
                "cost": f"8 * CASE WHEN {enterprise} THEN 2.5 ELSE 0.6 END + 1.2 * {kwh} * 0.25",
                "location_co2e_g": f"1.2 * {kwh} * 380",
                "market_co2e_g": "NULL",
                "embodied_co2e_g_low": "8 * 2.25",
                "embodied_co2e_g_central": "8 * 5.62",
                "embodied_co2e_g_high": "8 * 9",
                "prompt_tokens": f"2 * {tokens}",
                "generation_tokens": tokens,
                "energy_method": "'gpu_sum'",
                "electricity_status": "'priced'",
                "tariff_price_per_kwh": "0.25",
                "location_gco2e_per_kwh": "380",
                "location_source": "'annual:DE'",
                "location_is_fallback": "true",
                "amortization": "'time'",
                "computed_at": "now()",
            },
        )
        for table in ("accounting_nodehourledger", "telemetry_endpointhourusage"):
            cursor.execute(f"ANALYZE {table}")


def changes(fleets: dict[str, int]) -> list[dict[str, Any]]:
    """Every kind of change at once: the replay's whole work."""
    enterprise, consumer = fleets["enterprise"], fleets["consumer"]
    return [
        {"kind": "nodes", "fleet": enterprise, "gpu_model": "h100-sxm", "nodes": 4},
        {"kind": "lifetime", "fleet": enterprise, "extra_years": 2},
        {"kind": "move", "fleet": consumer, "zone": "FR", "pue": "1.1", "price_per_kwh": "0.18"},
        {"kind": "tenure", "fleet": consumer, "mode": "own", "capex_per_gpu": 1800, "lifetime_years": 4},
        {"kind": "routing", "llm_model": MODEL, "from_fleet": enterprise, "to_fleet": consumer, "share": "0.3"},
    ]


def run_once(scenario_id: int) -> tuple[float, str]:
    from django.utils import timezone

    from scenarios.services import scenario_run, scenario_run_claim

    scenario_run_claim(scenario_id=scenario_id, now=timezone.now())
    begun = time.perf_counter()
    status = scenario_run(scenario_id=scenario_id, now=timezone.now())
    return time.perf_counter() - begun, status


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gpus", type=int, default=500)
    parser.add_argument("--days", type=int, default=90)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--reseed", action="store_true")
    args = parser.parse_args(argv)
    django_setup()
    from fleets.models import Fleet
    from scenarios.models import Scenario
    from scenarios.services import scenario_create

    end = datetime.now(tz=UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    start = end - timedelta(days=args.days)
    if args.gpus <= GPUS_PER_NODE:
        parser.error(f"--gpus must be more than {GPUS_PER_NODE}: the changes need a node in each of the two fleets")
    inv = inventory(args.gpus)
    if args.reseed or not ledger_seeded(inv["nodes"], start, end):
        print(f"seeding {args.days} days x {args.gpus} GPUs of node-hours ...", flush=True)
        begun = time.perf_counter()
        seed(inv["nodes"], start, end)
        print(f"  seeded in {time.perf_counter() - begun:.0f} s", flush=True)
    organization = inv["organization"]
    Scenario.objects.filter(organization=organization).delete()
    fleets = dict(Fleet.objects.filter(organization=organization).values_list("name", "id"))
    scenario = scenario_create(
        organization=organization, user=None, name="every change", period_start=start, period_end=end,
        changes=changes(fleets),
    )  # fmt: skip
    background_settle()
    timings = []
    for _ in range(args.repeats):
        seconds, status = run_once(scenario.pk)
        if status != Scenario.Status.DONE:
            scenario.refresh_from_db()
            raise SystemExit(f"the run ended {status}: {scenario.error}")
        timings.append(seconds)
    scenario.refresh_from_db()
    rows = scenario.node_hours_replayed
    run_s = median(timings)
    metrics = {
        "node_hours": rows,
        "run_s_median": round(run_s, 2),
        "run_s_all": [round(t, 2) for t in timings],
        "node_hours_per_s": round(rows / run_s),
    }
    targets = {"run_s": target(round(run_s, 2), TARGET_RUN_S)}
    table_print(f"bench-scenarios ({args.days} days x {args.gpus} GPUs, every kind of change)", list(metrics.items()))
    targets_print(targets)
    run = {"gpus": args.gpus, "nodes": len(inv["nodes"]), "days": args.days, "repeats": args.repeats,
           "changes": changes(fleets), "how": "scenario_run in process, as the Celery task calls it"}  # fmt: skip
    print(f"\nwrote {results_write('scenarios', metrics=metrics, targets=targets, run=run)}")


if __name__ == "__main__":
    main()
