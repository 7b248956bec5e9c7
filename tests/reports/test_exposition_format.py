"""The text formats themselves (``reports.exposition``), without a database."""

from __future__ import annotations

import math
from decimal import Decimal

import pytest

from reports.exposition import (
    Family,
    Kind,
    Sample,
    help_escaped,
    label_value_escaped,
    openmetrics_text,
    prometheus_text,
    value_text,
    wants_openmetrics,
)
from tests.helpers.exposition import parsed

ENERGY = Family(
    "x_energy_joules",
    Kind.COUNTER,
    'energy\\ "all"\nof it',
    unit="joules",
    samples=[Sample((("fleet", 'a "b" \\ c\nd'),), Decimal("5400000.000000000000")), Sample((), 1.5)],
)


def test_label_values_escape_backslash_quote_and_newline():
    assert label_value_escaped('a "b" \\ c\nd') == 'a \\"b\\" \\\\ c\\nd'


def test_help_escapes_backslash_and_newline_only_in_the_text_format():
    assert help_escaped('x\\ "y"\nz') == 'x\\\\ "y"\\nz'


def test_the_text_format_names_a_counter_by_its_sample():
    text = prometheus_text([ENERGY])

    assert text.splitlines() == [
        '# HELP x_energy_joules_total energy\\\\ "all"\\nof it',
        "# TYPE x_energy_joules_total counter",
        'x_energy_joules_total{fleet="a \\"b\\" \\\\ c\\nd"} 5400000',
        "x_energy_joules_total 1.5",
    ]
    assert parsed(text)[("x_energy_joules_total", frozenset({("fleet", 'a "b" \\ c\nd')}))] == 5400000


def test_openmetrics_names_the_family_gives_its_unit_and_ends_with_eof():
    lines = openmetrics_text([ENERGY]).splitlines()

    assert lines[:3] == [
        "# TYPE x_energy_joules counter",
        "# UNIT x_energy_joules joules",
        '# HELP x_energy_joules energy\\\\ \\"all\\"\\nof it',
    ]
    assert lines[-1] == "# EOF"


@pytest.mark.parametrize(
    ("value", "text"),
    [(Decimal("5.540000000000"), "5.54"), (3, "3"), (0.1, "0.1"), (1e20, "1e+20"), (math.inf, "+Inf"),
     (-math.inf, "-Inf"), (math.nan, "NaN"), (Decimal("87.2431506849315068"), "87.2431506849315")],
)  # fmt: skip
def test_values_read_back_as_the_same_float(value, text):
    assert value_text(value) == text


def test_a_family_is_named_as_openmetrics_names_it():
    with pytest.raises(ValueError, match="without _total"):
        Family("x_total", Kind.COUNTER, "x")
    with pytest.raises(ValueError, match="ends with its unit"):
        Family("x_energy", Kind.GAUGE, "x", unit="joules")


@pytest.mark.parametrize(
    ("accept", "openmetrics"),
    [
        ("application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5,*/*;q=0.1", True),
        ("application/openmetrics-text; version=0.0.1; q=0.75", True),
        ("application/openmetrics-text;q=0", False),
        ("text/plain;version=0.0.4", False),
        ("*/*", False),
        ("", False),
    ],
)
def test_openmetrics_only_when_accept_asks_for_it(accept, openmetrics):
    assert wants_openmetrics(accept) is openmetrics
