"""A database busy with other writes (SQLite's "database is locked" past its busy timeout) is back-pressure:
ingest answers 503 with Retry-After, logged in one line without a traceback, and nothing is stored."""

from __future__ import annotations

import logging

import pytest
from django.db import OperationalError

from telemetry.models import GpuSample
from tests.helpers.batches import make_batch
from tests.helpers.ingest import post

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("message", ["database is locked", "database is busy"])
def test_a_busy_database_answers_503_with_retry_after_and_one_log_line(client, token, monkeypatch, caplog, message):
    def busy(**_: object) -> None:
        raise OperationalError(message)

    monkeypatch.setattr("telemetry.api.batch_ingest", busy)

    with caplog.at_level(logging.INFO):
        response = post(client, make_batch(), token)

    assert response.status_code == 503 and response["Retry-After"] == "5"
    assert "the database (busy with other writes) is unavailable" in response.json()["detail"]
    logged = [record for record in caplog.records if record.levelno >= logging.WARNING]
    assert [record.name for record in logged] == ["config.middleware"]  # not django.request's "Service Unavailable"
    assert logged[0].exc_info is None and message in logged[0].getMessage()
    assert not GpuSample.objects.exists()


def test_a_500_is_still_logged_by_django(client, token, monkeypatch, caplog):
    def broken(**_: object) -> None:
        raise ZeroDivisionError

    monkeypatch.setattr("telemetry.api.batch_ingest", broken)
    client.raise_request_exception = False

    with caplog.at_level(logging.INFO):
        response = post(client, make_batch(), token)

    assert response.status_code == 500
    assert [record.name for record in caplog.records if record.levelno >= logging.ERROR] == ["django.request"]
