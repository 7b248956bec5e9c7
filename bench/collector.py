"""bench-collector: CPU and memory of the collector at 8 GPUs x 1 Hz, and spool bytes per GPU-hour.

The real collector (``python -m telemetry.collector``) runs live, in real time,
with the simulated GPU backend (``--simulate h100-sxm:8``) and scrapes one
inference server's ``/metrics`` every 5 s: a stub vLLM exposition served by
another process, whose counters grow with time. Batches go to a stub ingest
server (another process) that answers 200 and counts the bytes. The
collector's own CPU (user + system, from /proc) is read after a warm-up and
at the end; RSS is sampled every second.

"NVML call cost excluded": the simulated backend's own ``read()`` stands in
for NVML; its cost is measured apart (same calls, in this process) and
subtracted to give the collector's overhead alone. Both figures are reported.

Spool size per GPU-hour: what the batches weigh compressed (the bytes the
server received) and on disk (each batch a file, in 4 KiB blocks).

    python -m bench.collector [--duration 300] [--gpus 8]
"""

from __future__ import annotations

import argparse
import http.server
import json
import math
import multiprocessing
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.common import (
    ROOT,
    free_port,
    proc_cpu_s,
    proc_mem_kib,
    results_write,
    table_print,
    target,
    targets_print,
)

TARGET_CPU_PCT = 1.0
TARGET_RSS_MIB = 64
WARMUP_S = 15.0
DISK_BLOCK = 4096


# --- the stub servers (each in its own process, so their CPU is not the collector's) -----------


def _ingest_server(port: int, stats_path: str) -> None:
    totals = {"batches": 0, "bytes": 0, "disk_bytes": 0}
    lock = threading.Lock()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            with lock:
                totals["batches"] += 1
                totals["bytes"] += len(body)
                totals["disk_bytes"] += math.ceil(len(body) / DISK_BLOCK) * DISK_BLOCK
                Path(stats_path).write_text(json.dumps(totals))
            answer = b'{"batch_id":"x","stored":{},"duplicates":{},"rejected":[]}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args: Any) -> None:
            pass

    http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


def _metrics_server(port: int) -> None:
    """A vLLM ``/metrics`` page whose counters grow at ~6k generated tokens/s, with vLLM's TTFT buckets."""
    from telemetry.collector.simserving import SIM_MODEL, VLLM_TTFT_BUCKETS_S

    started = time.time()

    def page() -> bytes:
        elapsed = time.time() - started
        generated = int(6000 * elapsed)
        requests = generated // 256
        labels = f'engine="0",model_name="{SIM_MODEL}"'
        lines = [
            "# TYPE process_start_time_seconds gauge",
            f"process_start_time_seconds {started}",
            "# TYPE vllm:prompt_tokens_total counter",
            f"vllm:prompt_tokens_total{{{labels}}} {2.0 * generated}",
            "# TYPE vllm:generation_tokens_total counter",
            f"vllm:generation_tokens_total{{{labels}}} {float(generated)}",
            "# TYPE vllm:request_success_total counter",
            f'vllm:request_success_total{{engine="0",finished_reason="stop",model_name="{SIM_MODEL}"}} {requests}.0',
            "# TYPE vllm:time_to_first_token_seconds histogram",
        ]
        for i, bound in enumerate(VLLM_TTFT_BUCKETS_S):
            share = min(1.0, (i + 1) / (len(VLLM_TTFT_BUCKETS_S) * 0.6))
            lines.append(
                f'vllm:time_to_first_token_seconds_bucket{{{labels},le="{bound}"}} {float(int(requests * share))}'
            )
        lines += [
            f'vllm:time_to_first_token_seconds_bucket{{{labels},le="+Inf"}} {float(requests)}',
            f"vllm:time_to_first_token_seconds_count{{{labels}}} {float(requests)}",
            f"vllm:time_to_first_token_seconds_sum{{{labels}}} {0.05 * requests}",
        ]
        return ("\n".join(lines) + "\n").encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = page()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


# --- the simulated backend's own cost -------------------------------------------------------------


def backend_read_cost_s(gpus: int, reads: int = 2000) -> float:
    """CPU seconds of one ``SimulatedBackend.read()`` of ``gpus`` GPUs: the stand-in for NVML's calls."""
    from telemetry.collector.simulated import SimulatedBackend, parse_simulate_spec

    backend = SimulatedBackend(parse_simulate_spec(f"h100-sxm:{gpus}"), hostname="bench")
    start_ts = time.time()
    begun = time.process_time()
    for i in range(reads):
        backend.read(start_ts + i)
    return (time.process_time() - begun) / reads


# --- the run ----------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=float, default=300.0, help="seconds measured after the warm-up")
    parser.add_argument("--gpus", type=int, default=8)
    args = parser.parse_args(argv)

    ctx = multiprocessing.get_context("spawn")
    ingest_port, metrics_port = free_port(), free_port()
    with tempfile.TemporaryDirectory(prefix="wattledger-bench-") as tmp:
        stats_path = os.path.join(tmp, "ingest-stats.json")
        servers = [
            ctx.Process(target=_ingest_server, args=(ingest_port, stats_path), daemon=True),
            ctx.Process(target=_metrics_server, args=(metrics_port,), daemon=True),
        ]
        for server in servers:
            server.start()
        time.sleep(1.0)
        command = [
            sys.executable,
            "-m",
            "telemetry.collector",
            "--server",
            f"http://127.0.0.1:{ingest_port}",
            "--token",
            "wln_bench",
            "--hostname",
            "bench-collector",
            "--simulate",
            f"h100-sxm:{args.gpus}",
            "--serving",
            f"http://127.0.0.1:{metrics_port}/metrics",
            "--spool",
            os.path.join(tmp, "spool"),
            "--log-level",
            "warning",
        ]
        collector = subprocess.Popen(command, cwd=ROOT)
        try:
            figures = _measure(collector.pid, args.duration, stats_path)
        finally:
            collector.terminate()
            collector.wait(timeout=30)
            for server in servers:
                server.terminate()

    read_s = backend_read_cost_s(args.gpus)
    cpu_pct = 100 * figures["cpu_s"] / figures["wall_s"]
    backend_pct = 100 * read_s  # one read per second
    gpu_hours = args.gpus * figures["stats_wall_s"] / 3600
    stats = figures["stats"]
    metrics = {
        "measured_s": round(figures["wall_s"], 1),
        "cpu_pct_of_one_core": round(cpu_pct, 3),
        "simulated_backend_cpu_pct": round(backend_pct, 3),
        "cpu_pct_excluding_backend": round(cpu_pct - backend_pct, 3),
        "rss_mib_median": round(figures["rss_median_kib"] / 1024, 1),
        "rss_mib_peak": round(figures["hwm_kib"] / 1024, 1),
        "batches_sent": stats.get("batches", 0),
        "bytes_per_batch": round(stats.get("bytes", 0) / max(1, stats.get("batches", 0))),
        "spool_kib_per_gpu_hour_compressed": round(stats.get("bytes", 0) / 1024 / gpu_hours, 1),
        "spool_kib_per_gpu_hour_on_disk": round(stats.get("disk_bytes", 0) / 1024 / gpu_hours, 1),
    }
    targets = {
        "cpu_pct_excluding_backend": target(metrics["cpu_pct_excluding_backend"], TARGET_CPU_PCT),
        "rss_mib_peak": target(metrics["rss_mib_peak"], TARGET_RSS_MIB),
    }
    table_print("bench-collector", list(metrics.items()))
    targets_print(targets)
    run = {
        "gpus": args.gpus,
        "sample_interval_s": 1,
        "batch_seconds": 10,
        "serving_interval_s": 5,
        "duration_s": args.duration,
        "warmup_s": WARMUP_S,
        "backend": f"simulated h100-sxm:{args.gpus}",
        "serving": "one vLLM /metrics page over HTTP (stub process)",
    }
    print(f"\nwrote {results_write('collector', metrics=metrics, targets=targets, run=run)}")


def _measure(pid: int, duration_s: float, stats_path: str) -> dict[str, Any]:
    time.sleep(WARMUP_S)  # imports, the simulator's tables, the first batch
    cpu0, wall0 = proc_cpu_s(pid), time.monotonic()
    stats0 = _stats(stats_path)
    rss: list[int] = []
    while time.monotonic() - wall0 < duration_s:
        time.sleep(1.0)
        rss.append(proc_mem_kib(pid)["VmRSS"])
        if int(time.monotonic() - wall0) % 60 == 0:
            print(f"  {time.monotonic() - wall0:5.0f} s: RSS {rss[-1] / 1024:.1f} MiB", flush=True)
    cpu1, wall1 = proc_cpu_s(pid), time.monotonic()
    hwm = proc_mem_kib(pid)["VmHWM"]
    time.sleep(1.0)
    stats1 = _stats(stats_path)
    stats = {key: stats1.get(key, 0) - stats0.get(key, 0) for key in ("batches", "bytes", "disk_bytes")}
    return {
        "cpu_s": cpu1 - cpu0,
        "wall_s": wall1 - wall0,
        "stats_wall_s": wall1 - wall0,
        "stats": stats,
        "rss_median_kib": sorted(rss)[len(rss) // 2],
        "hwm_kib": hwm,
    }


def _stats(path: str) -> dict[str, int]:
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return {}


if __name__ == "__main__":
    main()
