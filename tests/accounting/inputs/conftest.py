"""The input tests' fixtures: ``tests.helpers.input_fixtures``."""

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
