"""Malformed bodies get a 400 that names the problem, never a 500: deep JSON, a body cut short of its Content-Length."""

from __future__ import annotations

import pytest

from fleets.models import Role
from fleets.services import node_token_rotate
from tests.helpers.factories import NodeFactory

DEEP = "[" * 50_000 + "]" * 50_000
JUST_TOO_DEEP = '{"a": ' * 40 + "1" + "}" * 40


@pytest.mark.parametrize(
    "path",
    ["/api/v1/node-prices/", "/api/v1/site-tariffs/", "/api/v1/workload-classes/", "/api/v1/scenarios/",
     "/api/v1/instruments/", "/api/v1/locked-periods/", "/api/v1/site-market-factors/"],
)  # fmt: skip
@pytest.mark.parametrize("body", [DEEP, JUST_TOO_DEEP], ids=["recursion", "past-the-limit"])
def test_a_deeply_nested_json_body_is_a_400_that_says_so(client_as, org_a, path, body):
    admin = client_as(Role.ADMIN)
    answer = admin.post(path, body, content_type="application/json")

    assert answer.status_code == 400
    assert "nested deeper than 32 levels" in answer.json()["detail"]


def test_a_deeply_nested_batch_is_a_400_that_says_so(client, db):
    token = node_token_rotate(node=NodeFactory()).token
    answer = client.post("/api/v1/ingest/", DEEP, content_type="application/json",
                         HTTP_AUTHORIZATION=f"Bearer {token}")  # fmt: skip

    assert answer.status_code == 400
    assert answer.json()["error"].startswith("body is not valid JSON: depth limit exceeded")
