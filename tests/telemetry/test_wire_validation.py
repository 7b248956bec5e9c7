"""Column validation of the wire format: each value of its kind within its bounds, a bad one named by its row."""

from __future__ import annotations

import math

import orjson
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from telemetry.collector import wire
from tests.helpers.batches import make_batch

values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=3),
)


@given(st.lists(values, max_size=8), st.booleans())
@example([1, 2, 3], True)
@example([0.5, 100], False)
@example([True], True)
@example([2**64], True)
def test_a_column_is_accepted_exactly_when_every_value_is_a_number_of_its_kind_within_bounds(column, integer):
    low, high = (0, 100) if integer else (0.0, 5000.0)
    kinds = (int,) if integer else (int, float)
    expected = all(
        value is None or (type(value) in kinds and math.isfinite(value) and low <= value <= high) for value in column
    )

    try:
        wire._check_column(column, "x", low, high, integer=integer)
        accepted = True
    except wire.WireError as error:
        accepted = False
        assert error.status in (400, 422)
        assert str(error).startswith("x[")

    assert accepted == expected


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [
        ("util_pct", True, "gpu_samples.util_pct[3] must be an integer, got True"),
        ("util_pct", 50.0, "gpu_samples.util_pct[3] must be an integer, got 50.0"),
        ("power_w", "300", "gpu_samples.power_w[3] must be a finite number"),
        ("temp_c", 151, "gpu_samples.temp_c[3]=151 is outside -40..150"),
        ("power_w", 2000.5, "gpu_samples.power_w[3]=2000.5 is outside 0.0..2000.0"),
        ("gpu", 0.0, "gpu_samples.gpu[3]=0.0 does not name"),
        ("ts", None, "gpu_samples.ts[3] must be a finite number, got None"),
    ],
)
def test_a_bad_value_is_named_by_its_row(column, value, message):
    batch = make_batch(gpus=1, seconds=5)
    batch["gpu_samples"][column][3] = value

    with pytest.raises(wire.WireError, match=message.replace("[", r"\[").replace("]", r"\]")):
        wire.batch_decode(orjson.dumps(batch))


def test_valid_columns_pass_unchanged_nulls_and_integers_included():
    batch = make_batch(gpus=2, seconds=3)
    batch["gpu_samples"]["power_w"] = [None, 0, 412.5, 2000, 1.5, None]
    batch["gpu_samples"]["temp_c"] = [-40, None, 0, 150, 61, None]

    decoded = wire.batch_decode(orjson.dumps(batch))

    assert decoded.gpu_samples["power_w"] == [None, 0, 412.5, 2000, 1.5, None]
    assert [type(v) for v in decoded.gpu_samples["power_w"]] == [type(None), int, float, int, float, type(None)]
    assert decoded.gpu_samples["temp_c"] == [-40, None, 0, 150, 61, None]
    assert not math.isnan(decoded.sent_at)
