"""bench-curves: the measured load curves (``reports.curves.load_curves``) on bench-pages' data.

Times, in process, ``load_curves`` for the bench organization over the
``--days`` ending at the hour after its last ledger line (90 days x 500 GPUs
after ``bench.pages``; run it once first: this reads, never seeds nor
migrates). Median of ``--repeats`` runs after one warm-up. Prints the row
counts read, the curves and bands found and a digest of ``load_curve_rows``
(equal digests: equal results, to compare two versions). ``--profile`` prints
cProfile's top functions for one run.

    BENCH_DATABASE_URL=postgres://.../wattledger_bench python -m bench.curves [--repeats 5] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import json
import pstats
import time
from datetime import timedelta

from bench.common import django_setup, median, results_write, table_print, target

TARGET_S = 1.0


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--days", type=int, default=90)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--organization", default="Bench Pages", help="name of the organization to read")
    parser.add_argument("--profile", action="store_true", help="print cProfile's top functions for one run")
    args = parser.parse_args(argv)
    django_setup(migrate=False)
    from django.db.models import Max

    from accounting.models import NodeHourLedger
    from fleets.models import Organization
    from reports.curves import load_curve_rows, load_curves
    from telemetry.models import EndpointHourUsage

    organization = Organization.objects.get(name=args.organization)
    last = NodeHourLedger.objects.filter(organization=organization).aggregate(last=Max("hour_start"))
    if last["last"] is None:
        raise SystemExit(f"no ledger lines for {args.organization!r}: run `python -m bench.pages` first")
    end = last["last"] + timedelta(hours=1)
    start = end - timedelta(days=args.days)
    lines = NodeHourLedger.objects.filter(organization=organization, hour_start__gte=start, hour_start__lt=end).count()
    endpoint_hours = EndpointHourUsage.objects.filter(
        endpoint__node__fleet__organization=organization, hour_start__gte=start, hour_start__lt=end
    ).count()

    def run() -> list:
        return load_curves(organization_ids=[organization.id], start=start, end=end)

    if args.profile:
        run()
        profiler = cProfile.Profile()
        profiler.enable()
        run()
        profiler.disable()
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(40)
        return
    curves = run()  # warm-up
    taken = []
    for _ in range(args.repeats):
        begun = time.perf_counter()
        curves = run()
        taken.append(time.perf_counter() - begun)
    rows = load_curve_rows(curves)
    digest = hashlib.sha256(json.dumps(rows, default=str, sort_keys=True).encode()).hexdigest()[:16]
    median_s = round(median(taken), 3)
    table_print(
        "load_curves",
        [
            ("period", f"{start:%Y-%m-%d %H:%M} .. {end:%Y-%m-%d %H:%M} UTC"),
            ("ledger lines / endpoint-hours read", f"{lines} / {endpoint_hours}"),
            ("curves / bands", f"{len(curves)} / {len(rows)}"),
            ("median s", median_s),
            ("min s", round(min(taken), 3)),
            ("rows digest", digest),
        ],
        header=("", "value"),
    )
    results_write(
        "curves",
        metrics={"median_s": median_s, "min_s": round(min(taken), 3), "curves": len(curves), "bands": len(rows),
                 "ledger_lines": lines, "endpoint_hours": endpoint_hours, "rows_digest": digest},
        targets={"load_curves_s": target(median_s, TARGET_S)},
        run={"days": args.days, "repeats": args.repeats, "start": start.isoformat(), "end": end.isoformat()},
    )  # fmt: skip


if __name__ == "__main__":
    main()
