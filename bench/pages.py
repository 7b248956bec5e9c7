"""bench-pages: dashboards and report endpoints over 90 days x 500 GPUs of hourly data.

Seeds (once; ``--reseed`` to rebuild) an organization with two fleets (H100
and RTX 4090 nodes, 8 GPUs each, 500 GPUs in all, one serving endpoint per
node) and 90 days of hourly rows written straight by SQL: GPU-hour usage
(~1.08M rows), endpoint-hour usage and the node-hour ledger (~140k rows each).
Then every dashboard page and report endpoint that exists in the URL conf is
requested up to ``--requests`` times within ``--budget-s`` seconds (at least 5
times), in process (Django test client, a signed-in admin of the organization),
for the 90-day period; median and p95 per URL (targets: p95 under 500 ms, median under 250 ms).

The 10x check: the pages are timed with raw GPU samples behind the last hours
at 0.1 Hz, then again with the same hours at 1 Hz (10x the rows); pages read
hourly rollups, so they must not grow by more than 20 %. Growth is judged on
the median request: the p95 of 20 requests on a shared 2-core VM is one or two
slow requests, and swings by a third between identical runs (a page that reads
no raw sample at all once read +72 %); it is reported too.

URLs that do not exist (yet) are listed as skipped, so the benchmark can be
run again as pages land.

    python -m bench.pages [--gpus 500] [--days 90] [--requests 20] [--budget-s 6] [--raw-hours 1] [--reseed]
"""

from __future__ import annotations

import argparse
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from bench.common import (
    SQL_HOURS,
    SQL_LOAD,
    background_settle,
    bench_nodes,
    django_setup,
    ledger_seeded,
    median,
    percentile,
    results_write,
    sql_insert,
    table_print,
    target,
    targets_print,
)

TARGET_P95_MS = 500
TARGET_MEDIAN_MS = 250
TARGET_RAW_GROWTH = 0.20
MIN_REQUESTS = 5
ORG = "Bench Pages"

# Candidate URLs: (name, path, query). ``{node}`` is a bench node's id.
DASHBOARDS = (
    ("finance", "/finance/", "period=90d"),
    ("sustainability", "/sustainability/", "period=90d"),
    ("compare", "/compare/", "period=90d"),
    ("nodes", "/nodes/", "period=90d"),
    ("node", "/nodes/{node}/", "period=90d"),
    ("compare by llm_model", "/compare/", "period=90d&by=llm_model"),
    ("advice", "/advice/", ""),
    ("scenarios", "/scenarios/", ""),
    ("prices", "/finance/prices/", ""),
)
REPORTS = (
    ("reports/usage by fleet, daily", "/api/v1/reports/usage/", "{period}&group_by=fleet&granularity=day"),
    ("reports/usage by node, total", "/api/v1/reports/usage/", "{period}&group_by=node&granularity=total"),
    ("reports/usage, hourly", "/api/v1/reports/usage/", "{period}&granularity=hour"),
    (
        "reports/usage CSV by fleet, daily",
        "/api/v1/reports/usage/",
        "{period}&group_by=fleet&granularity=day&format=csv",
    ),
    ("reports/comparison", "/api/v1/reports/comparison/", "{period}"),
    ("reports/sustainability", "/api/v1/reports/sustainability/", "{period}"),
    ("reports/comparison by llm_model", "/api/v1/reports/comparison/", "{period}&by=llm_model"),
    ("reports/comparison by load", "/api/v1/reports/comparison/", "{period}&by_load=true"),
    ("reports/scope2", "/api/v1/reports/scope2/", "{period}"),
    ("reports/scope2 GHG table", "/api/v1/reports/scope2/ghg-table/", "{period}"),
    ("reports/scope2 ESRS", "/api/v1/reports/scope2/esrs/", "{period}"),
)


# --- seeding -------------------------------------------------------------------------------------


def inventory(gpus: int) -> dict[str, Any]:
    """The bench organization, its fleets, nodes, GPUs and endpoints, and an admin user."""
    from django.contrib.auth import get_user_model

    from fleets.models import Gpu, Membership, Role
    from telemetry.models import EndpointEpoch, ServingEndpoint

    nodes = bench_nodes(organization_name=ORG, prefix="pages", gpus=gpus)
    for node in nodes:
        endpoint, _ = ServingEndpoint.objects.get_or_create(
            node=node, url="http://127.0.0.1:8000/metrics", model_name="llama-3.1-8b", defaults={"kind": "vllm"}
        )
        endpoint.gpus.set(Gpu.objects.filter(node=node))
        EndpointEpoch.objects.get_or_create(endpoint=endpoint, epoch="1", defaults={"ttft_bucket_bounds_s": [0.1, 1]})
    organization = nodes[0].fleet.organization
    user, _ = get_user_model().objects.get_or_create(username="bench-pages", defaults={"is_staff": True})
    Membership.objects.get_or_create(user=user, organization=organization, defaults={"role": Role.ADMIN})
    return {"organization": organization, "nodes": nodes, "user": user}


def seed(nodes: list[Any], start: datetime, end: datetime) -> None:
    """Hourly usage and ledger rows for every node and hour of ``[start, end)``, by SQL."""
    from django.db import connection

    from accounting.models import NodeHourLedger
    from accounting.site_hours import site_hours_rebuild
    from telemetry.models import EndpointHourUsage, GpuHourUsage

    node_ids = [node.pk for node in nodes]
    with connection.cursor() as cursor:
        for model in (GpuHourUsage, EndpointHourUsage):
            owner = "gpu" if model is GpuHourUsage else "endpoint"
            cursor.execute(
                f"DELETE FROM {model._meta.db_table} WHERE {owner}_id IN "
                f"(SELECT id FROM {'fleets_gpu' if owner == 'gpu' else 'telemetry_servingendpoint'} "
                "WHERE node_id = ANY(%s))",
                [node_ids],
            )
        cursor.execute(f"DELETE FROM {NodeHourLedger._meta.db_table} WHERE node_id = ANY(%s)", [node_ids])
        hours, load = SQL_HOURS, SQL_LOAD
        # A node's one endpoint answers its line's requests; a rented node's hardware cost is its rent.
        requests, rent = f"(8 * 6000 * 3600 * {load} / 256)::bigint", "8 * 2.5"
        params = {"start": start, "end": end, "nodes": node_ids}
        sql_insert(
            cursor,
            GpuHourUsage,
            f"fleets_gpu o, {hours}",
            "o.node_id = ANY(%(nodes)s)",
            params,
            {
                "node_id": "o.node_id",
                "gpu_id": "o.id",
                "hour_start": "h",
                "energy_j": f"3600 * (70 + 630 * {load})",
                "energy_counter_j": f"3600 * (70 + 630 * {load})",
                "energy_integrated_j": "0",
                "energy_method": "'counter'",
                "observed_s": "3600",
                "energy_covered_s": "3600",
                "busy_s": f"3600 * {load}",
                "mean_power_w": f"70 + 630 * {load}",
                "max_power_w": f"90 + 630 * {load}",
                "mean_util_pct": f"100 * {load}",
                "mean_mem_util_pct": f"70 * {load}",
                "mean_temp_c": f"32 + 36 * {load}",
                "max_temp_c": "70",
                "max_mem_used_bytes": "77309411328",
                "reset_count": "0",
                "computed_at": "now()",
            },
        )
        sql_insert(
            cursor,
            EndpointHourUsage,
            f"telemetry_servingendpoint o, {hours}",
            "o.node_id = ANY(%(nodes)s)",
            params,
            {
                "node_id": "o.node_id",
                "endpoint_id": "o.id",
                "hour_start": "h",
                "prompt_tokens": f"(2 * 8 * 6000 * 3600 * {load})::bigint",
                "generation_tokens": f"(8 * 6000 * 3600 * {load})::bigint",
                "requests": requests,
                "ttft_bucket_bounds_s": "'[0.1, 1]'::jsonb",
                "ttft_bucket_counts": "'[900, 80, 20]'::jsonb",
                "observed_s": "3600",
                "reset_count": "0",
                "computed_at": "now()",
            },
        )
        # The GPU-hours' utilization per node-hour, summed once and joined by (node, hour), and the node's endpoint
        # joined: Citus refuses correlated subqueries where the FROM clause holds a reference table (the nodes).
        utilization = (
            "SELECT u.node_id, u.hour_start, SUM(u.mean_util_pct * u.observed_s) AS util_pct_s, "
            "SUM(u.observed_s) AS util_observed_s FROM telemetry_gpuhourusage u "
            "WHERE u.node_id = ANY(%(nodes)s) AND u.mean_util_pct IS NOT NULL GROUP BY u.node_id, u.hour_start"
        )
        sql_insert(
            cursor,
            NodeHourLedger,
            f"fleets_node o JOIN fleets_fleet f ON f.id = o.fleet_id "
            "LEFT JOIN telemetry_servingendpoint e ON e.node_id = o.id "  # a bench node's one endpoint
            f"CROSS JOIN {hours} LEFT JOIN ({utilization}) g ON g.node_id = o.id AND g.hour_start = h",
            "o.id = ANY(%(nodes)s)",
            params,
            {
                "node_id": "o.id",
                "hour_start": "h",
                "organization_id": "f.organization_id",
                "fleet_id": "o.fleet_id",
                "site_id": "o.site_id",
                "gpu_model": "CASE WHEN f.name = 'enterprise' THEN 'h100-sxm' ELSE 'rtx-4090' END",
                "currency": "'USD'",
                "held_h": "1",
                "observed_s": "28800",
                "gpu_count": "8",
                "it_kwh": f"8 * (0.07 + 0.63 * {load})",
                "facility_kwh": f"8 * 1.2 * (0.07 + 0.63 * {load})",
                "pue": "1.2",
                "electricity_cost": f"8 * 1.2 * (0.07 + 0.63 * {load}) * 0.25",
                "hardware_cost": rent,
                "rent_cost": rent,
                "cost": f"{rent} + 8 * 1.2 * (0.07 + 0.63 * {load}) * 0.25",
                "location_co2e_g": f"8 * 1.2 * (0.07 + 0.63 * {load}) * 380",
                "market_co2e_g": "NULL",
                "embodied_co2e_g_low": "8 * 15",
                "embodied_co2e_g_central": "8 * 20",
                "embodied_co2e_g_high": "8 * 30",
                "embodied_unknown_gpu_h": "0",
                "prompt_tokens": f"(2 * 8 * 6000 * 3600 * {load})::bigint",
                "generation_tokens": f"(8 * 6000 * 3600 * {load})::bigint",
                "requests": requests,
                # The node's one endpoint served all of the line's output tokens (NodeHourLedger.sole_endpoint).
                "sole_endpoint_id": "e.id",
                "idle_gpu_h": "0",
                "idle_cost": "0",
                "idle_facility_kwh": "0",
                # The line's utilization is that of the GPU-hours it covers, as the ledger computes it.
                "util_pct_s": "COALESCE(g.util_pct_s, 0)",
                "util_observed_s": "COALESCE(g.util_observed_s, 0)",
                "energy_method": "'gpu_sum'",
                "energy_counter_j": f"8 * 3600 * (70 + 630 * {load})",
                "energy_integrated_j": "0",
                "electricity_status": "'priced'",
                "tariff_price_per_kwh": "0.25",
                "location_gco2e_per_kwh": "380",
                "location_source": "'annual:DE'",
                "location_is_fallback": "true",
                "amortization": "'time'",
                "computed_at": "now()",
            },
        )
    # Lines written by SQL: their site-hours (and served site-hours) summed as the ledger sums them when it
    # stores lines.
    site_hours_rebuild(organization_ids=sorted({node.fleet.organization_id for node in nodes}))


SEEDED_TABLES = (
    "accounting_nodehourledger", "accounting_ledgersitehour", "accounting_ledgerservedhour",
    "accounting_ledgerservingday", "accounting_ledgernodeday", "telemetry_gpuhourusage", "telemetry_endpointhourusage",
)  # fmt: skip


def _compact() -> None:
    """After a (re)seed: the tables as a steady system holds them, without the deleted rows' pages.

    A reseed deletes and reinserts every row; without this, a page's scan of the
    ledger reads two or three times the pages it would in production.
    """
    from django.db import connection

    with connection.cursor() as cursor:
        for table in SEEDED_TABLES:
            cursor.execute(f"VACUUM FULL {table}")


def _analyze() -> None:
    """Planner statistics and visibility as autovacuum keeps them in a running system (fresh rows have none)."""
    from django.db import connection

    with connection.cursor() as cursor:
        for table in SEEDED_TABLES:
            cursor.execute(f"VACUUM ANALYZE {table}")
        cursor.execute("ANALYZE")


# --- raw samples behind the last hours -------------------------------------------------------------


def raw_load(nodes: list[Any], end: datetime, hours: int, *, every_s: int) -> int:
    """Raw GPU samples for the last ``hours`` before ``end``, one every ``every_s`` seconds; return the rows."""
    from django.db import connection

    from telemetry.models import GpuEpoch
    from telemetry.partitions import partitions_ensure

    start = end - timedelta(hours=hours)
    partitions_ensure(days={start.date(), (end - timedelta(seconds=1)).date()})
    for node in nodes:
        for gpu in node.gpus.all():
            GpuEpoch.objects.get_or_create(gpu=gpu, epoch="boot/1")
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO telemetry_gpusample (node_id, ts, gpu_id, epoch_id, energy_j, mem_used_mib, power_w, "
            "util_pct, mem_util_pct, temp_c) "
            "SELECT g.node_id, %(start)s::timestamptz + make_interval(secs => s), g.id, e.id, 1e9 + 400 * s, 73728, "
            "400, 60, 40, 55 FROM generate_series(0, %(seconds)s - 1, %(every)s) s, fleets_gpu g "
            "JOIN telemetry_gpuepoch e ON e.gpu_id = g.id WHERE g.node_id = ANY(%(nodes)s) "
            "ON CONFLICT DO NOTHING",
            {"start": start, "seconds": hours * 3600, "every": every_s, "nodes": [n.pk for n in nodes]},
        )
        inserted = cursor.rowcount
    _settle()
    return inserted


def _settle() -> None:
    """Let the new rows' background work (hint bits, statistics, dirty pages) finish before timing."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE telemetry_gpusample")
        cursor.execute("CHECKPOINT")


def raw_clear(end: datetime, hours: int) -> None:
    from bench.common import raw_days_empty

    raw_days_empty({(end - timedelta(hours=hours)).date(), (end - timedelta(seconds=1)).date()})


# --- timing ----------------------------------------------------------------------------------------


def urls(node_id: int, start: datetime, end: datetime) -> tuple[list[tuple[str, str]], list[str]]:
    """The candidate URLs that resolve, and the names of those that do not (yet)."""
    from django.urls import Resolver404, resolve

    period = f"start={start:%Y-%m-%dT%H:%M:%SZ}&end={end:%Y-%m-%dT%H:%M:%SZ}"
    found, missing = [], []
    for name, path, query in (*DASHBOARDS, *REPORTS):
        path = path.format(node=node_id)
        try:
            resolve(path)
        except Resolver404:
            missing.append(f"{name} ({path})")
            continue
        found.append((name, f"{path}?{query.format(period=period)}"))
    return found, missing


def time_urls(client: Any, found: list[tuple[str, str]], requests: int, budget_s: float) -> dict[str, dict[str, Any]]:
    """Median and p95 of each URL: ``requests`` timed requests, fewer (but ``MIN_REQUESTS``) past ``budget_s``.

    The URLs take turns, one request each per round, so that a burst of other work
    on the machine slows every page a little rather than one page a lot.
    """
    results: dict[str, dict[str, Any]] = {}
    samples: dict[str, list[float]] = {}
    for name, url in found:
        response = client.get(url)  # warm-up (and the status check)
        if response.status_code != 200:
            results[name] = {"url": url, "status": response.status_code, "error": _body(response)[:300].decode()}
        else:
            samples[name] = []
    urls = dict(found)
    sizes: dict[str, int] = {}
    while active := [
        name
        for name, taken in samples.items()
        if len(taken) < requests and (len(taken) < MIN_REQUESTS or sum(taken) < budget_s * 1000)
    ]:
        for name in active:
            begun = time.perf_counter()
            response = client.get(urls[name])
            sizes[name] = len(_body(response))  # a streamed (CSV) answer is produced as it is read
            samples[name].append((time.perf_counter() - begun) * 1000)
    for name, taken in samples.items():
        results[name] = {
            "url": urls[name],
            "status": 200,
            "median_ms": round(median(taken), 1),
            "p95_ms": round(percentile(taken, 95), 1),
            "requests": len(taken),
            "bytes": sizes[name],
        }
    return {name: results[name] for name, _ in found}


def _body(response: Any) -> bytes:
    return b"".join(response.streaming_content) if response.streaming else response.content


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gpus", type=int, default=500)
    parser.add_argument("--days", type=int, default=90)
    parser.add_argument("--requests", type=int, default=20, help="timed requests per URL (after one warm-up)")
    parser.add_argument(
        "--budget-s", type=float, default=6.0, help=f"per URL: stop after this, {MIN_REQUESTS} at least"
    )
    parser.add_argument("--raw-hours", type=int, default=1, help="hours of raw samples behind the period's end")
    parser.add_argument("--reseed", action="store_true")
    parser.add_argument("--name", default="pages", help="result file name (bench.citus: pages_citus)")
    args = parser.parse_args(argv)
    django_setup()
    from django.test import Client

    from config.startup import web_worker_ready

    now = datetime.now(tz=UTC)
    end = now.replace(minute=0, second=0, microsecond=0) + timedelta(hours=1)
    start = end - timedelta(days=args.days)
    inv = inventory(args.gpus)
    nodes = inv["nodes"]
    if args.reseed or not ledger_seeded(nodes, start, end):
        print(f"seeding {args.days} days x {args.gpus} GPUs of hourly rows ...", flush=True)
        begun = time.perf_counter()
        # A day more on each side, so that the rows stay valid for reruns over the next day.
        midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
        seed(nodes, midnight - timedelta(days=args.days + 1), midnight + timedelta(days=2))
        _compact()
        print(f"  seeded in {time.perf_counter() - begun:.0f} s", flush=True)
    _analyze()
    found, missing = urls(nodes[0].pk, start, end)
    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(inv["user"])
    web_worker_ready()  # as a gunicorn worker starts (post_worker_init, config/gunicorn.conf.py)

    raw_clear(end, args.raw_hours)
    raw_rows = raw_load(nodes, end, args.raw_hours, every_s=10)
    background_settle()
    base = time_urls(client, found, args.requests, args.budget_s)
    raw_rows_10x = raw_rows + raw_load(nodes, end, args.raw_hours, every_s=1)
    background_settle()
    tenfold = time_urls(client, found, args.requests, args.budget_s)

    rows, metrics, targets = [], {"pages": {}}, {}
    for name, _ in found:
        first, second = base[name], tenfold[name]
        if "p95_ms" not in first:
            rows.append((name, f"HTTP {first['status']}", "", "", "", "", ""))
            metrics["pages"][name] = first
            continue
        growth = second["median_ms"] / first["median_ms"] - 1
        p95_growth = second["p95_ms"] / first["p95_ms"] - 1
        metrics["pages"][name] = {
            **first,
            "median_ms_raw_10x": second["median_ms"],
            "p95_ms_raw_10x": second["p95_ms"],
            "raw_10x_growth": round(growth, 3),
            "raw_10x_p95_growth": round(p95_growth, 3),
        }
        rows.append((
            name, first["median_ms"], first["p95_ms"], second["median_ms"], second["p95_ms"],
            f"{100 * growth:+.0f} %", f"{100 * p95_growth:+.0f} %",
        ))  # fmt: skip
        targets[f"p95_ms {name}"] = target(first["p95_ms"], TARGET_P95_MS)
        targets[f"median_ms {name}"] = target(first["median_ms"], TARGET_MEDIAN_MS)
        # Tiny pages vary by a few ms either way: growth is judged beyond 10 ms of noise.
        targets[f"raw_10x_growth {name}"] = target(
            round(growth, 3) if second["median_ms"] - first["median_ms"] > 10 else 0.0, TARGET_RAW_GROWTH
        )
    metrics["skipped"] = missing
    metrics["raw_rows"] = raw_rows
    metrics["raw_rows_10x"] = raw_rows_10x
    table_print(
        "bench-pages (90-day period)",
        rows,
        header=("page", "median ms", "p95 ms", "median, raw x10", "p95, raw x10", "growth", "p95 growth"),
    )
    if missing:
        print("  skipped (not in the URL conf yet): " + ", ".join(missing))
    targets_print(targets)
    run = {
        "gpus": args.gpus,
        "nodes": len(nodes),
        "days": args.days,
        "requests_per_url": args.requests,
        "budget_s_per_url": args.budget_s,
        "raw_hours": args.raw_hours,
        "raw_every_s": [10, 1],
        "client": "Django test client, in process",
        "user": "organization admin (session)",
    }
    print(f"\nwrote {results_write(args.name, metrics=metrics, targets=targets, run=run)}")


if __name__ == "__main__":
    main()
