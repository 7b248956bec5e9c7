"""bench-llm-model: the comparison and the usage report per LLM model against per fleet, on bench-pages' data.

Times, in process (Django test client, the bench organization's admin, the
90-day period ending at the next whole hour), the comparison endpoint by fleet,
GPU model and LLM model, and the usage report (total) by fleet and LLM model on
the data ``bench.pages`` seeded (run it once first; this reads, never seeds nor
migrates). Median of ``--requests`` requests each (after one warm-up), URLs
taking turns. ``--profile NAME`` prints cProfile's top functions for one URL.

    BENCH_DATABASE_URL=postgres://.../wattledger_bench python -m bench.llm_model [--requests 7] [--profile NAME]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time
from datetime import UTC, datetime, timedelta

from bench.common import django_setup, median, results_write, table_print

URLS = (
    ("comparison by fleet", "/api/v1/reports/comparison/", "by=fleet"),
    ("comparison by gpu_model", "/api/v1/reports/comparison/", "by=gpu_model"),
    ("comparison by llm_model", "/api/v1/reports/comparison/", "by=llm_model"),
    ("usage by fleet, total", "/api/v1/reports/usage/", "group_by=fleet&granularity=total"),
    ("usage by llm_model, total", "/api/v1/reports/usage/", "group_by=llm_model&granularity=total"),
)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--days", type=int, default=90)
    parser.add_argument("--requests", type=int, default=7)
    parser.add_argument("--profile", help="name of one URL to profile (cProfile, cumulative)")
    args = parser.parse_args(argv)
    django_setup(migrate=False)
    from django.contrib.auth import get_user_model
    from django.test import Client

    end = datetime.now(tz=UTC).replace(minute=0, second=0, microsecond=0) + timedelta(hours=1)
    start = end - timedelta(days=args.days)
    period = f"start={start:%Y-%m-%dT%H:%M:%SZ}&end={end:%Y-%m-%dT%H:%M:%SZ}"
    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(get_user_model().objects.get(username="bench-pages"))
    urls = {name: f"{path}?{period}&{query}" for name, path, query in URLS}
    if args.profile:
        client.get(urls[args.profile])
        profiler = cProfile.Profile()
        profiler.enable()
        response = client.get(urls[args.profile])
        profiler.disable()
        print(response.status_code)
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(40)
        return
    taken: dict[str, list[float]] = {name: [] for name in urls}
    for url in urls.values():
        response = client.get(url)
        assert response.status_code == 200, (url, response.status_code, response.content[:300])
    for _ in range(args.requests):
        for name, url in urls.items():
            begun = time.perf_counter()
            client.get(url)
            taken[name].append((time.perf_counter() - begun) * 1000)
    medians = {name: round(median(samples), 1) for name, samples in taken.items()}
    rows = [(name, medians[name], round(min(taken[name]), 1)) for name in urls]
    table_print("per LLM model against per fleet", rows, header=("URL", "median ms", "min ms"))
    results_write("llm_model", metrics=medians, targets={}, run={"days": args.days, "requests": args.requests})


if __name__ == "__main__":
    main()
