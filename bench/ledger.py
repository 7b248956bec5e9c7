"""bench-ledger: what the ledger's site-hours add to storing node-hour lines.

Seeds an organization of its own (``--gpus`` GPUs, 8 a node, alternating between an H100 and an RTX 4090
fleet over three sites, as ``bench.pages`` lays them out) with ``--hours`` hours of hourly GPU usage by
SQL (``bench.pages.seed``), then computes every node's lines of those hours through the ledger
(``ledger_node_hours_compute``, one call per node, as a claim of the ledger's queue computes a node's
hours), ``--repeats`` times each with the site-hours kept (``accounting.site_hours``, with the served
site-hours, and the serving days of ``accounting.serving_days``) and with them all left out, alternating.
Reports the wall time per node-hour both ways (the median of the repeats) and the share they add; checks
after the last run that they agree with the lines and hours. No target: the figure says what a store costs
more, which grows with the nodes a site holds (a site-hour is summed again from all of its lines).

    python -m bench.ledger [--gpus 240] [--hours 24] [--repeats 3]
"""

from __future__ import annotations

import argparse
import contextlib
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from bench.common import bench_nodes, django_setup, median, results_write, table_print

ORG = "Bench Ledger"


def compute_all(nodes: list[Any], hours: list[datetime], *, site_hours: bool) -> float:
    """Every node's lines of ``hours`` computed and stored, each node in its own transaction; seconds taken."""
    from unittest import mock

    from django.db import transaction

    import accounting.node_days
    import accounting.serving_days
    import accounting.site_hours
    from accounting.node_hour_lines import ledger_node_hours_compute

    summaries = (
        (accounting.site_hours, "site_hours_in_use"),
        (accounting.serving_days, "serving_days_in_use"),
        (accounting.node_days, "node_days_in_use"),
    )
    with contextlib.ExitStack() as patches:
        for module, name in summaries:
            in_use = getattr(module, name)
            patches.enter_context(mock.patch.object(module, name, in_use if site_hours else lambda *_: False))
        begun = time.perf_counter()
        for node in nodes:
            with transaction.atomic():
                ledger_node_hours_compute(node_id=node.pk, hour_starts=hours, now=hours[-1] + timedelta(days=1))
        return time.perf_counter() - begun


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gpus", type=int, default=240)
    parser.add_argument("--hours", type=int, default=24)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    django_setup()
    from accounting.site_hours import site_hours_check, site_hours_rebuild
    from bench.pages import seed

    end = datetime.now(tz=UTC).replace(hour=0, minute=0, second=0, microsecond=0) - timedelta(days=1)
    start = end - timedelta(hours=args.hours)
    hours = [start + timedelta(hours=i) for i in range(args.hours)]
    nodes = bench_nodes(organization_name=ORG, prefix="ledger", gpus=args.gpus)
    organization_id = nodes[0].fleet.organization_id
    print(f"seeding {args.hours} hours x {args.gpus} GPUs ({len(nodes)} nodes over 3 sites) ...", flush=True)
    seed(nodes, start, end)
    compute_all(nodes, hours, site_hours=True)  # warm-up: the lines as the ledger computes them
    taken: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(args.repeats):
        for kept in (False, True):
            taken[kept].append(compute_all(nodes, hours, site_hours=kept))
    site_hours_rebuild(organization_ids=[organization_id])  # after the runs without them
    compute_all(nodes, hours, site_hours=True)
    problems = site_hours_check(organization_ids=[organization_id])

    node_hours = len(nodes) * args.hours
    without, with_ = (median(taken[k]) * 1000 / node_hours for k in (False, True))
    added = with_ / without - 1
    table_print(
        f"bench-ledger ({len(nodes)} nodes, {len(nodes) // 3} or so a site, {args.hours} hours a node per call)",
        [
            ("ms per node-hour, site-hours left out", round(without, 3)),
            ("ms per node-hour, site-hours kept", round(with_, 3)),
            ("added by the site-hours", f"{added:+.0%}"),
            ("site-hours against the lines", "agree" if not problems else f"{len(problems)} differ"),
        ],
    )
    results_write(
        "ledger",
        metrics={
            "node_hours": node_hours,
            "ms_per_node_hour_without_site_hours": round(without, 3),
            "ms_per_node_hour_with_site_hours": round(with_, 3),
            "site_hours_added": round(added, 3),
            "runs_s": {"without": taken[False], "with": taken[True]},
            "site_hours_problems": problems[:10],
        },
        targets={},
        run={"gpus": args.gpus, "hours": args.hours, "repeats": args.repeats, "nodes": len(nodes)},
    )
    if problems:
        raise SystemExit(f"the site-hours differ from the lines: {problems[:3]}")


if __name__ == "__main__":
    main()
