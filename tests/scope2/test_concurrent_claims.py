"""Two claims on one certificate at the same instant: the organization's row lock lets one through (PostgreSQL)."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from decimal import Decimal

import pytest
from django.db import connection, connections

from fleets.models import Organization, Site
from scope2.claims import OverAllocationError
from scope2.models import ContractualInstrument
from scope2.services import instrument_create

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="row locks: PostgreSQL only"),
]


def claim(organization: Organization, site: Site, name: str) -> dict[str, object]:
    return {
        "site": site, "kind": "go", "name": name, "volume_mwh": Decimal(60), "certificate_ref": "GO-7",
        "certificate_mwh": Decimal(100), "delivery_start": datetime(2025, 1, 1, tzinfo=UTC),
        "delivery_end": datetime(2026, 1, 1, tzinfo=UTC), "vintage_year": 2025, "generation_zone": "NO",
        "technology": "hydro", "evidence_reference": "registry statement",
    }  # fmt: skip


def test_concurrent_claims_on_one_certificate_cannot_both_pass(org_a: Organization, site_a: Site) -> None:
    barrier, outcomes = threading.Barrier(2), []

    def register(name: str) -> None:
        try:
            barrier.wait(timeout=10)
            instrument_create(organization=org_a, data=claim(org_a, site_a, name))
            outcomes.append("created")
        except OverAllocationError:
            outcomes.append("refused")
        finally:
            connections.close_all()

    threads = [threading.Thread(target=register, args=(name,)) for name in ("first", "second")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    assert sorted(outcomes) == ["created", "refused"]
    assert ContractualInstrument.objects.count() == 1
