from __future__ import annotations

import socket
from datetime import UTC, datetime

import pytest

from grid import ProviderUnavailable
from grid.transport import JsonClient, error_text, retry_after_seconds, validate_base_url
from tests.helpers.grid_provider import FakeProvider, Reply


def test_retry_after_accepts_seconds_and_http_dates() -> None:
    now = datetime(2024, 5, 1, 12, tzinfo=UTC)
    assert retry_after_seconds("120") == 120.0
    assert retry_after_seconds("Wed, 01 May 2024 12:01:30 GMT", now=now) == 90.0
    assert retry_after_seconds("Wed, 01 May 2024 11:00:00 GMT", now=now) == 0.0
    assert retry_after_seconds(None) is None
    assert retry_after_seconds("soon") is None


def test_error_text_finds_each_providers_message() -> None:
    assert error_text(b'{"status": "error", "message": "Invalid auth-token"}') == "Invalid auth-token"
    assert error_text(b'{"error": {"code": "400 Bad Request", "message": "bad date"}}') == "bad date"
    assert error_text(b'{"error": "Unauthorized"}') == "Unauthorized"
    assert error_text(b"<html>502</html>") == "<html>502</html>"
    assert error_text(b"") == "(empty body)"


def test_base_url_must_be_http() -> None:
    assert validate_base_url("https://api.watttime.org/") == "https://api.watttime.org"
    # A query string or fragment, even empty: the path appended to the base would be read as part of it.
    for bad in (
        "file:///etc/passwd",
        "api.watttime.org",
        "ftp://host",
        "https://host/#",
        "https://host/?",
        "https://h?a=1",
    ):
        with pytest.raises(ValueError):
            validate_base_url(bad)


def test_refused_connection_is_provider_unavailable() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(ProviderUnavailable, match="electricitymaps"):
        JsonClient("electricitymaps", f"http://127.0.0.1:{port}").get_json("/v3/zones")


def test_slow_answer_times_out_as_provider_unavailable(fake: FakeProvider) -> None:
    fake.on("/slow", Reply(body={}, delay_s=0.3))
    with pytest.raises(ProviderUnavailable, match="timed out"):
        JsonClient("watttime", fake.base_url, timeout_s=0.05).get_json("/slow")


def test_numbers_are_parsed_as_decimals(fake: FakeProvider) -> None:
    fake.on("/n", Reply(body='{"a": 0.1, "b": 3}'))
    body = JsonClient("x", fake.base_url).get_json("/n")
    assert str(body["a"]) == "0.1" and body["b"] == 3
