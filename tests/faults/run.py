"""Run a fault scenario end to end and judge it: ``python -m tests.faults.run [short|soak] [--keep] [--citus]``.

With ``--citus`` the database is a Citus cluster (a coordinator and two workers) and a worker is
killed with ``kill -9`` among the faults (``make test-faults-citus``, ``make soak SOAK_CITUS=1``);
the oracle then also finds no prepared transaction left on a worker after Citus's recovery.

``make soak`` runs the long scenario (``SOAK_HOURS`` simulated hours, 12 by
default, at 72 simulated seconds per real second: 10 minutes, every fault three
times, PostgreSQL frozen 30 s each time) and prints the tally; the exit
status is 0 only when the oracle found nothing wrong. The pytest module
``tests/faults/test_faults.py`` runs the short one.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import oracle
from .harness import CITUS_FAULTS, DB_NAME, FAULTS, NODES, SHORT, SOAK, Harness, Scenario, clean, run_in_thread
from .procs import CitusCluster, missing_tools


@dataclass
class Report:
    scenario: Scenario
    root: Path
    problems: list[str] = field(default_factory=list)
    faults: dict[str, int] = field(default_factory=dict)
    events: list[Any] = field(default_factory=list)
    figures: dict[str, Any] = field(default_factory=dict)
    kept: bool = False
    citus: bool = False

    def text(self) -> str:
        on = "a Citus cluster (a coordinator, two workers)" if self.citus else "one PostgreSQL"
        lines = [f"fault harness, {self.scenario.name} run: {self.scenario.hours} simulated hours x {len(NODES)} nodes"
                 f" on {on}"]  # fmt: skip
        lines += [f"  {e.at_s:7.1f} s  {e.fault:32} {e.detail}" for e in self.events]
        lines.append("faults injected:")
        lines += [f"  {name:32} {self.faults.get(name, 0)}" for name in (CITUS_FAULTS if self.citus else FAULTS)]
        lines.append("  counter resets and inference-server restarts: in every simulated collector (every 30 / 45 min)")
        lines.append("figures:")
        lines += [f"  {name:32} {value}" for name, value in self.figures.items()]
        lines.append("oracle: " + ("every check passed" if not self.problems else f"{len(self.problems)} problem(s):"))
        lines += [f"  - {p}" for p in self.problems]
        lines.append(f"logs and records kept in {self.root}" if self.kept else "the run's folder was removed")
        return "\n".join(lines)


def run_scenario(scenario: Scenario, workdir: Path | None = None, *, keep: bool = False, citus: bool = False) -> Report:
    harness = Harness(scenario, workdir, citus=citus)
    report = Report(scenario, harness.root, citus=citus)
    try:
        harness.start()
        faults = run_in_thread(harness.run_faults)
        faults.join(timeout=scenario.run_s + scenario.settle_s)
        exits = harness.wait_collectors()
        settled = harness.settle()
        for process in (harness.beat, harness.worker, harness.web):
            process.stop()
        report.faults, report.events = dict(harness.tally.faults), harness.tally.events
        report.problems += [f"collector {name} exited {code}" for name, code in exits.items() if code != 0]
        report.problems += [f"still pending after the settle: {settled}"] if any(settled.values()) else []
        _judge(harness, report)
    except Exception as exc:  # noqa: BLE001 - whatever broke is reported, with the logs kept
        report.problems.append(f"the harness failed: {type(exc).__name__}: {exc}")
        keep = True
    finally:
        report.kept = keep or bool(report.problems)
        clean(harness, keep=report.kept)
    return report


def _judge(harness: Harness, report: Report) -> None:
    window = {"start": harness.window_start.timestamp(), "end": harness.window_end.timestamp()}
    live = harness.django("dump", window)
    recomputed = harness.django("recompute", window)
    records = [oracle.load_recorded(harness.root / "collectors" / name, name) for name, _ in NODES]
    totals: dict[str, int] = {}
    for recorded in records:
        for name, value in oracle.check_raw(recorded, live, report.problems).items():
            totals[name] = totals.get(name, 0) + value
        totals["hours_compared"] = totals.get("hours_compared", 0) + oracle.check_hours(recorded, live, report.problems)
        totals["batches_produced"] = totals.get("batches_produced", 0) + len(recorded.batches)
    totals |= oracle.check_recomputed(live, recomputed, report.problems)
    totals |= oracle.check_resent(records, harness.proxy.tally.lost_batch_ids, report.problems)
    if totals["refused_4xx"]:
        report.problems.append(f"{totals['refused_4xx']} batch(es) refused with a 4xx")
    totals["proxy_connections"] = harness.proxy.tally.connections
    if isinstance(harness.pg, CitusCluster):  # after Citus's recovery, no worker holds a prepared transaction
        left = harness.pg.prepared_transactions(DB_NAME)
        totals["prepared_transactions_left"] = sum(left.values())
        if any(left.values()):
            report.problems.append(f"prepared transactions left on the workers after recovery: {left}")
    report.figures = totals


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.faults.run")
    parser.add_argument("scenario", choices=["short", "soak"], nargs="?", default="soak")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder (logs, records, database)")
    parser.add_argument("--citus", action="store_true", help="on a Citus cluster, a worker killed among the faults")
    args = parser.parse_args(argv)
    if (why := missing_tools(citus=args.citus)) is not None:
        print(f"cannot run the fault harness: {why}", file=sys.stderr)
        return 2
    started = time.monotonic()
    report = run_scenario(SHORT if args.scenario == "short" else SOAK, keep=args.keep, citus=args.citus)
    print(report.text())
    print(f"took {time.monotonic() - started:.0f} s")
    return 1 if report.problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
