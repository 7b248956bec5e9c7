"""Governance's tests change inputs through the ledger's API: the same fixtures as the input tests."""

from tests.helpers.input_fixtures import (  # noqa: F401  (fixtures)
    admin_a,
    finance,
    fleet_a,
    gpu_a,
    node_a,
    node_b,
    node_other,
    org_a,
    org_b,
    site_a,
    staff,
)
