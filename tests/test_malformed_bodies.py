"""Malformed bodies get a 400 that names the problem, never a 500: deep JSON, a body cut short of its Content-Length,
an upload that is no UTF-8 text or has a cell past the CSV reader's limit."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from drf_spectacular.generators import SchemaGenerator

from accounting.models import InputUpload
from fleets.models import Role
from fleets.services import node_token_rotate
from grid.models import GridIntensity
from tests.helpers.factories import NodeFactory

DEEP = "[" * 50_000 + "]" * 50_000
JUST_TOO_DEEP = '{"a": ' * 40 + "1" + "}" * 40


@pytest.mark.parametrize(
    "path",
    ["/api/v1/node-prices/", "/api/v1/site-tariffs/", "/api/v1/workload-classes/", "/api/v1/scenarios/",
     "/api/v1/instruments/", "/api/v1/locked-periods/", "/api/v1/site-market-factors/", "/api/v1/exchange-rates/"],
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


UPLOADS = ["/api/v1/node-prices/upload/", "/api/v1/instruments/upload/", "/api/v1/residual-mixes/upload/",
           "/api/v1/exchange-rates/upload/"]  # fmt: skip
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01"


@pytest.mark.parametrize("path", UPLOADS)
def test_a_file_that_is_not_utf8_text_is_a_400_saying_where_and_nothing_is_stored(client_as, org_a, path):
    admin = client_as(Role.ADMIN)
    answer = admin.post(path, {"file": SimpleUploadedFile("file.png", PNG)}, format="multipart")

    assert answer.status_code == 400
    assert answer.json()["detail"] == "the file is not UTF-8 text: byte 0x89 at offset 0 (save the CSV as UTF-8)"
    assert not InputUpload.objects.exists()


def test_the_schema_says_an_upload_is_a_utf8_csv_file_and_a_file_it_cannot_read_is_a_400(db):
    schema = SchemaGenerator().get_schema(request=None, public=True)
    for path in UPLOADS:
        operation = schema["paths"][path]["post"]
        assert operation["requestBody"]["content"]["multipart/form-data"]["encoding"] == {
            "file": {"contentType": "text/csv"}
        }, path
        assert "not UTF-8" in operation["responses"]["400"]["description"], path


HUGE_CELL = "x" * 200_000  # past the csv module's field limit (131,072 characters)
INSTRUMENT_HEADER = "name,site,kind,delivery_start,delivery_end,generation_zone,technology,vintage_year"


@pytest.mark.parametrize(
    ("path", "text"),
    [("/api/v1/node-prices/upload/", f"fleet,kind,valid_from\ninference,rented,x\n{HUGE_CELL},owned,x\n"),
     ("/api/v1/instruments/upload/", f"{INSTRUMENT_HEADER}\nok,site,ppa\nok,{HUGE_CELL},ppa\n"),
     ("/api/v1/residual-mixes/upload/", f"zone,year,gco2e_per_kwh,source\nDE,2025,400,x\nDE,2025,400,{HUGE_CELL}\n")],
)  # fmt: skip
def test_an_oversized_csv_cell_is_a_400_naming_its_line_and_column_and_nothing_is_stored(client_as, org_a, path, text):
    admin = client_as(Role.ADMIN)
    answer = admin.post(path, {"file": SimpleUploadedFile("big.csv", text.encode())}, format="multipart")

    assert answer.status_code == 400
    assert answer.json()["detail"].startswith("line 3, column ")
    assert "longer than 131072 characters" in answer.json()["detail"]
    assert not InputUpload.objects.exists()


def test_an_oversized_cell_in_a_grid_intensity_upload_is_a_400_naming_its_line_and_column(client_as, org_a):
    admin = client_as(Role.ADMIN)
    body = f"zone,hour_start,gco2e_per_kwh\nDE,2026-01-01T00:00:00Z,400\nDE,2026-01-01T01:00:00Z,{HUGE_CELL}\n"
    answer = admin.post(
        "/api/v1/grid/intensity.csv?organization=org-a&source_name=big", body.encode(), content_type="text/csv"
    )

    assert answer.status_code == 400
    assert answer.json()["problems"] == ["line 3, column 3 (gco2e_per_kwh): longer than 131072 characters"]
    assert not GridIntensity.objects.exists()
