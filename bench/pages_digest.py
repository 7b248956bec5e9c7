"""bench-pages' URLs answered once each: a digest of each body, its query count and SQL time, a profile.

Reads ``bench.pages``' data (seed it first; it neither seeds nor migrates). For
each URL of ``bench.pages`` (or those named with ``--only``): one warm-up, then
one request with its queries captured; prints the body's digest (HTML with its
CSRF tokens blanked), the number of queries, their time and the request's.
Equal digests from two versions of the code on the same database within the
same hour: equal answers.

    python -m bench.pages_digest [--only NAME ...] [--sql] [--profile NAME] [--dump DIR] [--bodies DIR]
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import pstats
import re
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bench.common import django_setup

CSRF = re.compile(rb'(name="csrfmiddlewaretoken" value=")[^"]*(")|("csrfToken": ")[^"]*(")')


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="*", default=None, help="names of bench.pages URLs")
    parser.add_argument("--sql", action="store_true", help="print each query's time and its start")
    parser.add_argument("--profile", default=None, help="cProfile one URL (by name)")
    parser.add_argument("--dump", default=None, help="write each query over 20 ms to this folder (for EXPLAIN)")
    parser.add_argument("--bodies", default=None, help="write each body (CSRF tokens blanked) to this folder (to diff)")
    parser.add_argument("--days", type=int, default=90)
    parser.add_argument("--gpus", type=int, default=500)
    args = parser.parse_args(argv)
    django_setup(migrate=False)
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from bench.pages import _body, inventory, urls

    now = datetime.now(tz=UTC)
    end = now.replace(minute=0, second=0, microsecond=0) + timedelta(hours=1)
    inv = inventory(args.gpus)
    found, _ = urls(inv["nodes"][0].pk, end - timedelta(days=args.days), end)
    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(inv["user"])
    for name, url in found:
        if args.only and name not in args.only:
            continue
        client.get(url)
        if args.profile == name:
            profiler = cProfile.Profile()
            profiler.enable()
        begun = time.perf_counter()
        with CaptureQueriesContext(connection) as captured:
            body = _body(client.get(url))
        took_ms = (time.perf_counter() - begun) * 1000
        if args.profile == name:
            profiler.disable()
            pstats.Stats(profiler).sort_stats("cumulative").print_stats(40)
            pstats.Stats(profiler).sort_stats("tottime").print_callers(8)
        body = CSRF.sub(rb"\1\2\3\4", body)
        if args.bodies:
            Path(args.bodies).mkdir(parents=True, exist_ok=True)
            (Path(args.bodies) / f"{_slug(name)}.body").write_bytes(body)
        sql_ms = sum(float(q["time"]) for q in captured.captured_queries) * 1000
        print(
            f"{hashlib.sha256(body).hexdigest()[:16]}  {len(captured):3d} q  sql {sql_ms:6.0f} ms  "
            f"req {took_ms:6.0f} ms  {name}",
            flush=True,
        )
        if args.dump:
            folder = Path(args.dump)
            folder.mkdir(parents=True, exist_ok=True)
            slug = _slug(name)
            for number, query in enumerate(captured.captured_queries):
                if float(query["time"]) >= 0.02:
                    (folder / f"{slug}.{number:02d}.sql").write_text(query["sql"] + "\n")
        if args.sql:
            for query in captured.captured_queries:
                print(f"    {float(query['time']) * 1000:7.1f} ms  {query['sql'][:300]}")


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower())


if __name__ == "__main__":
    main()
