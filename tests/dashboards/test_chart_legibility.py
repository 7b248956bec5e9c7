"""Charts read at a glance, checked on the figures themselves (no HTTP): one tick per bar and no date twice,
a colour of its own for each fleet x LLM model, long names short on the chart and whole in the hover, axes
that make room for their labels, and a node's identical GPUs drawn as one line."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from advice.charts import load_curve_figure
from common.charts import (
    FLEET_PALETTE,
    Buckets,
    band_added,
    fleet_colours,
    fleet_model_colours,
    grouped_bars,
    scatter_points,
    series_lines,
    stacked_bars,
)
from common.labels import short_compound, short_labels, short_name
from common.series import median_band, overlapping_series_merged
from dashboards.nodes import gpu_group_name, gpu_lines
from telemetry.collector.simprofiles import LLAMA_8B, QWEN_14B
from tests.helpers.curves_data import FAST, band, curve

NOW = datetime(2026, 12, 1, 13, 20, tzinfo=UTC)


def test_the_seven_day_cost_chart_has_one_tick_under_each_of_its_eight_bars_and_no_date_twice():
    # Last 7 days at 13:20: 24 Nov 13:00 to 1 Dec 13:00, eight days touched (the first and last partial).
    buckets = Buckets("day", datetime(2026, 11, 24, 13, tzinfo=UTC), datetime(2026, 12, 1, 13, tzinfo=UTC), now=NOW)
    days = [datetime(2026, 11, 24, tzinfo=UTC) + timedelta(days=n) for n in range(8)]

    figure = stacked_bars(
        "Cost", "USD", {"enterprise": [(d, 10.0) for d in days], "consumer": [(d, 2.0) for d in days]}, buckets=buckets
    )

    axis = figure.layout.xaxis
    assert axis.tickmode == "array"
    assert list(axis.tickvals) == days
    assert list(axis.ticktext) == [f"{d:%d %b}" for d in days]
    assert len(set(axis.ticktext)) == 8


def test_a_month_of_hourly_bars_keeps_at_most_sixteen_ticks_each_under_a_bar():
    start = datetime(2026, 11, 1, tzinfo=UTC)
    hours = [start + timedelta(hours=n) for n in range(72)]
    buckets = Buckets("hour", start, start + timedelta(hours=72), now=NOW)

    axis = stacked_bars("Cost", "USD", {"a": [(h, 1.0) for h in hours]}, buckets=buckets).layout.xaxis

    assert len(axis.tickvals) <= 16 and set(axis.tickvals) <= set(hours)
    assert len(set(axis.ticktext)) == len(axis.ticktext)


def test_each_fleet_and_llm_model_has_a_colour_of_its_own_and_a_lone_model_keeps_its_fleets():
    fleets = fleet_colours(["enterprise", "consumer"])
    pairs = [("enterprise", LLAMA_8B), ("enterprise", QWEN_14B), ("consumer", LLAMA_8B), ("consumer", QWEN_14B)]

    colours = fleet_model_colours(pairs, fleets)

    assert len(set(colours.values())) == 4
    assert colours[("enterprise", QWEN_14B)] == FLEET_PALETTE[0]  # the first model (by name): the fleet's colour
    assert fleet_model_colours([("consumer", None)], fleets) == {("consumer", None): FLEET_PALETTE[1]}


def test_the_advice_curves_give_each_fleets_models_their_own_colour_and_short_names():
    curves = [
        curve(fleet_id, name, gpu_class, 8, [band(1, 2, max_rps=1.9, ttft=FAST, cost="2000")], llm=model)
        for fleet_id, name, gpu_class in ((1, "enterprise", "enterprise"), (2, "consumer", "consumer"))
        for model in (LLAMA_8B, QWEN_14B)
    ]

    figure = load_curve_figure(curves, percentile=99, colours=fleet_colours(["enterprise", "consumer"]))

    assert len({trace.line.color for trace in figure.data}) == 4
    assert [trace.name for trace in figure.data][:2] == [
        "enterprise · h100-sxm · Llama-3.1-8B-Instruct",
        "enterprise · h100-sxm · DeepSeek-R1-…-Qwen-14B",
    ]
    assert QWEN_14B in figure.data[1].hovertemplate
    assert figure.layout.xaxis.automargin and figure.layout.yaxis.automargin


def test_long_model_names_are_short_on_the_chart_and_whole_in_the_hover():
    labels = [f"enterprise · h100-sxm · {LLAMA_8B}", f"enterprise · h100-sxm · {QWEN_14B}"]

    bars = grouped_bars("J per token", "J", labels, {"J": [0.1, 0.2]})
    scatter = scatter_points("Cost vs TTFT", "ms", "USD", [(labels[0], 80.0, 0.14), (labels[1], 500.0, 0.01)])

    assert list(bars.data[0].x) == [short_compound(label) for label in labels]
    assert list(bars.data[0].customdata) == labels and "%{customdata}" in bars.data[0].hovertemplate
    assert all(len(part) <= 24 for x in bars.data[0].x for part in x.split(" · "))
    assert [trace.name for trace in scatter.data] == [short_compound(label) for label in labels]
    assert [trace.customdata[0] for trace in scatter.data] == labels
    assert bars.layout.xaxis.automargin and bars.layout.yaxis.automargin


def test_the_scatter_leaves_room_for_its_labels_at_the_edges():
    figure = scatter_points("c", "x", "y", [("left", 10.0, 1.0), ("middle", 250.0, 2.0), ("right", 500.0, 4.0)])

    assert [trace.textposition for trace in figure.data] == ["top right", "top center", "top left"]
    assert figure.layout.yaxis.range[1] > 4.0 and figure.layout.xaxis.range[1] > 500.0


def test_points_close_enough_for_their_labels_to_overlap_are_named_by_the_legend_alone():
    apart = scatter_points("c", "x", "y", [("a", 10.0, 1.0), ("b", 500.0, 1.0)])
    close = scatter_points("c", "x", "y", [("a", 75.0, 0.139), ("b", 99.0, 0.139), ("c", 500.0, 0.0125)])

    assert {trace.mode for trace in apart.data} == {"markers+text"}
    assert {trace.mode for trace in close.data} == {"markers"}


def test_short_names_drop_the_organization_and_vendor_and_never_collide():
    assert short_name(LLAMA_8B) == "Llama-3.1-8B-Instruct"
    assert short_name(QWEN_14B) == "DeepSeek-R1-…-Qwen-14B"
    assert short_name("NVIDIA GeForce RTX 4090") == "RTX 4090"
    assert short_labels(["a/model", "b/model", "c/other"]) == {"a/model": "a/model", "b/model": "b/model",
                                                                "c/other": "other"}  # fmt: skip


def test_identical_gpu_lines_are_drawn_once_and_named_by_their_count_and_model():
    hours = [datetime(2026, 11, 30, h, tzinfo=UTC) for h in range(3)]
    series = {f"GPU {i}": [(h, 500.0 + (0.5 if i == 3 else 0.0)) for h in hours] for i in range(8)}
    series["GPU 8"] = [(h, 120.0) for h in hours]  # an idle card stays a line of its own
    names = {f"GPU {i}": "NVIDIA H100 80GB HBM3" for i in range(9)}

    merged = overlapping_series_merged(series, lambda group: gpu_group_name(group, names))

    assert list(merged) == ["8 \u00d7 H100 80GB HBM3 (GPU 0\u20137)", "GPU 8"]
    assert gpu_group_name(["GPU 0", "GPU 2"], names) == "2 \u00d7 H100 80GB HBM3 (GPU 0, 2)"


def test_a_url_or_a_phrase_keeps_its_slashes_and_a_short_name_gives_its_whole_one_to_the_hover():
    assert short_name("llama-8b (http://127.0.0.1:8000/metrics)") == "llama-8b (http://127.0.0.1:8000/metrics)"
    hours = [datetime(2026, 11, 30, h, tzinfo=UTC) for h in range(2)]
    buckets = Buckets("hour", hours[0], hours[-1] + timedelta(hours=1))

    figure = series_lines("TTFT", "ms", {"P99 Llama-3.1-8B-Instruct": [(h, 90.0) for h in hours]}, buckets=buckets,
                          full_names={"P99 Llama-3.1-8B-Instruct": f"P99 {LLAMA_8B}"})  # fmt: skip

    assert figure.data[0].name == "P99 Llama-3.1-8B-Instruct" and LLAMA_8B in figure.data[0].hovertemplate


def test_eight_gpus_that_differ_a_little_are_drawn_as_their_median_in_a_lowest_to_highest_band():
    hours = [datetime(2026, 11, 30, h, tzinfo=UTC) for h in range(3)]
    # 0.95-1.0 of the load each, as the simulated cards: 8 lines a few watts apart, none on another
    series = {f"GPU {i}": [(h, 400.0 + 8 * i) for h in hours] for i in range(8)}
    names = {f"GPU {i}": "NVIDIA H100 PCIe" for i in range(8)}

    lines, bands = gpu_lines(series, names)

    label = "median of 8 \u00d7 H100 PCIe (GPU 0\u20137)"
    assert list(lines) == [label] and [v for _, v in lines[label]] == [428.0] * 3
    low, high = bands[label]
    assert [v for _, v in low] == [400.0] * 3 and [v for _, v in high] == [456.0] * 3


def test_a_band_is_drawn_under_its_median_line_in_its_colour():
    hours = [datetime(2026, 11, 30, h, tzinfo=UTC) for h in range(2)]
    median, low, high = median_band([[(h, 1.0) for h in hours], [(h, 3.0) for h in hours], [(hours[0], None)]])
    figure = series_lines("Power", "W", {"median": median}, colours={"median": "#636EFA"})

    band_added(figure, "median", low, high, colour="#636EFA")

    assert [v for _, v in median] == [2.0, 2.0]
    assert [trace.fill for trace in figure.data] == [None, None, "tonexty"]
    assert figure.data[2].fillcolor == "rgba(99, 110, 250, 0.18)" and figure.data[1].showlegend is False
