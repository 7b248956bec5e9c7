"""The collector tests' ``stub_server``: a real HTTP server on 127.0.0.1 (tests.helpers.stub_server)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.helpers.stub_server import StubServer


@pytest.fixture
def stub_server() -> Iterator[StubServer]:
    server = StubServer().start()
    yield server
    server.stop()
