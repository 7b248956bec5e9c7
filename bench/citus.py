"""bench-citus: ingest CPU charged per server, and bytes per sample in columnar, on a Citus cluster.

Run by ``bin/bench-citus`` (``make bench-citus``), which starts a throwaway cluster (a
coordinator and two workers) and one plain PostgreSQL server with the same settings on
127.0.0.1, and hands their addresses and data folders over in the environment
(``BENCH_CITUS_URL``, ``BENCH_SINGLE_URL``, ``BENCH_CITUS_SERVERS``, ``BENCH_SINGLE_SERVER``);
point those at servers of your own to measure them instead (the data folders must be on this
machine: each server's CPU is read from /proc).

1. ``bench.ingest`` against the plain server, then against the coordinator, the same sizes:
   database CPU per 1,000 samples is each server's whole process tree (postmaster and children,
   ``bench.common.server_tree_cpu_s``) over each phase, at 80 and 480 rows per request;
2. ``bench.rollup --server-cpu`` against the plain server, then the coordinator, the same day
   (``--rollup-gpus``, ``--rollup-hours``; the load is not charged): database CPU s per GPU-day of a
   rollup of every node-hour (each server's tree; coordinator + workers summed), ``--rollup-repeats`` times
   in one process, the run of median CPU counted (the first, cold one, given apart), the ratio (target
   ≤ 1.25), the coordinator's share, and whether the hourly GPU usage rows are bit-equal (a digest);
3. ``bench.storage --columnar`` on the coordinator: bytes per raw sample in heap, then in
   columnar with the primary key and without it;
4. ``bench.pages`` against the plain server, then the coordinator, the same seed (``--pages-gpus``,
   ``--pages-days``: 500 GPUs, 90 days by default; each seeds its own database: about 8 minutes on the
   plain server, under one on the coordinator, which builds none of the ledger's summaries):
   each page's median and p95 on both; the cluster's target is the single server's, p95 under 500 ms.

Then the comparison: cluster CPU ÷ single-node CPU, the coordinator's share, each worker's
share of rows and of worker CPU, and the projection. **Projection**: on one machine the three
servers share the cores, so capacity is not timed but derived from CPU per sample: a worker
with ``C`` cores, kept at half load, holds ``C x 0.5 / (worker CPU s per sample)`` samples a
second; a 1 Hz GPU is one sample a second, a 10 s one a tenth (the raw tables' figures only;
the web tier and the rollup are sized apart, docs/scaling.md).

    python -m bench.citus [--skip ingest,rollup,storage,pages] [--rollup-gpus 24] [--rollup-hours 12]
        [--nodes 50] [--gpus 8] [--rows-per-phase 24000] [--repeats 1] [--hours 0.5]
        [--pages-gpus 500] [--pages-days 90] [--pages-requests 20]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.common import RESULTS_DIR, ROOT, results_write, table_print, target, targets_print

TARGET_CPU_RATIO = 1.5
TARGET_ROLLUP_CPU_RATIO = 1.25
TARGET_COORDINATOR_SHARE = 0.30
TARGET_WORKER_SHARE = (0.40, 0.60)
WORKER_CORES = 16  # the projection's worker (any size: the figure is per core times this)
HEADROOM = 0.5  # a worker planned at half load: rollup, ledger, pages, catching up after outages


def _run(module: str, url: str, args: list[str]) -> dict[str, Any]:
    env = {**os.environ, "BENCH_DATABASE_URL": url}
    print(f"\n$ BENCH_DATABASE_URL={url} python -m bench.{module} {' '.join(args)}", flush=True)
    subprocess.run([sys.executable, "-m", f"bench.{module}", *args], cwd=ROOT, env=env, check=True)
    name = args[args.index("--name") + 1] if "--name" in args else module
    if module == "storage":
        name = "storage_columnar"
    return json.loads(Path(RESULTS_DIR, f"{name}.json").read_text())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=50)
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--rows-per-phase", type=int, default=24_000)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--workers", type=int, default=3, help="gunicorn workers")
    parser.add_argument("--hours", type=float, default=0.5, help="bench.storage's hours of samples")
    parser.add_argument("--storage-nodes", type=int, default=50)
    parser.add_argument("--rollup-gpus", type=int, default=24, help="bench.rollup's GPUs (8 a node)")
    parser.add_argument("--rollup-hours", type=int, default=12, help="bench.rollup's hours of 1 Hz samples")
    parser.add_argument(
        "--rollup-repeats", type=int, default=3, help="rollups of the day on each (the run of median CPU counts)"
    )
    parser.add_argument("--pages-gpus", type=int, default=500, help="bench.pages' GPUs")
    parser.add_argument("--pages-days", type=int, default=90, help="bench.pages' days of hourly rows")
    parser.add_argument("--pages-requests", type=int, default=20, help="bench.pages' timed requests per URL")
    parser.add_argument("--skip", default="", help="comma-separated: ingest, rollup, storage, pages, pages_single")
    args = parser.parse_args(argv)
    try:
        citus_url, single_url = os.environ["BENCH_CITUS_URL"], os.environ["BENCH_SINGLE_URL"]
        citus_servers, single_server = os.environ["BENCH_CITUS_SERVERS"], os.environ["BENCH_SINGLE_SERVER"]
    except KeyError as missing:
        raise SystemExit(f"bench.citus runs under bin/bench-citus (make bench-citus): {missing} is not set") from None
    skip = set(args.skip.split(","))
    metrics: dict[str, Any] = {"load_average_at_start": [round(x, 2) for x in os.getloadavg()]}
    targets: dict[str, Any] = {}
    rows: list[tuple[Any, ...]] = []

    if "ingest" not in skip:
        common = ["--nodes", str(args.nodes), "--gpus", str(args.gpus), "--rows-per-phase", str(args.rows_per_phase),
                  "--repeats", str(args.repeats), "--workers", str(args.workers), "--no-reference"]  # fmt: skip
        single = _run("ingest", single_url, [*common, "--servers", single_server, "--name", "ingest_single"])
        cluster = _run("ingest", citus_url, [*common, "--servers", citus_servers, "--name", "ingest_citus"])
        metrics.update(_ingest_compare(single["metrics"], cluster["metrics"], targets, rows))
    if "rollup" not in skip:
        common = ["--gpus", str(args.rollup_gpus), "--hours", str(args.rollup_hours), "--reload",
                  "--repeats", str(args.rollup_repeats)]  # fmt: skip
        single = _run("rollup", single_url, [*common, "--server-cpu", single_server, "--name", "rollup_single"])
        cluster = _run("rollup", citus_url, [*common, "--server-cpu", citus_servers, "--name", "rollup_citus"])
        metrics["rollup"] = _rollup_compare(single["metrics"], cluster["metrics"], targets, rows)
    if "storage" not in skip:
        storage = _run("storage", citus_url, ["--nodes", str(args.storage_nodes), "--gpus", str(args.gpus),
                                              "--hours", str(args.hours), "--columnar"])  # fmt: skip
        s = storage["metrics"]
        metrics["storage"] = {
            k: v for k, v in s.items() if "bytes_per_sample" in k or k in ("rows", "columnar_convert_s")
        }
        for key, limit in (("columnar_bytes_per_sample_with_pkey", 40), ("columnar_bytes_per_sample_without_pkey", 12)):
            targets[key] = target(s[key], limit)
        rows += [
            ("bytes/sample heap (cluster)", s["bytes_per_sample_total"]),
            ("bytes/sample columnar, with primary key", s["columnar_bytes_per_sample_with_pkey"]),
            ("bytes/sample columnar, without primary key", s["columnar_bytes_per_sample_without_pkey"]),
        ]

    if "pages" not in skip:
        common = ["--gpus", str(args.pages_gpus), "--days", str(args.pages_days),
                  "--requests", str(args.pages_requests)]  # fmt: skip
        # --skip pages_single: the coordinator alone (the single node's figures from make bench-pages instead)
        single = (
            {"metrics": {"pages": {}}}
            if "pages_single" in skip
            else _run("pages", single_url, [*common, "--name", "pages_single"])
        )
        cluster = _run("pages", citus_url, [*common, "--name", "pages_citus"])
        metrics["pages"] = _pages_compare(single["metrics"]["pages"], cluster["metrics"]["pages"], targets, rows)

    metrics["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    table_print("bench-citus", rows)
    targets_print(targets)
    run = {"nodes": args.nodes, "gpus_per_node": args.gpus, "rows_per_phase": args.rows_per_phase,
           "repeats": args.repeats, "gunicorn_workers": args.workers, "storage_hours": args.hours,
           "rollup_gpus": args.rollup_gpus, "rollup_hours": args.rollup_hours,
           "pages_gpus": args.pages_gpus, "pages_days": args.pages_days, "pages_requests": args.pages_requests,
           "projection": f"worker of {WORKER_CORES} cores at {HEADROOM:.0%} load / worker CPU s per sample",
           "cluster": "coordinator + 2 workers + 1 plain server, loopback, one machine (bin/bench-citus)"}  # fmt: skip
    print(f"\nwrote {results_write('citus', metrics=metrics, targets=targets, run=run)}")


def _ingest_compare(
    single: dict[str, Any], cluster: dict[str, Any], targets: dict[str, Any], rows: list[tuple[Any, ...]]
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in [k for k in cluster if k.endswith("_rows") and isinstance(cluster[k], dict)]:
        c, s = cluster[key], single[key]
        per_server = {k[len("server_") : -len("_cpu_ms_per_1k")]: v for k, v in c.items() if k.startswith("server_")}
        total = sum(per_server.values())
        workers = {name: v for name, v in per_server.items() if name != "coordinator"}
        worker_total = sum(workers.values())
        single_ms = s["db_cpu_ms_per_1k"]
        # Samples a second one worker holds: its cores at the headroom over the workers' CPU per sample
        # (the workers share the rows evenly, so each worker's own CPU per sample it holds is the total's).
        worker_s_per_sample = worker_total / 1e6
        per_worker_samples_s = WORKER_CORES * HEADROOM / worker_s_per_sample if worker_s_per_sample else None
        out[key] = {
            "single_db_cpu_ms_per_1k": round(single_ms, 2),
            "cluster_db_cpu_ms_per_1k": round(total, 2),
            "per_server_cpu_ms_per_1k": {k: round(v, 2) for k, v in per_server.items()},
            "cpu_ratio_to_single": round(total / single_ms, 2) if single_ms else None,
            "coordinator_share": round(per_server.get("coordinator", 0) / total, 3) if total else None,
            "worker_cpu_share": {k: round(v / worker_total, 3) for k, v in workers.items()} if worker_total else {},
            "web_cpu_ms_per_1k": {
                "single": round(s["web_cpu_ms_per_1k"], 1),
                "cluster": round(c["web_cpu_ms_per_1k"], 1),
            },
            "gpus_per_worker_1hz": round(per_worker_samples_s) if per_worker_samples_s else None,
            "gpus_per_worker_10s": round(per_worker_samples_s * 10) if per_worker_samples_s else None,
            "coordinator_cores_per_100k_gpus_1hz": round(
                per_server.get("coordinator", 0) / 1e6 * 100_000 / HEADROOM, 1
            ),
        }
        o = out[key]
        targets[f"cpu_ratio_{key}"] = target(o["cpu_ratio_to_single"], TARGET_CPU_RATIO)
        targets[f"coordinator_share_{key}"] = target(o["coordinator_share"], TARGET_COORDINATOR_SHARE)
        for name, share in o["worker_cpu_share"].items():
            targets[f"worker_cpu_share_{name}_{key}"] = _share_target(share)
        rows += [(f"{key}: db CPU ms/1k single", o["single_db_cpu_ms_per_1k"]),
                 (f"{key}: db CPU ms/1k cluster", o["cluster_db_cpu_ms_per_1k"]),
                 (f"{key}: per server", o["per_server_cpu_ms_per_1k"]),
                 (f"{key}: ratio to single", o["cpu_ratio_to_single"]),
                 (f"{key}: coordinator share", o["coordinator_share"]),
                 (f"{key}: GPUs per {WORKER_CORES}-core worker, 1 Hz / 10 s",
                  f"{o['gpus_per_worker_1hz']:,} / {o['gpus_per_worker_10s']:,}")]  # fmt: skip
    per_worker = cluster.get("rows_per_worker", {})
    if per_worker:
        total_rows = sum(per_worker.values())
        shares = {w: round(n / total_rows, 3) for w, n in per_worker.items()}
        out["rows_per_worker"] = per_worker
        out["rows_share_per_worker"] = shares
        for worker, share in shares.items():
            targets[f"rows_share_{worker}"] = _share_target(share)
        rows.append(("rows share per worker", shares))
    return out


def _pages_compare(
    single: dict[str, Any], cluster: dict[str, Any], targets: dict[str, Any], rows: list[tuple[Any, ...]]
) -> dict[str, Any]:
    """Each page's median and p95 on the plain server and on the coordinator, the same seed (``bench.pages``);
    the cluster's target is the single server's: p95 under ``bench.pages.TARGET_P95_MS``."""
    from bench.pages import TARGET_P95_MS

    out: dict[str, Any] = {}
    for name, c in cluster.items():
        s = single.get(name, {})
        if "p95_ms" not in c:
            out[name] = {"cluster_status": c.get("status"), "cluster_error": c.get("error")}
            targets[f"pages_p95_ms {name}"] = {"value": f"HTTP {c.get('status')}", "target": "200", "met": False}
            continue
        out[name] = {
            "single_median_ms": s.get("median_ms"),
            "single_p95_ms": s.get("p95_ms"),
            "cluster_median_ms": c["median_ms"],
            "cluster_p95_ms": c["p95_ms"],
        }
        targets[f"pages_p95_ms {name}"] = target(c["p95_ms"], TARGET_P95_MS)
        rows.append((f"page {name}: median (p95) ms, single / cluster",
                     f"{s.get('median_ms')} ({s.get('p95_ms')}) / {c['median_ms']} ({c['p95_ms']})"))  # fmt: skip
    return out


def _ratio(value: float | None, reference: float | None) -> float | None:
    return round(value / reference, 2) if value and reference else None


def _rollup_compare(
    single: dict[str, Any], cluster: dict[str, Any], targets: dict[str, Any], rows: list[tuple[Any, ...]]
) -> dict[str, Any]:
    """The rollup of the same day on both: CPU s per GPU-day (every server's tree, summed), the ratio, the
    coordinator's share, and whether the hourly rows are the same (their digests, every value as text)."""
    single_s, cluster_s = single["db_cpu_s_per_gpu_day"], cluster["db_cpu_s_per_gpu_day"]
    per_server = cluster["server_cpu_s"]
    total = sum(per_server.values())
    out = {
        "single_db_cpu_s_per_gpu_day": single_s,
        "cluster_db_cpu_s_per_gpu_day": cluster_s,
        "single_db_cpu_us_per_sample": single["db_cpu_us_per_sample"],
        "cluster_db_cpu_us_per_sample": cluster["db_cpu_us_per_sample"],
        "per_server_cpu_s": per_server,
        "cpu_ratio_to_single": round(cluster_s / single_s, 2) if single_s else None,
        "coordinator_share": round(per_server.get("coordinator", 0) / total, 3) if total else None,
        "rollup_s": {"single": single["rollup_s"], "cluster": cluster["rollup_s"]},
        "runs_db_cpu_s": {"single": single.get("runs_db_cpu_s"), "cluster": cluster.get("runs_db_cpu_s")},
        "first_run_cpu_ratio_to_single": _ratio(
            cluster.get("first_run_db_cpu_s_per_gpu_day"), single.get("first_run_db_cpu_s_per_gpu_day")
        ),
        "gpu_hour_rows": {"single": single["gpu_hour_rows_written"], "cluster": cluster["gpu_hour_rows_written"]},
        "results_bit_equal": single["usage_digest_md5"] == cluster["usage_digest_md5"]
        and single["gpu_hour_rows_written"] == cluster["gpu_hour_rows_written"],
    }
    targets["rollup_cpu_ratio"] = target(out["cpu_ratio_to_single"], TARGET_ROLLUP_CPU_RATIO)
    targets["rollup_results_bit_equal"] = {"value": out["results_bit_equal"], "target": "equal",
                                           "met": out["results_bit_equal"]}  # fmt: skip
    rows += [("rollup: db CPU s per GPU-day single", single_s),
             ("rollup: db CPU s per GPU-day cluster", cluster_s),
             ("rollup: per server (s)", per_server),
             ("rollup: ratio to single", out["cpu_ratio_to_single"]),
             ("rollup: the first run's ratio (cold)", out["first_run_cpu_ratio_to_single"]),
             ("rollup: db CPU s of each run, single / cluster",
              f"{out['runs_db_cpu_s']['single']} / {out['runs_db_cpu_s']['cluster']}"),
             ("rollup: coordinator share", out["coordinator_share"]),
             ("rollup: hourly rows bit-equal", "yes" if out["results_bit_equal"] else "NO")]  # fmt: skip
    return out


def _share_target(share: float) -> dict[str, Any]:
    low, high = TARGET_WORKER_SHARE
    return {"value": share, "target": f"{low:g}-{high:g}", "met": low <= share <= high}


if __name__ == "__main__":
    main()
