"""Fixtures for the telemetry tests: a node and its token, and a gunicorn on the test database."""

from collections.abc import Iterator
from typing import Any

import pytest

from fleets.services import credential_issue
from tests.helpers.clients import free_port, gunicorn_started
from tests.helpers.factories import NodeFactory


@pytest.fixture
def node(db):
    return NodeFactory(hostname="gpu-01")


@pytest.fixture
def token(node):
    return credential_issue(node=node)


@pytest.fixture(scope="session")
def gunicorn_port(django_db_setup: Any, django_db_blocker: Any) -> Iterator[int]:
    """One gunicorn for the session (``tests.helpers.clients``), stopped before the test database goes."""
    port = free_port()
    server = gunicorn_started(port)
    yield port
    server.terminate()
    server.wait(timeout=30)
