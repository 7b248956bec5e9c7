"""Plotly figures for the dashboards, built in Python from selector output (testable without HTTP).

Each function takes plain rows and returns a ``go.Figure``; ``figure_html``
turns one into a ``<div>`` plus script for a template. plotly.js itself is
served from the app's static files (``plotly/plotly.min.js``), never a CDN.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

import plotly.graph_objects as go
import plotly.io as pio

# Plotly validates and deep-copies a named template into every figure built with it: ~35 ms
# a figure, most of a dashboard's time in Python. Figures are built with the empty "none"
# template instead, and ``figure_html`` writes the real one, resolved once, into each
# figure's JSON: the same HTML, several times faster.
_TEMPLATE = "plotly_white"
_LAYOUT: dict[str, Any] = {
    "autosize": True,
    "margin": {"l": 60, "r": 20, "t": 40, "b": 40},
    "height": 340,
    "template": "none",
    "legend": {"orientation": "h", "y": -0.2},
}


@functools.cache
def _template_json() -> dict[str, Any]:
    template: dict[str, Any] = go.Figure(layout={"template": _TEMPLATE}).to_dict()["layout"]["template"]
    return template


def figure_html(figure: go.Figure, *, div_id: str) -> str:
    """The figure as an HTML fragment, without plotly.js (the page loads it once, from static)."""
    spec = figure.to_dict()
    spec["layout"]["template"] = _template_json()
    return pio.to_html(
        spec,
        validate=False,
        include_plotlyjs=False,
        full_html=False,
        div_id=div_id,
        default_width="100%",
        default_height=f"{_LAYOUT['height']}px",
        config={"displaylogo": False, "responsive": True},
    )


def _figure(title: str, y_title: str, **layout: Any) -> go.Figure:
    figure = go.Figure()
    figure.update_layout(title={"text": title, "x": 0.01}, yaxis_title=y_title, **_LAYOUT, **layout)
    return figure


def series_lines(
    title: str, y_title: str, series: Mapping[str, Sequence[tuple[datetime, float | None]]], *, mode: str | None = None
) -> go.Figure:
    """One line per named series of (time, value) points; markers too where points are few enough to see."""
    figure = _figure(title, y_title)
    mode = mode or ("lines+markers" if max((len(p) for p in series.values()), default=0) <= 48 else "lines")
    for name, points in series.items():
        figure.add_trace(go.Scatter(x=[t for t, _ in points], y=[v for _, v in points], name=name, mode=mode))
    return figure


def stacked_bars(title: str, y_title: str, series: Mapping[str, Sequence[tuple[datetime, float]]]) -> go.Figure:
    """Bars stacked per time bucket, one colour per named series (e.g. cost by fleet)."""
    figure = _figure(title, y_title, barmode="stack")
    for name, points in series.items():
        figure.add_trace(go.Bar(x=[t for t, _ in points], y=[v for _, v in points], name=name))
    if len({t for points in series.values() for t, _ in points}) <= 2:
        # A date axis gives one or two bars the width of their bucket and a range to match: unreadable.
        figure.update_xaxes(type="category")
    return figure


def grouped_bars(
    title: str, y_title: str, categories: Sequence[str], series: Mapping[str, Sequence[float | None]]
) -> go.Figure:
    """Bars per category, grouped by named series (e.g. cost per 1M tokens by fleet and model)."""
    figure = _figure(title, y_title, barmode="group")
    for name, values in series.items():
        figure.add_trace(go.Bar(x=list(categories), y=list(values), name=name))
    return figure


def scatter_points(
    title: str, x_title: str, y_title: str, points: Iterable[tuple[str, float | None, float | None]]
) -> go.Figure:
    """Labelled points (e.g. each fleet's cost per 1M tokens against its P99 TTFT)."""
    figure = _figure(title, y_title, xaxis_title=x_title)
    for label, x, y in points:
        figure.add_trace(
            go.Scatter(
                x=[x],
                y=[y],
                name=label,
                mode="markers+text",
                text=[label],
                textposition="top center",
                marker={"size": 14},
                cliponaxis=False,
            )
        )
    # From zero, with room at the sides: the labels of the extreme points stay inside the card.
    figure.update_xaxes(rangemode="tozero")
    figure.update_yaxes(rangemode="tozero")
    figure.update_layout(margin={"l": 70, "r": 70, "t": 50, "b": 40})
    return figure


def pivot(
    rows: Iterable[Mapping[str, Any]], *, series_key: str, x_key: str, y_key: str
) -> dict[str, list[tuple[Any, Any]]]:
    """Group rows into named series of (x, y) points, x-sorted."""
    series: dict[str, list[tuple[Any, Any]]] = defaultdict(list)
    for row in rows:
        series[str(row[series_key])].append((row[x_key], row[y_key]))
    return {name: sorted(points, key=lambda p: p[0]) for name, points in sorted(series.items())}
