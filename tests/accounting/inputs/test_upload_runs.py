"""Uploads as tasks: the POST stores the file (202 and a status URL), a worker checks it, the status follows it;
one upload per organization at a time; an upload whose worker died is failed and another may follow at once."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone
from rest_framework.test import APIClient

from accounting.inputs.upload_kinds import NODE_PRICES_UPLOAD
from accounting.inputs.upload_runs import Heartbeat, upload_run
from accounting.models import InputUpload, NodePrice
from fleets.models import Node, Role
from tests.helpers.uploads import post_and_run

pytestmark = pytest.mark.django_db

URL = "/api/v1/node-prices/upload/"
HEADER = "fleet,node,kind,rate_per_h,rate_per,capex,lifetime_years,valid_from,valid_to\n"
GOOD = (
    HEADER + "inference,h100-a,rented,2.50,gpu,,,2026-01-02T00:00:00Z,\ninference,h100-b,rented,3,gpu,,,2026-01-02,\n"
)


def file(text: str = GOOD) -> dict[str, SimpleUploadedFile]:
    return {"file": SimpleUploadedFile("prices.csv", text.encode())}


def test_the_post_stores_the_file_and_answers_202_with_a_status_that_is_queued_until_a_worker_runs_it(
    finance: APIClient, node_a: Node, node_b: Node, django_capture_on_commit_callbacks
) -> None:
    with django_capture_on_commit_callbacks(execute=False) as sent:
        posted = finance.post(URL, file())

    assert posted.status_code == 202, posted.content
    body = posted.json()
    assert posted["Location"] == body["status_url"] == f"/api/v1/uploads/{body['id']}/"
    assert (body["state"], body["progress"], body["result"]) == ("queued", {"rows_done": 0, "rows_total": 2}, None)
    assert (body["kind"], body["file_name"], len(sent)) == ("node_prices", "prices.csv", 1)
    assert not NodePrice.objects.exists()  # nothing saved in the request


def test_once_done_the_status_holds_the_answer_the_upload_gives(finance: APIClient, node_a: Node, node_b: Node):
    posted = post_and_run(finance, URL, file())
    status = finance.get(posted["Location"]).json()
    assert (status["state"], status["progress"]) == ("done", {"rows_done": 2, "rows_total": 2})
    assert (status["result_status"], status["result"]) == (201, {"saved": 2, "ledger_hours_reopened": 48})
    assert status["started_at"] and status["finished_at"] and status["error"] == ""


def test_a_second_upload_while_one_is_queued_is_refused_409_naming_the_first(
    client_as: Callable[..., APIClient], finance: APIClient, node_a: Node, site_a, django_capture_on_commit_callbacks
) -> None:
    with django_capture_on_commit_callbacks(execute=False):
        first = finance.post(URL, file()).json()
        # another kind, another user of the organization: still one upload at a time
        mixes = SimpleUploadedFile("m.csv", b"zone,year,gco2e_per_kwh,source\nDE,2025,400,x\n")
        second = client_as(Role.SUSTAINABILITY).post("/api/v1/residual-mixes/upload/", {"file": mixes})

    assert second.status_code == 409
    assert second.json()["detail"].startswith(f"upload {first['id']} of this organization is queued (0 of 2 rows)")
    assert InputUpload.objects.count() == 1


def test_an_upload_whose_worker_died_is_failed_with_the_reason_and_the_next_one_is_taken_at_once(
    finance: APIClient, node_a: Node, node_b: Node
) -> None:
    posted = post_and_run(finance, URL, file())  # done
    lapsed = timezone.now() - timedelta(seconds=1)
    stuck = InputUpload.objects.create(
        organization=node_a.fleet.organization, kind="node_prices", content=GOOD.encode(), rows_total=2,
        state="running", rows_done=1, created_at=lapsed, started_at=lapsed, lease_until=lapsed,
    )  # fmt: skip

    status = finance.get(f"/api/v1/uploads/{stuck.pk}/").json()
    assert status["state"] == "failed"
    assert status["error"].startswith("the worker stopped: no progress since ")
    again = post_and_run(finance, URL, file(HEADER + "inference,h100-a,owned,,,35040,4,2025-06-01,2026-01-02\n"))
    assert again.status_code == 202
    assert finance.get(again["Location"]).json()["result"] == {"saved": 1, "ledger_hours_reopened": 24}
    assert posted.status_code == 202


def test_a_live_lease_keeps_the_upload_running_and_the_organization_busy(finance: APIClient, node_a: Node) -> None:
    now = timezone.now()
    running = InputUpload.objects.create(
        organization=node_a.fleet.organization, kind="node_prices", content=GOOD.encode(), rows_total=2,
        state="running", created_at=now, started_at=now, lease_until=now + timedelta(minutes=1),
    )  # fmt: skip
    assert finance.get(f"/api/v1/uploads/{running.pk}/").json()["state"] == "running"
    assert finance.post(URL, file()).status_code == 409


def test_the_heartbeat_writes_the_rows_done_and_renews_the_lease_only_when_they_advance(node_a: Node) -> None:
    now = timezone.now()
    upload = InputUpload.objects.create(
        organization=node_a.fleet.organization, kind="node_prices", content=b"", rows_total=9, state="running",
        created_at=now, lease_until=now,
    )  # fmt: skip
    beat = Heartbeat(upload.pk)
    beat.tell(4)
    beat._beat()
    upload.refresh_from_db()
    assert upload.rows_done == 4 and upload.lease_until > now + timedelta(seconds=100)
    InputUpload.objects.filter(pk=upload.pk).update(lease_until=now)
    beat._beat()  # no row since: a run stuck on one row lets its lease lapse
    upload.refresh_from_db()
    assert upload.lease_until == now


def test_another_organizations_member_reads_no_status(
    client_as: Callable[..., APIClient], finance: APIClient, node_a: Node, org_b
) -> None:
    posted = post_and_run(finance, URL, file())
    outsider = client_as(Role.ADMIN, org_b)
    answer = outsider.get(posted["Location"])
    assert answer.status_code == 404 and "among yours" in answer.json()["detail"]
    assert client_as(Role.VIEWER).get(posted["Location"]).status_code == 200  # any member follows it


def test_a_file_past_the_row_limit_is_refused_in_the_request_and_not_stored(finance: APIClient, node_a: Node):
    rows = "".join(f"inference,h100-a,rented,1,gpu,,,2026-01-01T{n % 24:02}:00:00Z,\n" for n in range(5001))
    answer = finance.post(URL, file(HEADER + rows))
    assert (answer.status_code, answer.json()) == (400, {"detail": "files are limited to 5000 rows"})
    assert not InputUpload.objects.exists()


# --- the stored file is kept only until the upload is done ----------------------------------------


def test_a_saved_upload_erases_its_file_and_keeps_its_answer(finance: APIClient, node_a: Node, node_b: Node):
    posted = post_and_run(finance, URL, file())

    upload = InputUpload.objects.get(pk=posted.json()["id"])
    assert (upload.state, upload.result_status, bytes(upload.content)) == ("done", 201, b"")
    assert finance.get(posted["Location"]).json()["result"] == {"saved": 2, "ledger_hours_reopened": 48}


def test_a_refused_upload_erases_its_file_and_keeps_each_refused_row(finance: APIClient, node_a: Node):
    posted = post_and_run(finance, URL, file(HEADER + "inference,nowhere,rented,2.50,gpu,,,2026-01-02,\n"))

    upload = InputUpload.objects.get(pk=posted.json()["id"])
    assert (upload.state, upload.result_status, bytes(upload.content)) == ("done", 400, b"")
    [refused] = finance.get(posted["Location"]).json()["result"]["refused"]
    assert (refused["line"], refused["row"]["node"]) == (2, "nowhere")
    assert refused["reason"] == "node: no node nowhere in fleet inference"


def test_a_failed_upload_erases_its_file_and_keeps_its_error(node_a: Node) -> None:
    def saver(organization, user):
        def save(data):
            raise RuntimeError("a bug")

        return save

    now = timezone.now()
    upload = InputUpload.objects.create(
        organization=node_a.fleet.organization, kind="node_prices", content=GOOD.encode(), rows_total=2,
        created_at=now, lease_until=now + timedelta(minutes=1),
    )  # fmt: skip
    spec = dataclasses.replace(NODE_PRICES_UPLOAD, saver=saver)

    with pytest.raises(RuntimeError):
        upload_run(upload_id=upload.pk, spec=spec, now=now)

    upload.refresh_from_db()
    assert (upload.state, bytes(upload.content)) == ("failed", b"")
    assert upload.error.startswith("the upload failed unexpectedly")


def test_an_upload_whose_worker_died_erases_its_file_when_it_is_failed(finance: APIClient, node_a: Node) -> None:
    lapsed = timezone.now() - timedelta(seconds=1)
    stuck = InputUpload.objects.create(
        organization=node_a.fleet.organization, kind="node_prices", content=GOOD.encode(), rows_total=2,
        state="running", rows_done=1, created_at=lapsed, started_at=lapsed, lease_until=lapsed,
    )  # fmt: skip

    assert finance.get(f"/api/v1/uploads/{stuck.pk}/").json()["state"] == "failed"

    stuck.refresh_from_db()
    assert (stuck.state, bytes(stuck.content)) == ("failed", b"")


def test_a_queued_upload_keeps_its_file_until_a_worker_runs_it(
    finance: APIClient, node_a: Node, django_capture_on_commit_callbacks
) -> None:
    with django_capture_on_commit_callbacks(execute=False):
        posted = finance.post(URL, file())

    assert bytes(InputUpload.objects.get(pk=posted.json()["id"]).content) == GOOD.encode()
