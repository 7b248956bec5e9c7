"""Every benchmark once at a tiny size: that it runs end to end and writes its result file.

No timing target is judged here (the sizes are far too small to mean anything);
what breaks is a benchmark that no longer runs — a changed model, a new
setting, a timeout — which a full ``make bench`` would find only when someone
next runs it. CI calls ``make bench-smoke``.

Each benchmark runs in its own process against its own database
(``BENCH_DATABASE_URL``, default ``wattledger_bench_smoke``, rebuilt by the
benchmarks' own ``--reseed``/``--reload``) and writes to ``var/bench-smoke/``,
never over ``bench/results/`` or the real bench database.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from bench.common import ROOT

SMOKE_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/wattledger_bench_smoke"
SMOKE_DIR = ROOT / "var" / "bench-smoke"


@dataclass(frozen=True)
class Run:
    module: str  # bench.<module>, and the name of the result file it writes
    args: tuple[str, ...]


# In `make bench`'s order (curves and llm_model read the pages' data, so they come after it).
RUNS = (
    Run("ingest", ("--nodes", "2", "--gpus", "1", "--batch-seconds", "10", "--rows-per-phase", "200",
                   "--repeats", "1", "--workers", "1", "--concurrency", "1", "--no-reference")),
    Run("rollup", ("--gpus", "2", "--hours", "1", "--repeats", "1", "--reload", "--python-node-hours", "1",
                   "--workers", "1")),
    Run("pages", ("--gpus", "8", "--days", "2", "--requests", "1", "--reseed")),
    Run("curves", ("--days", "2", "--repeats", "1")),
    Run("llm_model", ("--days", "2", "--requests", "1")),
    Run("collector", ("--duration", "5", "--gpus", "1")),
    Run("storage", ("--nodes", "1", "--gpus", "1", "--hours", "0.05")),
    Run("scenarios", ("--gpus", "16", "--days", "2", "--repeats", "1", "--reseed")),
    Run("uploads", ("--rows", "20", "--nodes", "2", "--repeats", "1")),
    Run("ledger", ("--gpus", "24", "--hours", "2", "--repeats", "1")),
)  # fmt: skip


def run_one(run: Run, env: dict[str, str], results: Path, log_dir: Path) -> str | None:
    """Run one benchmark; ``None`` when it exited 0 and wrote a readable result file, else why not."""
    result = results / f"{run.module}.json"
    result.unlink(missing_ok=True)
    log = log_dir / f"{run.module}.log"
    with log.open("w") as out:
        done = subprocess.run(
            [sys.executable, "-m", f"bench.{run.module}", *run.args],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, check=False,
        )  # fmt: skip
    if done.returncode != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-15:])
        return f"exited {done.returncode}; the end of {log}:\n{tail}"
    try:
        json.loads(result.read_text())
    except (OSError, ValueError) as exc:
        return f"exited 0 but wrote no readable {result}: {exc}"
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", help="comma-separated benchmarks to run (default: every one)")
    args = parser.parse_args(argv)
    chosen = [run for run in RUNS if not args.only or run.module in args.only.split(",")]
    results, logs = SMOKE_DIR / "results", SMOKE_DIR / "logs"
    results.mkdir(parents=True, exist_ok=True)
    logs.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "BENCH_DATABASE_URL": os.environ.get("BENCH_SMOKE_DATABASE_URL") or SMOKE_DATABASE_URL,
        "BENCH_RESULTS_DIR": str(results),
    }
    failed = []
    for run in chosen:
        started = time.monotonic()
        problem = run_one(run, env, results, logs)
        status = "ok" if problem is None else "FAILED"
        print(f"bench.{run.module:<10} {status} in {time.monotonic() - started:5.1f} s", flush=True)
        if problem is not None:
            print(problem, flush=True)
            failed.append(run.module)
    print(f"{len(chosen) - len(failed)} of {len(chosen)} benchmarks ran; results in {results}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
