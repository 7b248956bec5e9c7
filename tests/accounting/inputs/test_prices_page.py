"""The node prices page: finance changes a rent through the form; a viewer reads; another organization gets 404."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client, TestCase

from accounting.models import InputUpload, NodePrice
from accounting.node_hour_lines import ledger_node_hours_compute
from fleets.models import Node, Role
from governance.models import AuditEntry, LockedPeriod
from tests.helpers.factories import MembershipFactory
from tests.helpers.inputs import HOURS, JAN_1, JAN_2, hardware_cost, ledger_recompute

pytestmark = pytest.mark.django_db


def browser(organization, role: str) -> Client:
    client = Client()
    client.force_login(MembershipFactory(organization=organization, role=role).user)
    return client


@pytest.fixture
def rented(node_a: Node) -> NodePrice:
    """h100-a at 2.00 per GPU-hour from Jan 1; its 48 lines recomputed: 48 h x 2 GPUs x 2.00 = 192.00."""
    price = NodePrice.objects.create(fleet=node_a.fleet, node=node_a, kind="rented", rate_per_h=2, valid_from=JAN_1)
    ledger_node_hours_compute(node_id=node_a.pk, hour_starts=HOURS)
    assert hardware_cost(node_a) == Decimal("192.00")
    return price


def form(node: Node, rate: str = "3.00") -> dict[str, str]:
    return {"node": str(node.pk), "rate_per_h": rate, "rate_per": "gpu", "valid_from": JAN_2.date().isoformat()}


@pytest.mark.parametrize("role", [Role.ADMIN, Role.FINANCE])
def test_a_rent_change_ends_the_old_rent_and_reopens_the_days_hours(org_a, node_a: Node, rented, role: str) -> None:
    page = browser(org_a, role).post("/finance/prices/", form(node_a))

    assert page.status_code == 200
    assert b'<strong id="hours-reopened">24</strong>' in page.content
    assert list(NodePrice.objects.order_by("valid_from").values_list("rate_per_h", "valid_from", "valid_to")) == [
        (Decimal("2.000000"), JAN_1, JAN_2),
        (Decimal("3.000000"), JAN_2, None),
    ]
    assert AuditEntry.objects.filter(subject="node_price").count() == 2
    ledger_recompute()
    assert hardware_cost(node_a) == Decimal("240.00")  # 24 h x 2 x 2.00 + 24 h x 2 x 3.00


@pytest.mark.parametrize("role", [Role.SUSTAINABILITY, Role.ENGINEER, Role.VIEWER])
def test_other_roles_read_the_page_without_the_form_and_may_not_post(org_a, node_a: Node, rented, role: str) -> None:
    client = browser(org_a, role)
    page = client.get("/finance/prices/")
    assert page.status_code == 200
    assert b'id="rent-form"' not in page.content and b'id="read-only"' in page.content
    assert client.post("/finance/prices/", form(node_a)).status_code == 403
    assert NodePrice.objects.get().rate_per_h == 2


def test_another_organizations_user_gets_404(org_b, node_a: Node, rented) -> None:
    client = browser(org_b, Role.FINANCE)
    assert node_a.hostname.encode() not in client.get("/finance/prices/").content
    assert client.post("/finance/prices/", form(node_a)).status_code == 404
    assert NodePrice.objects.get().rate_per_h == 2


def test_a_change_in_a_locked_period_is_refused_on_the_page(org_a, node_a: Node, rented) -> None:
    LockedPeriod.objects.create(organization=org_a, start=JAN_1, end=JAN_1.replace(month=2), reason="January closed",
                                locked_at=JAN_1)  # fmt: skip
    page = browser(org_a, Role.FINANCE).post("/finance/prices/", form(node_a))
    assert page.status_code == 409
    assert b"is locked (January closed)" in page.content
    assert NodePrice.objects.get().valid_to is None


@pytest.mark.parametrize("junk", ["abc", "²", "1.5", "-1", "", "99999999999999999999999"])
def test_a_node_that_is_no_id_is_a_400_or_404_that_changes_nothing(org_a, node_a: Node, rented, junk: str) -> None:
    page = browser(org_a, Role.FINANCE).post("/finance/prices/", form(node_a) | {"node": junk})
    assert page.status_code == (404 if junk.isascii() and junk.isdigit() else 400)
    assert NodePrice.objects.get().rate_per_h == 2


CSV = "fleet,node,kind,rate_per_h,rate_per,valid_from\ninference,h100-a,rented,3,gpu,2026-01-02T00:00:00Z\n"


def test_finance_uploads_a_csv_on_the_page_and_the_page_follows_its_status(org_a, node_a: Node, rented) -> None:
    client = browser(org_a, Role.FINANCE)
    with TestCase.captureOnCommitCallbacks(execute=False) as sent:
        page = client.post("/finance/prices/", {"file": SimpleUploadedFile("p.csv", CSV.encode())})
    assert page.status_code == 202 and len(sent) == 1
    upload = InputUpload.objects.get()
    html = page.content.decode()
    assert f'data-status-url="/api/v1/uploads/{upload.pk}/"' in html and 'data-state="queued"' in html
    assert client.get(f"/api/v1/uploads/{upload.pk}/").json()["state"] == "queued"  # what the page polls
    again = client.post("/finance/prices/", {"file": SimpleUploadedFile("p.csv", CSV.encode())})
    assert again.status_code == 409 and "one upload at a time" in again.content.decode()


def test_a_viewer_gets_no_upload_form_and_cannot_post_a_file(org_a, node_a: Node) -> None:
    client = browser(org_a, Role.VIEWER)
    assert 'id="upload-form"' not in client.get("/finance/prices/").content.decode()
    refused = client.post("/finance/prices/", {"file": SimpleUploadedFile("p.csv", CSV.encode())})
    assert refused.status_code == 403 and not InputUpload.objects.exists()


def _price_cell(page, hostname: str) -> str:
    import re

    row = page.content.decode().split(f'data-node="{hostname}"')[1].split("</tr>")[0]
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", row.split('class="price">')[1].split("</td>")[0])).strip()


def test_a_node_without_a_price_of_its_own_names_the_fleet_default_it_falls_back_to(org_a, node_a: Node) -> None:
    NodePrice.objects.create(fleet=node_a.fleet, kind="rented", rate_per_h=Decimal("2.5"), valid_from=JAN_1)

    page = browser(org_a, Role.VIEWER).get("/finance/prices/")

    assert _price_cell(page, node_a.hostname) == f"fleet default 2.50 {node_a.site.currency} per gpu-hour"


def test_a_node_with_no_price_and_no_default_reads_unpriced(org_a, node_a: Node) -> None:
    page = browser(org_a, Role.VIEWER).get("/finance/prices/")

    assert _price_cell(page, node_a.hostname).startswith("unpriced no price of its own and no default of fleet")


def test_prices_show_the_minor_unit_and_keep_every_digit_of_a_finer_price(org_a, node_a: Node) -> None:
    NodePrice.objects.create(fleet=node_a.fleet, node=node_a, kind="rented", rate_per_h=Decimal("0.0042"),
                             rate_per="node", valid_from=JAN_1)  # fmt: skip

    page = browser(org_a, Role.VIEWER).get("/finance/prices/")

    currency = node_a.site.currency
    assert _price_cell(page, node_a.hostname) == f"0.0042 {currency} per node-hour"


def test_a_rent_change_carries_the_currency_given(org_a, node_a: Node, rented) -> None:
    page = browser(org_a, Role.FINANCE).post("/finance/prices/", form(node_a) | {"currency": "usd"})

    assert page.status_code == 200
    new = NodePrice.objects.get(valid_from=JAN_2)
    assert (new.rate_per_h, new.currency) == (Decimal("3.000000"), "USD")
    assert AuditEntry.objects.filter(subject="node_price", after__currency="USD").count() == 1
    assert "3.00 USD per gpu-hour" in _price_cell(browser(org_a, Role.VIEWER).get("/finance/prices/"), "h100-a")


def test_a_rent_change_without_a_currency_keeps_the_current_price_s(org_a, node_a: Node, rented) -> None:
    NodePrice.objects.filter(pk=rented.pk).update(currency="SEK")

    page = browser(org_a, Role.FINANCE).post("/finance/prices/", form(node_a))

    assert page.status_code == 200
    assert NodePrice.objects.get(valid_from=JAN_2).currency == "SEK"


def test_a_rent_change_without_a_current_price_takes_the_site_s_currency(org_a, node_a: Node) -> None:
    page = browser(org_a, Role.FINANCE).post("/finance/prices/", form(node_a))

    assert page.status_code == 200
    assert NodePrice.objects.get().currency == ""  # blank: the site's, EUR
    assert _price_cell(browser(org_a, Role.VIEWER).get("/finance/prices/"), "h100-a").startswith("3.00 EUR")


@pytest.mark.parametrize("code", ["XYZ", "HRK", "EURO"])
def test_an_unknown_currency_is_refused_next_to_its_field(org_a, node_a: Node, rented, code: str) -> None:
    page = browser(org_a, Role.FINANCE).post("/finance/prices/", form(node_a) | {"currency": code})

    assert page.status_code == 400
    assert b'<span class="error">' in page.content.split(b"Currency", 1)[1]
    assert NodePrice.objects.count() == 1 and NodePrice.objects.get().valid_to is None
