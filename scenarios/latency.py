"""TTFT under a scenario, read from each fleet's measured latency-by-load curve (pure: no framework).

A fleet's curve for one LLM model: its measured hours binned by load (requests per
second per GPU, ``requests / (gpu_h x 3600)``, ``gpu_h`` the model's share of the
fleet's GPU-hours in that hour by ``reports.sharing``'s rule, as the load
curves share them: by output tokens, node-hours without any no model's), each band's TTFT
histograms merged, with the load bands of placement advice (``reports.bands``:
its edges, and its reading of a load). When a routing moves requests onto a fleet,
each hour's load there rises; that hour's requests (its own and the moved ones) take
the histogram of the band the new load is read on (``bands.band_read``, the advisor's
reading): the lightest band whose highest measured load reaches it, so a load between
two measured bands borrows the heavier one (a pessimistic reading), and a load above
every measured load takes the heaviest band and is counted as beyond what was measured
(its TTFT is then a lower bound). Hours the routing does not touch keep their own
measured histograms.

Histograms mix with fractional weights: each part is scaled to the requests it
stands for (counts x weight x 1000, rounded), so quantiles of the mix are exact to
a thousandth of a request.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal

from accounting.ledger.units import ONE, S_PER_H, ZERO
from reports.bands import DEFAULT_BAND_EDGES_RPS_PER_GPU, band_index, band_read
from scenarios.changes import RoutingChange
from telemetry.histogram import Histogram, histogram_coarsen, histogram_merge

_WEIGHT_SCALE = 1000

Layouts = dict[tuple[float, ...], list[int]]  # per-bucket counts by bucket bounds


def _layouts_add(layouts: Layouts, bounds: list[float], counts: list[int]) -> None:
    key = tuple(float(b) for b in bounds)
    held = layouts.get(key)
    layouts[key] = [a + b for a, b in zip(held, counts, strict=True)] if held else list(counts)


def _histogram(layouts: Layouts) -> Histogram | None:
    merged = histogram_merge([Histogram(bounds, tuple(counts)) for bounds, counts in layouts.items()], coarsen=True)
    return merged if merged is not None and merged.total else None


@dataclass
class HourServed:
    requests: int = 0
    gpu_h: Decimal = ZERO  # the model's share of the fleet's GPU-hours (``reports.sharing``)
    histograms: Layouts = field(default_factory=dict)


@dataclass
class ModelUsage:
    """One LLM model's output on one fleet over the period: tokens, and per hour requests and TTFT histograms."""

    prompt_tokens: int = 0
    generation_tokens: int = 0
    hours: dict[datetime, HourServed] = field(default_factory=dict)
    lower_bound_only: bool = False
    _histogram: Layouts = field(default_factory=dict)

    def add(self, hour: datetime, row: tuple) -> None:
        """One endpoint-hour: kind, prompt and generation tokens, requests, TTFT bounds and per-bucket counts, and
        its share of its node-hour's GPU-hours."""
        kind, prompt, generation, requests, bounds, counts, gpu_h = row
        self.prompt_tokens += prompt
        self.generation_tokens += generation
        served = self.hours.get(hour)
        if served is None:
            served = self.hours[hour] = HourServed()
        served.requests += requests
        served.gpu_h += gpu_h
        if kind == "tgi":  # TGI's histogram is a lower bound of TTFT (queue time excluded): not mixed in
            self.lower_bound_only = True
        elif counts and len(counts) == len(bounds) + 1:
            _layouts_add(served.histograms, bounds, counts)
            _layouts_add(self._histogram, bounds, counts)

    def histogram(self) -> Histogram | None:
        """The period's TTFT histogram; ``None`` when none was measured."""
        return _histogram(self._histogram)

    def bands(self) -> list[LatencyBand]:
        """The latency-by-load curve: per load band (ascending), the merged histograms of the hours measured in it
        and the highest load measured there."""
        layouts: dict[int, Layouts] = defaultdict(dict)
        highest: dict[int, float] = defaultdict(float)
        for served in self.hours.values():
            if served.gpu_h > 0 and served.histograms:
                load = served.requests / (float(served.gpu_h) * float(S_PER_H))
                band = band_index(load)
                highest[band] = max(highest[band], load)
                for bounds, counts in served.histograms.items():
                    _layouts_add(layouts[band], list(bounds), counts)
        return [
            LatencyBand(DEFAULT_BAND_EDGES_RPS_PER_GPU[band], highest[band], h)
            for band, parts in sorted(layouts.items())
            if (h := _histogram(parts)) is not None
        ]


@dataclass(frozen=True)
class LatencyBand:
    """One band of a latency-by-load curve: where its range starts, the highest load measured in it (requests/s
    per GPU) and its merged TTFT histogram; read with ``reports.bands.band_read``."""

    low_rps_per_gpu: float
    max_rps_per_gpu: float
    ttft: Histogram


def ttft_at_load(bands: Sequence[LatencyBand], rps_per_gpu: float) -> tuple[Histogram, bool]:
    """The TTFT histogram a load is read on (``bands.band_read``, the advisor's reading), and whether the load lies
    beyond every measured load. ``bands``: a curve's, ascending, not empty."""
    reading = band_read(bands, rps_per_gpu)
    return reading.band.ttft, reading.beyond_measured_range


@dataclass(frozen=True)
class TtftMix:
    """A model's TTFT histogram as measured and under the scenario; hours read beyond the measured loads."""

    measured: Histogram | None
    scenario: Histogram | None
    hours_beyond_measured_load: int = 0


Parts = list[tuple[Histogram | None, Decimal]]


def ttft_mix(
    llm_model: str,
    *,
    usage: Mapping[tuple[int, str], ModelUsage],
    tokens: Mapping[tuple[int, str], tuple[Decimal, Decimal]],
    routed: Mapping[RoutingChange, Decimal],
) -> TtftMix:
    """The model's TTFT as measured (every fleet's histograms) and as the scenario's traffic would see it.

    ``tokens``: the scenario's output tokens per (fleet, model); ``routed``: output
    tokens each routing moved.
    """
    hists = {key: u.histogram() for key, u in usage.items() if key[1] == llm_model}
    measured: Parts = [(h, ONE) for h in hists.values() if h is not None]
    routes = {c: moved for c, moved in routed.items() if c.llm_model == llm_model}
    touched = {c.to_fleet for c in routes} | {c.from_fleet for c in routes}
    parts: Parts = []
    for (fleet, model), histogram in hists.items():
        served = usage[(fleet, model)]
        if fleet not in touched and histogram is not None and served.generation_tokens:
            parts.append((histogram, tokens[(fleet, model)][0] / served.generation_tokens))
    beyond = 0
    for fleet in touched:
        flows = _Flows.of(fleet, routes, usage)
        fleet_parts, past = _touched_parts(fleet, llm_model, flows, usage, tokens)
        parts += fleet_parts
        beyond += past
    return TtftMix(_weighted_merge(measured), _weighted_merge(parts), beyond)


Moved = dict[datetime, tuple[Decimal, Decimal]]  # per hour: requests, and the histogram counts they stand for


@dataclass(frozen=True)
class _Flows:
    """The requests routed onto and off one fleet, per hour, and the output tokens in all."""

    inflow: Moved
    outflow: Moved
    tokens_in: Decimal
    tokens_out: Decimal

    @classmethod
    def of(
        cls, fleet: int, routes: Mapping[RoutingChange, Decimal], usage: Mapping[tuple[int, str], ModelUsage]
    ) -> _Flows:
        arriving = {c: moved for c, moved in routes.items() if c.to_fleet == fleet}
        leaving = {c: moved for c, moved in routes.items() if c.from_fleet == fleet}
        return cls(
            _moved_by_hour(arriving, usage),
            _moved_by_hour(leaving, usage),
            sum(arriving.values(), ZERO),
            sum(leaving.values(), ZERO),
        )


def _moved_by_hour(routes: Mapping[RoutingChange, Decimal], usage: Mapping[tuple[int, str], ModelUsage]) -> Moved:
    """Per hour: the requests the routings move (as their sources served them), and their histogram counts."""
    moved: Moved = defaultdict(lambda: (ZERO, ZERO))
    for change, tokens in routes.items():
        source = usage[(change.from_fleet, change.llm_model)]
        share = tokens / source.generation_tokens
        for hour, served in source.hours.items():
            counted = sum(sum(c) for c in served.histograms.values())
            requests, histogram = moved[hour]
            moved[hour] = (requests + served.requests * share, histogram + counted * share)
    return moved


def _touched_parts(
    fleet: int,
    llm_model: str,
    flows: _Flows,
    usage: Mapping[tuple[int, str], ModelUsage],
    tokens: Mapping[tuple[int, str], tuple[Decimal, Decimal]],
) -> tuple[Parts, int]:
    """A fleet that routing adds requests to or takes them from, hour by hour, on its latency-by-load curve:
    an hour whose load changed takes the histogram of the band of its new load."""
    served = usage.get((fleet, llm_model))
    if served is None or not served.generation_tokens:
        return ([(None, ONE)] if flows.inflow else []), 0  # no measured curve of the model on this fleet
    bands = served.bands()
    # The fleet's own scaling (nodes added or removed): its scenario tokens before the routings.
    ratio = (tokens[(fleet, llm_model)][0] - flows.tokens_in + flows.tokens_out) / served.generation_tokens
    parts: Parts = []
    beyond = 0
    for hour in set(served.hours) | set(flows.inflow):
        here = served.hours.get(hour, HourServed())
        counted = Decimal(sum(sum(c) for c in here.histograms.values()))
        in_requests, in_counted = flows.inflow.get(hour, (ZERO, ZERO))
        out_requests, out_counted = flows.outflow.get(hour, (ZERO, ZERO))
        scenario_counted = counted * ratio + in_counted - out_counted
        if scenario_counted <= 0:
            continue
        if not in_counted and not out_counted:
            parts.append((_histogram(here.histograms), ratio))
            continue
        held = here.gpu_h * ratio
        if not bands:  # no curve: the moved-in requests are unknown, the rest keep the hour's histogram
            parts.append((None, ONE) if in_counted else (_histogram(here.histograms), scenario_counted / counted))
            continue
        if held <= 0:
            histogram, past = bands[-1].ttft, True
        else:
            requests = Decimal(here.requests) * ratio + in_requests - out_requests
            histogram, past = ttft_at_load(bands, float(requests / (held * S_PER_H)))
        beyond += past and bool(in_counted)
        parts.append((histogram, scenario_counted / histogram.total))
    return parts, beyond


def _weighted_merge(parts: Parts) -> Histogram | None:
    """The weighted sum of histograms on their shared bounds; ``None`` if any weighted part is unmeasured."""
    weighted = [(h, w) for h, w in parts if w]
    if not weighted or any(h is None for h, _ in weighted):
        return None
    histograms = [h for h, _ in weighted if h is not None]
    bounds = tuple(sorted(set.intersection(*(set(h.bounds_s) for h in histograms))))
    counts = [0] * (len(bounds) + 1)
    for histogram, weight in ((h, w) for h, w in weighted if h is not None):
        common = histogram if histogram.bounds_s == bounds else histogram_coarsen(histogram, bounds)
        for index, count in enumerate(common.counts):
            counts[index] += round(count * weight * _WEIGHT_SCALE)
    return Histogram(bounds, tuple(counts))
