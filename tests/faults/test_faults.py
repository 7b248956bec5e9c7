"""The short fault run: every fault at least once, and the oracle finds nothing lost, doubled or miscounted.

Needs PostgreSQL's server binaries and ``redis-server`` on this machine (the
harness starts its own cluster and server); skipped with the reason otherwise.
``make soak`` runs the long version. With ``WATTLEDGER_FAULTS_CITUS=1``
(``make test-faults-citus``) the database is a Citus cluster of a coordinator
and two workers, a worker is killed with ``kill -9`` among the faults, and no
prepared transaction may be left on a worker; it needs the ``citus`` extension.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from .harness import CITUS_FAULTS, FAULTS, NODES, PRICE_ROWS, SHORT
from .procs import missing_tools
from .run import run_scenario

CITUS = os.environ.get("WATTLEDGER_FAULTS_CITUS") == "1"
MISSING = missing_tools(citus=CITUS)
# CI sets WATTLEDGER_FAULTS_REQUIRED=1: there, missing tools fail the run instead of skipping it.
REQUIRED = os.environ.get("WATTLEDGER_FAULTS_REQUIRED") == "1"
pytestmark = [
    pytest.mark.faults,
    pytest.mark.skipif(MISSING is not None and not REQUIRED, reason=f"fault harness not runnable here: {MISSING}"),
]


def test_a_short_run_through_every_fault_loses_nothing_and_stores_nothing_twice(tmp_path: Path) -> None:
    assert MISSING is None, f"the fault harness cannot run: {MISSING}"
    report = run_scenario(SHORT, tmp_path / "run", citus=CITUS)
    print(report.text())

    assert report.problems == [], report.text()
    assert all(report.faults.get(fault, 0) >= 1 for fault in (CITUS_FAULTS if CITUS else FAULTS)), report.faults
    if CITUS:  # a worker killed mid-ingest, and after Citus's recovery no prepared transaction left on a worker
        (killed,) = [e for e in report.events if e.fault == "citus_worker_kill"][:1]
        assert killed.detail.startswith("kill -9 Citus worker :"), killed.detail
        assert report.figures["prepared_transactions_left"] == 0
    assert any("inside a rollup transaction" in e.detail for e in report.events), "the worker was not caught mid-rollup"
    # a frozen database holding every other request thread still leaves /healthz its 503, within 2 s
    (busy,) = [e for e in report.events if e.fault == "postgres_freeze_every_thread_busy"][:1]
    status, seconds = busy.detail.split("/healthz answered ")[1].split(" in ")
    assert status == "503" and float(seconds.split()[0]) < 2.0, busy.detail
    # On Citus, what a cluster has been seen to miss (docs/scaling.md, Citus) is gathered and the test reported
    # as an expected failure once every other check passed: the harness's lock on the node-price table (a
    # reference table, locked on every node) has made Citus cancel the upload as a distributed deadlock, so it
    # was not caught running; on one busy 2-core machine the proxy's lost answers and the impossible counter's
    # GPU were also missed once each. The run of 2026-12-02 missed none of them.
    citus_gaps: list[str] = []
    # a worker killed mid-run: once the lease lapsed the run reads failed with the reason, and is taken again at once
    for fault, caught, again in (
        ("celery_worker_kill_mid_scenario", "running, its replay waiting on the ledger table", "the re-run"),
        ("celery_worker_kill_mid_upload", "running, its first row waiting on the node-price table",
         "the same file sent again"),
    ):  # fmt: skip
        (killed,) = [e for e in report.events if e.fault == fault][:1]
        lapsed = re.search(
            rf"after the lease it read (\w+) \((.*)\); {again} answered (\d+) and ended (\w+)", killed.detail
        )
        assert lapsed is not None, killed.detail
        if CITUS and (caught not in killed.detail or lapsed[4] != "done"):
            citus_gaps.append(killed.detail)  # a gap of the Citus layout, reported once the rest is checked
            continue
        assert caught in killed.detail, killed.detail
        assert lapsed[1] == "failed" and lapsed[2].startswith("the worker stopped: no progress since"), killed.detail
        assert (lapsed[3], lapsed[4]) == ("202", "done"), killed.detail
    (upload,) = [e for e in report.events if e.fault == "celery_worker_kill_mid_upload"][:1]
    assert f"(201: {{'saved': {PRICE_ROWS}," in upload.detail, upload.detail  # the killed run had saved none
    # a batch whose energy counter rises past what any board can draw: refused, nothing of it stored
    (impossible,) = [e for e in report.events if e.fault == "ingest_impossible_counter"][:1]
    if CITUS and impossible.detail.endswith("nothing sent"):  # the node's first batch not stored yet (a slow start)
        citus_gaps.append(impossible.detail)
    else:
        assert re.search(r"answered 422 \(.*energy_j", impossible.detail), impossible.detail
        assert impossible.detail.endswith("rows stored at those instants: 0"), impossible.detail
    figures = report.figures
    # 3 nodes x 2 GPUs x 2 hours at 1 Hz, and one serving sample every 5 s per node, all stored once
    expected_gpu_rows = len(NODES) * 2 * SHORT.hours * 3600
    if not figures["batches_lost_unspooled"]:
        assert figures["gpu_rows"] == expected_gpu_rows
        assert figures["serving_rows"] == len(NODES) * SHORT.hours * 720
    # every batch whose answer was lost (once or more) was sent again, seen and dropped as duplicates
    if CITUS and not figures["answers_lost_by_proxy"]:
        citus_gaps.append("the proxy lost no answer")
    else:
        assert 1 <= figures["answers_lost_by_proxy"] <= 3 * report.faults["proxy_lose_response"]
    assert figures["resent_seen_as_duplicates"] >= figures["batches_whose_answer_was_lost"]
    assert figures["failed_retried"] > 0 and figures["refused_4xx"] == 0
    assert figures["ledger"] == len(NODES) * SHORT.hours
    if citus_gaps:
        pytest.xfail("on Citus (docs/scaling.md, Citus, what is left): " + " | ".join(citus_gaps))
