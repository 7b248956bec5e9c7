"""TTFT under a scenario, read from each fleet's measured latency-by-load curve (pure: no framework).

A fleet's curve for one LLM model: its measured hours binned by load (requests per
second per GPU of the fleet, ``requests / (gpu_h x 3600)``; bands doubling from
0.25, as placement advice bins them), each band's TTFT histograms merged. When a
routing moves requests onto a fleet, each hour's load there rises; that hour's
requests (its own and the moved ones) take the histogram of the band the new load
falls in. A band never measured borrows the next measured band above it (a
pessimistic reading); a load above every measured band takes the highest one and is
counted as beyond what was measured (its TTFT is then a lower bound). Hours the
routing does not touch keep their own measured histograms.

Histograms mix with fractional weights: each part is scaled to the requests it
stands for (counts x weight x 1000, rounded), so quantiles of the mix are exact to
a thousandth of a request.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal

from accounting.ledger.units import ONE, S_PER_H, ZERO
from accounting.scenarios.changes import RoutingChange
from telemetry.histogram import Histogram, histogram_coarsen, histogram_merge

BAND_EDGES_RPS_PER_GPU = (0.0, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0)
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
        """One endpoint-hour: kind, prompt and generation tokens, requests, TTFT bounds and per-bucket counts."""
        kind, prompt, generation, requests, bounds, counts = row
        self.prompt_tokens += prompt
        self.generation_tokens += generation
        served = self.hours.get(hour)
        if served is None:
            served = self.hours[hour] = HourServed()
        served.requests += requests
        if kind == "tgi":  # TGI's histogram is a lower bound of TTFT (queue time excluded): not mixed in
            self.lower_bound_only = True
        elif counts and len(counts) == len(bounds) + 1:
            _layouts_add(served.histograms, bounds, counts)
            _layouts_add(self._histogram, bounds, counts)

    def histogram(self) -> Histogram | None:
        """The period's TTFT histogram; ``None`` when none was measured."""
        return _histogram(self._histogram)

    def bands(self, gpu_h: Mapping[datetime, Decimal]) -> dict[int, Histogram]:
        """The latency-by-load curve: per load band, the merged histograms of the hours measured in it."""
        layouts: dict[int, Layouts] = defaultdict(dict)
        for hour, served in self.hours.items():
            held = gpu_h.get(hour, ZERO)
            if held > 0 and served.histograms:
                band = band_of(served.requests / (float(held) * float(S_PER_H)))
                for bounds, counts in served.histograms.items():
                    _layouts_add(layouts[band], list(bounds), counts)
        return {band: h for band, parts in layouts.items() if (h := _histogram(parts)) is not None}


def band_of(rps_per_gpu: float) -> int:
    """The index of the load band holding ``rps_per_gpu``."""
    return max(bisect.bisect_right(BAND_EDGES_RPS_PER_GPU, rps_per_gpu) - 1, 0)


def band_histogram(bands: Mapping[int, Histogram], band: int) -> tuple[Histogram, bool]:
    """The band's histogram, else the next measured band above; above all: the highest, flagged beyond."""
    above = [b for b in bands if b >= band]
    if above:
        return bands[min(above)], False
    return bands[max(bands)], True


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
    gpu_h: Mapping[int, Mapping[datetime, Decimal]],
) -> TtftMix:
    """The model's TTFT as measured (every fleet's histograms) and as the scenario's traffic would see it.

    ``tokens``: the scenario's output tokens per (fleet, model); ``routed``: output
    tokens each routing moved; ``gpu_h``: per fleet, its GPU-hours by hour.
    """
    hists = {key: u.histogram() for key, u in usage.items() if key[1] == llm_model}
    measured: Parts = [(h, ONE) for h in hists.values() if h is not None]
    routes = {c: moved for c, moved in routed.items() if c.llm_model == llm_model}
    targets = {c.to_fleet for c in routes}
    parts: Parts = []
    for (fleet, model), served in usage.items():
        histogram = hists.get((fleet, model))
        if fleet not in targets and histogram is not None and served.generation_tokens:
            parts.append((histogram, tokens[(fleet, model)][0] / served.generation_tokens))
    beyond = 0
    for target in targets:
        arriving = {c: moved for c, moved in routes.items() if c.to_fleet == target}
        target_parts, target_beyond = _target_parts(target, llm_model, arriving, usage, tokens, gpu_h.get(target, {}))
        parts += target_parts
        beyond += target_beyond
    return TtftMix(_weighted_merge(measured), _weighted_merge(parts), beyond)


def _moved_by_hour(
    arriving: Mapping[RoutingChange, Decimal], usage: Mapping[tuple[int, str], ModelUsage]
) -> dict[datetime, tuple[Decimal, Decimal]]:
    """Per hour: requests moved onto the target, and the histogram counts they stand for."""
    moved: dict[datetime, tuple[Decimal, Decimal]] = defaultdict(lambda: (ZERO, ZERO))
    for change, tokens in arriving.items():
        source = usage[(change.from_fleet, change.llm_model)]
        share = tokens / source.generation_tokens
        for hour, served in source.hours.items():
            counted = sum(sum(c) for c in served.histograms.values())
            requests, histogram = moved[hour]
            moved[hour] = (requests + served.requests * share, histogram + counted * share)
    return moved


def _target_parts(
    target: int,
    llm_model: str,
    arriving: Mapping[RoutingChange, Decimal],
    usage: Mapping[tuple[int, str], ModelUsage],
    tokens: Mapping[tuple[int, str], tuple[Decimal, Decimal]],
    gpu_h: Mapping[datetime, Decimal],
) -> tuple[Parts, int]:
    """The target fleet's requests, its own and the moved ones, hour by hour, on its latency-by-load curve."""
    served = usage.get((target, llm_model))
    bands = served.bands(gpu_h) if served is not None else {}
    if served is None or not bands:
        return [(None, ONE)], 0  # no measured curve to read the moved requests' TTFT from
    moved_in = sum(arriving.values(), ZERO)
    own_ratio = (tokens[(target, llm_model)][0] - moved_in) / served.generation_tokens
    moved = _moved_by_hour(arriving, usage)
    parts: Parts = []
    beyond = 0
    for hour in set(served.hours) | set(moved):
        here = served.hours.get(hour, HourServed())
        own_counted = Decimal(sum(sum(c) for c in here.histograms.values())) * own_ratio
        moved_requests, moved_counted = moved.get(hour, (ZERO, ZERO))
        if not moved_counted:
            if own_counted:
                parts.append((_histogram(here.histograms), own_ratio))
            continue
        held = gpu_h.get(hour, ZERO)
        load = (Decimal(here.requests) + moved_requests / (own_ratio or ONE)) / (held * S_PER_H) if held else None
        histogram, past = band_histogram(bands, band_of(float(load))) if load is not None else (bands[max(bands)], True)
        beyond += past
        parts.append((histogram, (own_counted + moved_counted) / histogram.total))
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
