"""Plotly figures for the dashboards, built in Python from selector output (testable without HTTP).

Each function takes plain rows and returns a ``go.Figure``; ``figure_html``
turns one into a ``<div>`` plus script for a template. plotly.js itself is
served from the app's static files (``plotly/plotly.min.js``), never a CDN.

Charts tell the truth about time and identity:

- ``Buckets`` (the period and its granularity) labels buckets as hours, days or
  months, and marks a bucket the period (or the present) cuts short: hollow
  markers or pale bars, "partial: 13 of 24 h" in the hover, and a note under the
  chart, so a short day reads as short rather than as a dip.
- ``series_lines(gap=...)`` breaks a line where consecutive points lie further
  apart than that (no straight line across an outage); ``missing_spans`` are
  shaded.
- One colour per fleet (``fleet_colours``: the organization's fleets in order of
  creation) and per GPU model (``gpu_model_colour``), on every page; where a fleet
  shows several LLM models, each is a shade of its fleet's colour
  (``fleet_model_colours``).
- One tick per bar (``stacked_bars``), never a date twice; labels fit: axes
  take the margin their labels need (automargin), long names are shortened
  (``common.labels``) with the full name in the hover.
- Many near-identical lines (a node's GPUs) are drawn fewer: as one where they
  overlap, else as their median in a lowest-to-highest band (``common.series``,
  ``band_added``).
"""

from __future__ import annotations

import calendar
import functools
import hashlib
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import plotly.graph_objects as go
import plotly.io as pio

from common.labels import short_compound
from fleets.models import Fleet, Organization

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
    # Every axis takes the margin its tick labels and title need: no label is cut at the figure's edge.
    "xaxis": {"automargin": True},
    "yaxis": {"automargin": True},
}
MAX_TICKS = 16  # one tick per bar up to this many bars; past it every n-th bar, each still under its bar


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


# Fleets: the organization's fleets in order of creation take these in turn (Okabe-Ito, colour-blind safe).
FLEET_PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
# GPU models: a fixed colour per catalog model, distinct from the fleets'; other models hash into the rest.
GPU_MODEL_COLOURS = {
    "h100-sxm": "#6a3d9a",
    "h100-pcie": "#9e7cc1",
    "h200-sxm": "#3f007d",
    "a100-sxm4-40gb": "#b15928",
    "a100-sxm4-80gb": "#8c3b12",
    "a100-pcie-40gb": "#d9915b",
    "a100-pcie-80gb": "#c47a3c",
    "l40s": "#1b7837",
    "l4": "#5aae61",
    "rtx-4090": "#e7298a",
    "rtx-3090": "#f4a3c8",
}
_OTHER_MODEL_COLOURS = ("#666666", "#8dd3c7", "#bebada", "#fb8072", "#80b1d3", "#fdb462", "#b3de69")
MISSING_FILL = "rgba(120, 120, 120, 0.18)"


def fleet_colours(fleet_names: Sequence[str]) -> dict[str, str]:
    """One colour per fleet, from the organization's fleet names in order of creation."""
    return {name: FLEET_PALETTE[number % len(FLEET_PALETTE)] for number, name in enumerate(fleet_names)}


def fleet_model_colours(
    pairs: Iterable[tuple[str, str | None]], fleet_colours: Mapping[str, str]
) -> dict[tuple[str, str | None], str]:
    """A distinct colour per (fleet, LLM model): the fleet's colour for its first model (by name), a darker or
    lighter shade of it for each further one, so a fleet's models read as one family and never as one line."""
    by_fleet: dict[str, list[str | None]] = defaultdict(list)
    for fleet, model in dict.fromkeys(pairs):
        by_fleet[fleet].append(model)
    colours: dict[tuple[str, str | None], str] = {}
    for fleet, models in by_fleet.items():
        base = fleet_colours.get(fleet, FLEET_PALETTE[-1])
        for number, model in enumerate(sorted(models, key=lambda m: m or "")):
            colours[(fleet, model)] = _shade(base, _SHADES[number % len(_SHADES)])
    return colours


# Mix factors of a fleet's colour with black (< 0) or white (> 0), far enough apart to tell on a line or a dot.
_SHADES = (0.0, -0.45, 0.5, -0.7, 0.72)


def _shade(colour: str, factor: float) -> str:
    red, green, blue = (int(colour[i : i + 2], 16) for i in (1, 3, 5))
    target = 255 if factor > 0 else 0
    mixed = (round(c + (target - c) * abs(factor)) for c in (red, green, blue))
    return "#{:02X}{:02X}{:02X}".format(*mixed)


def gpu_model_colour(model: str | None) -> str:
    """The same colour for a GPU model key (``h100-sxm``) on every page and in every organization."""
    key = model or "unknown"
    if key in GPU_MODEL_COLOURS:
        return GPU_MODEL_COLOURS[key]
    digest = int(hashlib.sha256(key.encode()).hexdigest()[:8], 16)
    return _OTHER_MODEL_COLOURS[digest % len(_OTHER_MODEL_COLOURS)]


# A bucket's label (hover, table) and its bar's tick, per granularity (an hour's for any finer one).
_LABEL_FORMATS = {"month": "%b %Y", "day": "%a %d %b", "hour": "%d %b %H:%M UTC"}
_TICK_FORMATS = {"month": "%b %Y", "day": "%d %b", "hour": "%H:%M<br>%d %b"}


@dataclass(frozen=True)
class Buckets:
    """A period ``[start, end)`` cut into UTC hours, days or months; ``now`` cuts the bucket in progress short."""

    granularity: str  # "hour", "day" or "month"
    start: datetime
    end: datetime
    now: datetime | None = None

    def full(self, moment: datetime) -> tuple[datetime, datetime]:
        """The whole UTC bucket that ``moment`` falls in."""
        moment = moment.astimezone(UTC)
        if self.granularity == "month":
            first = moment.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
            days = calendar.monthrange(first.year, first.month)[1]
            return first, first + timedelta(days=days)
        if self.granularity == "day":
            first = moment.replace(hour=0, minute=0, second=0, microsecond=0)
            return first, first + timedelta(days=1)
        first = moment.replace(minute=0, second=0, microsecond=0)
        return first, first + timedelta(hours=1)

    def hours(self, moment: datetime) -> tuple[float, float]:
        """(hours of the bucket inside the period and before ``now``, hours of the whole bucket)."""
        first, last = self.full(moment)
        cut = min(last, self.end, self.now or last)
        covered = max(cut - max(first, self.start), timedelta(0))
        return covered / timedelta(hours=1), (last - first) / timedelta(hours=1)

    def partial_note(self, moment: datetime) -> str | None:
        """``"partial: 13 of 24 h"`` for a bucket cut short, else ``None``."""
        covered, whole = self.hours(moment)
        if covered >= whole:
            return None
        shown = f"{covered:.0f}" if covered == round(covered) else f"{covered:.1f}"
        return f"partial: {shown} of {whole:.0f} h"

    def label(self, moment: datetime) -> str:
        return moment.astimezone(UTC).strftime(_LABEL_FORMATS.get(self.granularity, _LABEL_FORMATS["hour"]))

    def tick_label(self, moment: datetime) -> str:
        """A bar's tick: "Nov 2026", "24 Nov", or "13:00<br>24 Nov"."""
        return moment.astimezone(UTC).strftime(_TICK_FORMATS.get(self.granularity, _TICK_FORMATS["hour"]))

    def axis(self) -> dict[str, Any]:
        """Date-axis settings: months as "Nov 2026", days as "02 Nov", hours with their time."""
        if self.granularity == "month":
            return {"type": "date", "tickformat": "%b %Y", "dtick": "M1", "hoverformat": "%B %Y"}
        if self.granularity == "day":
            return {"type": "date", "tickformat": "%d %b", "hoverformat": "%a %d %b %Y"}
        return {"type": "date", "tickformat": "%H:%M<br>%d %b", "hoverformat": "%d %b %Y %H:%M UTC"}

    def span_axis(self) -> dict[str, Any]:
        """``axis`` over the whole period (from its first bucket's start): a lone point is not a zoomed-in axis."""
        axis = {**self.axis(), "range": [self.full(self.start)[0], self.end]}
        if self.granularity == "day" and self.end - self.start <= timedelta(days=45):
            axis["dtick"] = 86_400_000  # one tick a day, in ms
        return axis


def _figure(title: str, y_title: str, *, x_title: str | None = None, **layout: Any) -> go.Figure:
    # The layout given whole to the constructor, as nested dicts: ``update_layout`` with magic-underscore
    # names (``yaxis_title``) parsed each path and cost ~5 ms a figure, ten times the figure itself.
    x_axis = {**_LAYOUT["xaxis"], **({"title": {"text": x_title}} if x_title is not None else {})}
    y_axis = {**_LAYOUT["yaxis"], "title": {"text": y_title}}
    return go.Figure(
        layout={**_LAYOUT, "title": {"text": title, "x": 0.01}, "xaxis": x_axis, "yaxis": y_axis, **layout}
    )


def _partial_footnote(figure: go.Figure, any_partial: bool) -> None:
    if any_partial:
        figure.add_annotation(
            text="hollow / pale: a partial bucket (the period or the present cuts it short; see the hover)",
            xref="paper", yref="paper", x=0, y=1.0, xanchor="left", yanchor="bottom", showarrow=False,
            font={"size": 10, "color": "#5b6575"},
        )  # fmt: skip


def _with_breaks(
    points: Sequence[tuple[datetime, float | None]], gap: timedelta | None
) -> list[tuple[datetime, float | None]]:
    """The points with a ``None`` between two that lie more than ``gap`` apart: Plotly breaks the line there."""
    if gap is None:
        return list(points)
    broken: list[tuple[datetime, float | None]] = []
    for point in points:
        if broken and point[0] - broken[-1][0] > gap:
            broken.append((broken[-1][0] + (point[0] - broken[-1][0]) / 2, None))
        broken.append(point)
    return broken


def series_lines(
    title: str,
    y_title: str,
    series: Mapping[str, Sequence[tuple[datetime, float | None]]],
    *,
    mode: str | None = None,
    buckets: Buckets | None = None,
    gap: timedelta | None = None,
    missing_spans: Sequence[tuple[datetime, datetime]] = (),
    colours: Mapping[str, str] | None = None,
    full_names: Mapping[str, str] | None = None,
) -> go.Figure:
    """One line per named series of (time, value) points; markers too where points are few enough to see.

    ``gap``: no line between points further apart. ``missing_spans``: shaded as
    missing time. ``buckets``: hour/day/month labels, partial buckets hollow.
    ``full_names``: the whole name of a series named short, for its hover.
    """
    figure = _figure(title, y_title)
    mode = mode or ("lines+markers" if max((len(p) for p in series.values()), default=0) <= 48 else "lines")
    any_partial = False
    for name, points in series.items():
        drawn = _with_breaks(points, gap)
        trace: dict[str, Any] = {"x": [t for t, _ in drawn], "y": [v for _, v in drawn], "name": name, "mode": mode}
        colour = (colours or {}).get(name)
        if colour:
            trace["line"] = {"color": colour}
        if buckets is not None:
            notes = [buckets.partial_note(t) if v is not None else None for t, v in drawn]
            any_partial = any_partial or any(notes)
            trace["customdata"] = [note or "" for note in notes]
            hover = (full_names or {}).get(name, name)
            trace["hovertemplate"] = f"{hover}: %{{y}}<br>%{{x}} %{{customdata}}<extra></extra>"
            trace["marker"] = {
                "symbol": ["circle-open" if note else "circle" for note in notes],
                "size": [9 if note else 6 for note in notes],
                **({"color": colour} if colour else {}),
            }
            if "markers" not in mode and any(notes):
                trace["mode"] = "lines+markers"
        figure.add_trace(go.Scatter(**trace))
    for first, last in missing_spans:
        figure.add_vrect(x0=first, x1=last, fillcolor=MISSING_FILL, line_width=0, layer="below")
    if missing_spans:
        # A legend entry for the shading (a shape has none).
        figure.add_trace(
            go.Scatter(
                x=[missing_spans[0][0]], y=[None], mode="markers", name="no samples",
                marker={"symbol": "square", "size": 12, "color": MISSING_FILL}, hoverinfo="skip",
            )
        )  # fmt: skip
    if buckets is not None:
        figure.update_xaxes(**buckets.span_axis())
    _partial_footnote(figure, any_partial)
    return figure


# Plotly's own first colours (the lines' default), so that a band drawn with its line shares its colour.
LINE_COLOURS = ("#636EFA", "#EF553B", "#00CC96", "#AB63FA", "#FFA15A", "#19D3F3")


def band_added(
    figure: go.Figure,
    name: str,
    low: Sequence[tuple[datetime, float | None]],
    high: Sequence[tuple[datetime, float | None]],
    *,
    colour: str,
    gap: timedelta | None = None,
) -> None:
    """A shaded band from ``low`` to ``high`` (e.g. the lowest to the highest GPU around their median line)."""
    fill = "rgba({}, {}, {}, 0.18)".format(*(int(colour[i : i + 2], 16) for i in (1, 3, 5)))
    lower, upper = _with_breaks(low, gap), _with_breaks(high, gap)
    figure.add_trace(
        go.Scatter(x=[t for t, _ in lower], y=[v for _, v in lower], mode="lines", line={"width": 0},
                   showlegend=False, hoverinfo="skip", name=f"{name}: lowest")
    )  # fmt: skip
    figure.add_trace(
        go.Scatter(x=[t for t, _ in upper], y=[v for _, v in upper], mode="lines", line={"width": 0},
                   fill="tonexty", fillcolor=fill, name=f"{name}: lowest to highest", hoverinfo="skip")
    )  # fmt: skip


def stacked_bars(
    title: str,
    y_title: str,
    series: Mapping[str, Sequence[tuple[datetime, float]]],
    *,
    buckets: Buckets | None = None,
    colours: Mapping[str, str] | None = None,
) -> go.Figure:
    """Bars stacked per time bucket, one colour per named series (e.g. cost by fleet); partial buckets pale."""
    figure = _figure(title, y_title, barmode="stack")
    times = sorted({t for points in series.values() for t, _ in points})
    as_categories = len(times) <= 2  # a date axis gives one or two bars the width of their bucket: unreadable
    any_partial = False
    for name, points in series.items():
        trace: dict[str, Any] = {"y": [v for _, v in points], "name": name}
        xs: list[Any] = [t for t, _ in points]
        if as_categories and buckets is not None:
            xs = [buckets.label(t) for t in xs]
        trace["x"] = xs
        marker: dict[str, Any] = {}
        colour = (colours or {}).get(name)
        if colour:
            marker["color"] = colour
        if buckets is not None:
            notes = [buckets.partial_note(t) for t, _ in points]
            any_partial = any_partial or any(notes)
            marker["opacity"] = [0.45 if note else 1.0 for note in notes]
            trace["customdata"] = [note or "" for note in notes]
            trace["hovertemplate"] = f"{name}: %{{y}}<br>%{{x}} %{{customdata}}<extra></extra>"
        if marker:
            trace["marker"] = marker
        figure.add_trace(go.Bar(**trace))
    if as_categories:
        figure.update_xaxes(type="category")
    elif buckets is not None:
        figure.update_xaxes(**buckets.axis(), **_bar_ticks(times, buckets))
    _partial_footnote(figure, any_partial)
    return figure


def _bar_ticks(times: Sequence[datetime], buckets: Buckets) -> dict[str, Any]:
    """A tick under each bar, labelled once (Plotly's own date ticks fall between bars and repeat days)."""
    step = -(-len(times) // MAX_TICKS)  # ceiling: at most MAX_TICKS ticks
    shown = list(times)[::step]
    return {"tickmode": "array", "tickvals": shown, "ticktext": [buckets.tick_label(t) for t in shown]}


def grouped_bars(
    title: str,
    y_title: str,
    categories: Sequence[str],
    series: Mapping[str, Sequence[float | None]],
    *,
    colours: Mapping[str, str] | None = None,
    category_colours: Mapping[str, str] | None = None,
    texts: Mapping[str, Sequence[str | None]] | None = None,
) -> go.Figure:
    """Bars per category, grouped by named series (e.g. cost per 1M tokens by fleet and model).

    ``colours``: per series; ``category_colours``: per bar of a single series (e.g. each fleet its own);
    ``texts``: a label on a bar (e.g. "in rent" where a value is not a price). A long category name is
    shortened on the axis (``fleet · DeepSeek-R1-…-Qwen-14B``) and given whole in the hover.
    """
    figure = _figure(title, y_title, barmode="group")
    shown = [short_compound(category) for category in categories]
    if len(set(shown)) < len(shown):
        shown = list(categories)
    for name, values in series.items():
        trace: dict[str, Any] = {"x": shown, "y": list(values), "name": name}
        if shown != list(categories):
            trace["customdata"] = list(categories)
            trace["hovertemplate"] = f"%{{customdata}}<br>{name}: %{{y}}<extra></extra>"
        if colours and name in colours:
            trace["marker"] = {"color": colours[name]}
        elif category_colours:
            trace["marker"] = {"color": [category_colours.get(c, FLEET_PALETTE[-1]) for c in categories]}
        if texts and name in texts:
            trace["text"] = [text or "" for text in texts[name]]
            trace["textposition"] = "outside"
        figure.add_trace(go.Bar(**trace))
    return figure


def scatter_points(
    title: str,
    x_title: str,
    y_title: str,
    points: Iterable[tuple[str, float | None, float | None]],
    *,
    colours: Mapping[str, str] | None = None,
) -> go.Figure:
    """Labelled points (e.g. each fleet's cost per 1M tokens against its P99 TTFT).

    A point's label and legend entry are its short name, the hover its full one. Labels stay inside the
    figure: the left-most point's reads rightwards, the right-most's leftwards, and the axes leave room above.
    Where two points lie close enough for their labels to overlap, the legend alone names them.
    """
    figure = _figure(title, y_title, x_title=x_title)
    points = list(points)
    xs = [x for _, x, _ in points if x is not None]
    ys = [y for _, _, y in points if y is not None]
    mode = "markers" if _crowded(points, xs, ys) else "markers+text"
    for label, x, y in points:
        marker: dict[str, Any] = {"size": 14}
        if colours and label in colours:
            marker["color"] = colours[label]
        short = short_compound(label)
        figure.add_trace(
            go.Scatter(
                x=[x], y=[y], name=short, mode=mode, text=[short], textposition=_text_side(x, xs),
                marker=marker, cliponaxis=False, customdata=[label],
                hovertemplate="%{customdata}<br>%{x:.4g}, %{y:.4g}<extra></extra>",
            )
        )  # fmt: skip
    # From zero, with room above the highest label and beside the extreme points.
    figure.update_xaxes(rangemode="tozero", **({"range": [0, max(xs) * 1.15]} if xs and max(xs) > 0 else {}))
    figure.update_yaxes(rangemode="tozero", **({"range": [0, max(ys) * 1.25]} if ys and max(ys) > 0 else {}))
    figure.update_layout(margin={"l": 70, "r": 30, "t": 50, "b": 40})
    return figure


def _crowded(
    points: Sequence[tuple[str, float | None, float | None]], xs: Sequence[float], ys: Sequence[float]
) -> bool:
    """Two points within a third of the x axis and a tenth of the y axis of each other: their labels would touch."""
    width, height = max(xs, default=0.0) or 1.0, max(ys, default=0.0) or 1.0
    placed = [(x, y) for _, x, y in points if x is not None and y is not None]
    return any(
        abs(a[0] - b[0]) < width / 3 and abs(a[1] - b[1]) < height / 10
        for n, a in enumerate(placed)
        for b in placed[n + 1 :]
    )


def _text_side(x: float | None, xs: Sequence[float]) -> str:
    """Where a point's label goes: rightwards in the left third of the axis, leftwards in the right third."""
    if x is None or not xs or max(xs) <= 0:
        return "top center"
    where = x / (max(xs) * 1.15)
    return "top right" if where < 1 / 3 else "top left" if where > 2 / 3 else "top center"


def pivot(
    rows: Iterable[Mapping[str, Any]], *, series_key: str, x_key: str, y_key: str
) -> dict[str, list[tuple[Any, Any]]]:
    """Group rows into named series of (x, y) points, x-sorted."""
    series: dict[str, list[tuple[Any, Any]]] = defaultdict(list)
    for row in rows:
        series[str(row[series_key])].append((row[x_key], row[y_key]))
    return {name: sorted(points, key=lambda p: p[0]) for name, points in sorted(series.items())}


def organization_fleet_colours(organization: Organization | None) -> dict[str, str]:
    """Each fleet's colour by name: the same on every page (the organization's fleets in order of creation)."""
    if organization is None:
        return {}
    names = Fleet.objects.filter(organization=organization).order_by("pk").values_list("name", flat=True)
    return fleet_colours(list(names))
