from __future__ import annotations

import io
from datetime import UTC, datetime
from decimal import Decimal

import pytest

from grid import CsvError, parse_intensity_csv


def test_good_file_with_offsets_and_kinds() -> None:
    text = (
        "zone,hour_start,gco2e_per_kwh,kind\n"
        "DE,2024-05-01T13:00:00Z,312.5,average\n"
        "de,2024-05-01T16:00:00+02:00,298,\n"
        "DE,2024-05-01T13:00:00Z,455.25,marginal\n"
        "\n"
        "SE-SE3,2024-05-01T00:00:00+00:00,0,average\n"
    )
    rows = parse_intensity_csv(text, source_name="ppa-2024")
    assert [(r.zone, r.hour_start, r.gco2e_per_kwh, r.kind) for r in rows] == [
        ("DE", datetime(2024, 5, 1, 13, tzinfo=UTC), Decimal("312.500"), "average"),
        ("DE", datetime(2024, 5, 1, 13, tzinfo=UTC), Decimal("455.250"), "marginal"),
        ("DE", datetime(2024, 5, 1, 14, tzinfo=UTC), Decimal("298.000"), "average"),
        ("SE-SE3", datetime(2024, 5, 1, 0, tzinfo=UTC), Decimal("0.000"), "average"),
    ]
    assert {(r.source, r.is_estimated, r.is_forecast) for r in rows} == {("csv:ppa-2024", False, False)}


def test_kind_column_is_optional_and_columns_may_be_reordered() -> None:
    text = "\ufeffGCO2E_PER_KWH,Zone,hour_start\r\n120,GB,2024-01-01T00:00Z\r\n"
    (row,) = parse_intensity_csv(text, source_name="x")
    assert (row.zone, row.kind, row.gco2e_per_kwh) == ("GB", "average", Decimal("120.000"))


def test_bytes_and_streams_are_accepted() -> None:
    text = "zone,hour_start,gco2e_per_kwh\nPL,2024-01-01T00:00:00Z,700\n"
    assert parse_intensity_csv(text.encode(), source_name="b") == parse_intensity_csv(
        io.StringIO(text), source_name="b"
    )


def test_bad_rows_are_reported_with_their_line_numbers() -> None:
    text = (
        "zone,hour_start,gco2e_per_kwh,kind\n"  # line 1
        "DE,2024-05-01T13:00:00Z,300,average\n"  # 2: fine
        ",2024-05-01T14:00:00Z,300,average\n"  # 3: no zone
        "DE,2024-05-01T14:30:00Z,300,average\n"  # 4: not on the hour
        "DE,2024-05-01T15:00:00,300,average\n"  # 5: no offset
        "DE,2024-05-01T16:00:00+05:30,300,average\n"  # 6: not a UTC hour
        "DE,2024-05-01T17:00:00Z,-1,average\n"  # 7: negative
        "DE,2024-05-01T18:00:00Z,2000.01,average\n"  # 8: absurd
        "DE,2024-05-01T19:00:00Z,abc,average\n"  # 9: not a number
        "DE,2024-05-01T20:00:00Z,NaN,average\n"  # 10: not finite
        "DE,2024-05-01T21:00:00Z,300,hourly\n"  # 11: bad kind
        "DE,2024-05-01T22:00:00Z,300\n"  # 12: a field short
        "de,2024-05-01T15:00:00+02:00,301,average\n"  # 13: duplicate of line 2
    )
    with pytest.raises(CsvError) as caught:
        parse_intensity_csv(text, source_name="bad")
    problems = caught.value.problems
    assert [problem.split(":", 1)[0] for problem in problems] == [f"line {n}" for n in range(3, 14)]
    assert "zone is empty" in problems[0]
    assert "not the start of a UTC hour" in problems[1]
    assert "offset" in problems[2]
    assert "not the start of a UTC hour" in problems[3]
    assert "outside 0..2000" in problems[4] and "outside 0..2000" in problems[5]
    assert "not a number" in problems[6]
    assert "outside 0..2000" in problems[7]
    assert "'average' or 'marginal'" in problems[8]
    assert "expected 4 fields, got 3" in problems[9]
    assert "duplicate of line 2" in problems[10]
    assert str(caught.value).startswith("11 problem(s) in the CSV:\nline 3: ")


def test_message_lists_at_most_twenty_problems() -> None:
    rows = "".join(f"DE,2024-05-01T13:00:00Z,{-n},average\n" for n in range(1, 31))
    with pytest.raises(CsvError) as caught:
        parse_intensity_csv("zone,hour_start,gco2e_per_kwh,kind\n" + rows, source_name="many")
    assert len(caught.value.problems) == 30
    message = str(caught.value)
    assert "line 21:" in message and "line 22:" not in message
    assert message.endswith("... and 10 more problem(s)")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", "line 1: the file is empty"),
        ("zone,hour_start\n", "line 1: missing column 'gco2e_per_kwh'"),
        ("zone,hour_start,gco2e_per_kwh,site\n", "line 1: unknown column 'site'"),
        ("zone,zone,hour_start,gco2e_per_kwh\n", "line 1: column 'zone' appears twice"),
    ],
)
def test_bad_headers(text: str, expected: str) -> None:
    with pytest.raises(CsvError, match=expected):
        parse_intensity_csv(text, source_name="h")


def test_non_utf8_bytes_are_rejected() -> None:
    with pytest.raises(CsvError, match="not UTF-8"):
        parse_intensity_csv(b"zone,hour_start,gco2e_per_kwh\n\xff\xfe", source_name="bin")


def test_source_name_is_required() -> None:
    with pytest.raises(ValueError, match="source_name"):
        parse_intensity_csv("zone,hour_start,gco2e_per_kwh\n", source_name=" ")
