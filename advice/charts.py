"""The advice page's figure: each measured load curve's TTFT quantile against load (Plotly, built in Python)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import plotly.graph_objects as go

from common.charts import fleet_model_colours
from common.labels import short_compound
from reports.bands import LoadCurve


def load_curve_figure(curves: Sequence[LoadCurve], *, percentile: int, colours: Mapping[str, str]) -> go.Figure:
    """TTFT P<percentile> (ms) per band against the band's mean load (req/s per GPU), one line per curve.

    Only bands with a measured histogram are drawn; the hover gives the band's hours and the bucket. Each
    fleet in its colour, each of its LLM models a shade of it; the legend names a model short, the hover whole.
    """
    figure = go.Figure()
    shades = fleet_model_colours([(curve.fleet_name, curve.key.llm_model or None) for curve in curves], colours)
    for curve in curves:
        points = [
            (band.rps_per_gpu, seconds * 1000, band.hours)
            for band in curve.bands
            if band.ttft_basis == "measured" and (seconds := band.ttft_quantile_s(percentile / 100)) is not None
        ]
        if not points:
            continue
        label = f"{curve.fleet_name} · {curve.key.gpu_model}" + (
            f" · {curve.key.llm_model}" if curve.key.llm_model else ""
        )
        figure.add_trace(
            go.Scatter(
                x=[x for x, _, _ in points],
                y=[y for _, y, _ in points],
                customdata=[hours for _, _, hours in points],
                name=short_compound(label),
                mode="lines+markers",
                line={"color": shades[(curve.fleet_name, curve.key.llm_model or None)]},
                hovertemplate="%{x:.3g} req/s per GPU: %{y:.0f} ms (%{customdata} h)<extra>" + label + "</extra>",
            )
        )
    figure.update_layout(
        title={"text": f"Measured TTFT P{percentile} against load", "x": 0.01},
        xaxis_title="requests/s per GPU (band mean)",
        yaxis_title=f"TTFT P{percentile} (ms)",
        height=360,
        margin={"l": 70, "r": 30, "t": 50, "b": 50},
        legend={"orientation": "h", "y": -0.25},
    )
    figure.update_xaxes(automargin=True)
    figure.update_yaxes(automargin=True)
    figure.update_xaxes(rangemode="tozero")
    figure.update_yaxes(rangemode="tozero")
    return figure
