"""The site-hours carry the planner's ``ndistinct`` statistics on the columns and day/month buckets the reports
group them by (migration accounting.0034), written as Django writes the buckets, so that PostgreSQL matches them."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from common.periods import HOUR, Granularity
from reports.selectors import ledger_parts
from reports.selectors.sustainability import REPORT_ANNOTATIONS, REPORT_KEYS
from tests.helpers.factories import OrganizationFactory

pytestmark = [
    pytest.mark.skipif(connection.vendor != "postgresql", reason="planner statistics are PostgreSQL's"),
    pytest.mark.django_db,
]


def statistics() -> dict[str, tuple[list[str], list[str]]]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT stxname, stxkind::text[], pg_get_statisticsobjdef_expressions(oid) FROM pg_statistic_ext "
            "WHERE stxrelid = 'accounting_ledgersitehour'::regclass"
        )
        return {name: (kinds, expressions) for name, kinds, expressions in cursor.fetchall()}


@pytest.mark.parametrize("granularity", ["day", "month"])
def test_the_bucket_the_reports_group_site_hours_by_has_ndistinct_statistics(granularity: str) -> None:
    organization = OrganizationFactory()
    start = datetime(2026, 11, 1, tzinfo=UTC)
    with CaptureQueriesContext(connection) as queries:
        ledger_parts(
            organization_ids=[organization.pk], start=start, end=start + 48 * HOUR, keys=REPORT_KEYS,
            granularity=Granularity(granularity), money=False, annotations=REPORT_ANNOTATIONS,
            site_hour_annotations=True,
        )  # fmt: skip
    grouped = [query["sql"] for query in queries if '"accounting_ledgersitehour"' in query["sql"]]
    assert grouped, "the parts were not read from the site-hours"
    # then: the bucket Django writes is the expression the statistics hold
    assert f"DATE_TRUNC('{granularity}', \"accounting_ledgersitehour\".\"hour_start\" AT TIME ZONE 'UTC')" in grouped[0]
    kinds, expressions = statistics()[f"site_hour_groups_{granularity}"]
    assert "d" in kinds  # ndistinct (and "e": the expressions' own, which PostgreSQL adds)
    assert expressions[0] == f"date_trunc('{granularity}'::text, (hour_start AT TIME ZONE 'UTC'::text))"
    assert "(location_co2e_g IS NULL)" in expressions
