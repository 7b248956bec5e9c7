"""Every input endpoint is in the OpenAPI schema, with its writes and the personal-token scheme."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from rest_framework.test import APIClient

from fleets.models import Role

pytestmark = pytest.mark.django_db

WRITES = {
    "/api/v1/node-prices/": "post",
    "/api/v1/node-prices/{price_id}/": "patch",
    "/api/v1/node-prices/upload/": "post",
    "/api/v1/site-tariffs/": "post",
    "/api/v1/site-tariffs/{tariff_id}/": "patch",
    "/api/v1/sites/{site_id}/pue/": "put",
    "/api/v1/site-pue-periods/": "post",
    "/api/v1/site-market-factors/": "post",
    "/api/v1/residual-mixes/upload/": "post",
    "/api/v1/gpu-assets/": "post",
    "/api/v1/gpu-assets/{asset_id}/": "patch",
    "/api/v1/instruments/": "post",
    "/api/v1/instruments/upload/": "post",
    "/api/v1/grid/intensity.csv": "post",
    "/api/v1/node-enrollments/": "post",
    "/api/v1/node-tokens/": "post",
    "/api/v1/locked-periods/": "post",
}


def test_every_input_write_is_documented_with_the_personal_token(client_as: Callable[..., APIClient]) -> None:
    paths = client_as(Role.VIEWER).get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()["paths"]
    missing = {path for path in WRITES if path not in paths}
    assert not missing, sorted(paths)
    for path, method in WRITES.items():
        operation = paths[path][method]
        assert {"personalToken": []} in operation["security"], path
        assert "403" in operation["responses"], path
