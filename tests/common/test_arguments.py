"""The management commands' argument types refuse, naming the argument, what would otherwise be a traceback:
an id past a bigint, an instant outside 1970-3000 (or one that overflows when converted to UTC), nan or inf."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from accounting.models import LedgerSiteHour
from common.arguments import aware_instant, positive_id, positive_number
from common.scope import ID_MAX
from fleets.models import Organization
from telemetry.models import PrometheusSource
from tests.helpers.factories import NodeFactory


@pytest.mark.parametrize("text", ["0", "-1", "+1", "1.0", "x", "", "²", "١٢", str(ID_MAX + 1), "9" * 5000])
def test_an_id_outside_1_to_a_bigint_is_refused(text):
    with pytest.raises(argparse.ArgumentTypeError, match="is not an id"):
        positive_id(text)


def test_an_id_up_to_a_bigint_is_read():
    assert (positive_id("1"), positive_id(str(ID_MAX))) == (1, ID_MAX)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("0001-01-01T00:00:00+14:00", "must lie between 1970-01-01 and 3000-01-01"),
        ("9999-12-31T23:59:59-14:00", "must lie between 1970-01-01 and 3000-01-01"),
        ("9999-12-31T23:00:00Z", "must lie between 1970-01-01 and 3000-01-01"),
        ("1969-12-31T23:59:59Z", "must lie between 1970-01-01 and 3000-01-01"),
        ("2026-01-01T00:00:00", "has no UTC offset"),
        ("2026-13-01T00:00:00Z", "is not an ISO 8601 datetime"),
    ],
)
def test_an_instant_without_offset_or_outside_the_range_is_refused(text, problem):
    with pytest.raises(argparse.ArgumentTypeError, match=problem):
        aware_instant(text)


def test_an_instant_is_read_in_utc():
    assert aware_instant("2026-01-01T02:30:00+02:00") == datetime(2026, 1, 1, 0, 30, tzinfo=UTC)


@pytest.mark.parametrize("text", ["nan", "inf", "-inf", "0", "-1", "1e400", "x"])
def test_a_number_that_is_not_finite_and_positive_is_refused(text):
    with pytest.raises(argparse.ArgumentTypeError):
        positive_number(text)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["ledger_site_hours", "--organization", "99999999999999999999"], "--organization"),
        (["ledger_site_hours", "--check", "--organization", "0"], "--organization"),
        (["seed_demo", "--no-backfill", "--end", "0001-01-01T00:00:00+14:00"], "--end"),
        (["seed_demo", "--no-backfill", "--end", "9999-12-31T23:59:59-14:00"], "--end"),
        (["seed_demo", "--no-backfill", "--hours", "nan"], "--hours"),
        (["seed_demo", "--no-backfill", "--hours", "inf"], "--hours"),
        (["seed_demo", "--no-backfill", "--sample-interval", "nan"], "--sample-interval"),
        (["seed_demo", "--no-backfill", "--sample-interval", "-1"], "--sample-interval"),
        (["seed_demo", "--no-backfill", "--close-hours", "99999999999999999999"], "--close-hours"),
        (["seed_demo", "--no-backfill", "--close-hours", "-1"], "--close-hours"),
        (["seed_demo", "--no-backfill", "--days", "nan"], "--days"),
        (["seed_demo", "--no-backfill", "--first-days", "inf"], "--first-days"),
    ],
)
def test_a_command_refuses_the_argument_by_name_and_writes_nothing(args, named):
    with pytest.raises(CommandError, match=named):
        call_command(*args, stdout=StringIO(), stderr=StringIO())

    assert not Organization.objects.exists()
    assert not LedgerSiteHour.objects.exists()


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        (["--start", "1e19", "--end", "1e20"], "'1e19'"),
        (["--start", "1e400", "--end", "2"], "'1e400'"),
        (["--start", "nan", "--end", "2"], "'nan'"),
        (["--start", "0001-01-01T00:00:00+14:00", "--end", "1700003600"], "must lie between"),
        (["--start", "1700000000", "--end", "1700003600", "--page-hours", "nan"], "--page-hours"),
        (["--start", "1700000000", "--end", "1700003600", "--page-hours", "inf"], "--page-hours"),
        (["--start", "1700000000", "--end", "1700003600", "--step", "nan"], "--step"),
        (["--start", "1700000000", "--end", "1700003600", "--step", "1e-9"], "--step"),
        (["--start", "1700000000", "--end", "1700003600", "--tries", "0"], "--tries"),
        (["--start", "1700000000", "--end", "1700003600", "--backoff", "inf"], "--backoff"),
    ],
)
def test_prometheus_import_refuses_wrong_arguments_by_name_and_fetches_nothing(db, extra, named):
    node = NodeFactory(hostname="h")
    source = PrometheusSource.objects.create(
        organization=node.fleet.organization,
        name="main",
        url="http://prometheus.example.com:9090",
        scrape_interval_s=15,
    )
    with pytest.raises(CommandError, match=named.replace("(", r"\(")):
        call_command("prometheus_import", "--source", "main", "--timeout", "0.2", *extra, stdout=StringIO())
    source.refresh_from_db()
    assert source.last_error == ""


@pytest.mark.parametrize("timeout", ["nan", "inf", "0", "-1"])
def test_otlp_push_refuses_a_timeout_that_is_no_number_of_seconds(db, timeout):
    with pytest.raises(CommandError, match="--timeout"):
        call_command("otlp_push", "--organization", "x", "--endpoint", "http://127.0.0.1:4318", "--timeout", timeout)
