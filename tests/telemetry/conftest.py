"""Fixtures for the telemetry tests: a node and its token."""

import pytest

from fleets.services import credential_issue
from tests.factories import NodeFactory


@pytest.fixture
def node(db):
    return NodeFactory(hostname="gpu-01")


@pytest.fixture
def token(node):
    return credential_issue(node=node)
