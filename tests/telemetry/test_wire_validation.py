"""Column validation of the wire format: the whole-column fast check accepts exactly what the per-value rules do."""

from __future__ import annotations

import math

import orjson
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from telemetry import rawstore
from telemetry.collector import wire
from tests.telemetry.batches import make_batch

values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=3),
)


def per_value_ok(column: list, low: float, high: float, integer: bool) -> bool:
    """The per-value rules (``wire._int`` / ``wire._number``) on every non-null value."""
    try:
        for value in column:
            if value is not None:
                (wire._int if integer else wire._number)(value, "x", minimum=low, maximum=high)
    except wire.WireError:
        return False
    return True


@given(st.lists(values, max_size=8), st.booleans())
def test_the_fast_column_check_accepts_exactly_what_the_per_value_rules_accept(column, integer):
    low, high = (0, 100) if integer else (0.0, 5000.0)

    try:
        expected = per_value_ok(column, low, high, integer)
    except OverflowError:  # an int too large for a float: the per-value rules cannot decide it either
        return
    assert wire._column_ok(column, low, high, integer=integer) == expected


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [
        ("util_pct", True, "gpu_samples.util_pct[3] must be an integer, got True"),
        ("util_pct", 50.0, "gpu_samples.util_pct[3] must be an integer, got 50.0"),
        ("power_w", "300", "gpu_samples.power_w[3] must be a number"),
        ("temp_c", 151, "gpu_samples.temp_c[3]=151 is outside -40..150"),
        ("gpu", 0.0, "gpu_samples.gpu[3]=0.0 does not name"),
        ("ts", None, "gpu_samples.ts[3] must be a number, got None"),
    ],
)
def test_a_bad_value_is_named_by_its_row(column, value, message):
    batch = make_batch(gpus=1, seconds=5)
    batch["gpu_samples"][column][3] = value

    with pytest.raises(wire.WireError, match=message.replace("[", r"\[").replace("]", r"\]")):
        wire.batch_decode(orjson.dumps(batch))


def test_valid_columns_pass_unchanged_nulls_and_integers_included():
    batch = make_batch(gpus=2, seconds=3)
    batch["gpu_samples"]["power_w"] = [None, 0, 412.5, 5000, 1.5, None]
    batch["gpu_samples"]["temp_c"] = [-40, None, 0, 150, 61, None]

    decoded = wire.batch_decode(orjson.dumps(batch))

    assert decoded.gpu_samples["power_w"] == [None, 0, 412.5, 5000, 1.5, None]
    assert [type(v) for v in decoded.gpu_samples["power_w"]] == [type(None), int, float, int, float, type(None)]
    assert decoded.gpu_samples["temp_c"] == [-40, None, 0, 150, 61, None]
    assert not math.isnan(decoded.sent_at)


field_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-3, max_value=300),
    st.floats(allow_nan=False, max_value=300),
    st.text(max_size=3),
    st.text(min_size=90, max_size=140),
    st.just(["list"]),
)


@given(
    st.one_of(
        st.dictionaries(
            st.sampled_from(["uuid", "index", "name", "energy_counter_supported", "epoch"]), field_values, max_size=5
        ),
        st.fixed_dictionaries(
            {"uuid": field_values, "index": field_values, "name": field_values, "epoch": field_values},
            optional={"energy_counter_supported": field_values},
        ),
        field_values,
    )
)
@example({"uuid": "GPU-1", "index": 0, "name": "H100", "energy_counter_supported": True, "epoch": "boot-1"})
@example({"uuid": "GPU-1", "index": 255, "name": "H", "energy_counter_supported": False, "epoch": "e" * 128})
@example({"uuid": "GPU-1", "index": True, "name": "H100", "energy_counter_supported": True, "epoch": "boot-1"})
@example({"uuid": "GPU-1", "index": 256, "name": "H100", "energy_counter_supported": True, "epoch": "boot-1"})
@example({"uuid": "G" * 97, "index": 0, "name": "H100", "energy_counter_supported": True, "epoch": "boot-1"})
@example({"uuid": "GPU-1", "index": 0, "name": "H100", "energy_counter_supported": 1, "epoch": "boot-1"})
@example({"uuid": "GPU-1", "index": 0, "name": "", "energy_counter_supported": True, "epoch": "boot-1"})
def test_the_quick_gpu_reference_check_accepts_exactly_what_the_full_one_accepts(item):
    try:
        expected = wire._gpu_ref(item, "gpus[0]")
    except wire.WireError:
        expected = None

    assert wire._gpu_ref_valid(item) == expected


@given(st.lists(values, max_size=8), st.booleans())
@example([1, 2, 3], True)
@example([0.5, 100.0], False)
@example([2**63, 1], True)
@example([1.0, 2], False)
def test_a_column_converted_to_an_array_is_one_the_per_value_rules_accept_with_the_same_values(column, integer):
    low, high = (0, 100) if integer else (0.0, 5000.0)

    array = rawstore.column_array(column, low, high, integer)

    if array is not None:
        assert per_value_ok(column, low, high, integer)
        assert array.tolist() == column
        assert all(type(v) is (int if integer else float) for v in array.tolist())


def test_decoding_with_arrays_keeps_the_columns_and_converts_the_clean_ones():
    batch = make_batch(gpus=2, seconds=3)
    batch["gpu_samples"]["power_w"][1] = None  # this column is checked value by value instead

    decoded = wire.batch_decode(orjson.dumps(batch), column_array=rawstore.column_array)

    assert decoded.gpu_samples == wire.batch_decode(orjson.dumps(batch)).gpu_samples
    assert "power_w" not in decoded.gpu_arrays
    assert {"gpu", "ts", "energy_j", "temp_c"} <= set(decoded.gpu_arrays)
    for name, array in decoded.gpu_arrays.items():
        assert array.tolist() == decoded.gpu_samples[name]
