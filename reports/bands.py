"""Load curves as pure arithmetic: a fleet's measured latency, throughput, cost, energy and carbon by load.

A curve belongs to one fleet x GPU model x LLM model. Its points are fleet-hours:
in one UTC hour, the requests, output tokens and TTFT histogram of every endpoint
serving that LLM model on the fleet's nodes, beside the ledger figures of those
node-hours. Load is requests per second per GPU (``requests / (gpu_h x 3600)``).
Hours are binned into load bands; per band the histograms merge (bucket layouts
coarsened onto their shared bounds, exact) and the figures add up.

Allocation: a node-hour serving several LLM models shares its GPU-hours, cost,
energy and carbon among them by ``reports.sharing``'s rule, the
comparison's: in proportion to their output tokens. A node-hour without output
tokens is no model's (the comparison's idle row): it has no load and no band, so a
model's bands add up to its comparison row.

Gaps: an hour with no known grid intensity leaves the known part of operational carbon, with
its coverage (the share of facility kWh with a known intensity), and GPU-hours of a model without
an embodied figure are counted (``embodied_unknown_gpu_h``). Carbon per output token follows the
rule of every report (``accounting.ledger.totals.carbon_per_token_complete``): withheld (``None``)
while any of its kWh has no intensity, or, where embodied carbon is part of it, any GPU-hour no
embodied figure, with the reason beside it (``carbon_per_token_gaps``), so that a band and the
comparison row of the same hours give one answer. Node-hours with no price,
asset or tariff in force (the reports' unpriced hours) are counted per band: their cost is
missing from the sums, so a cost per token over them is a lower bound.

Units: loads in requests/s per GPU, TTFT in seconds (``*_s``), money as
``Decimal`` in the fleet's currency, energy in kWh and carbon in gCO2e as
``Decimal`` sums. Nothing here imports Django.
"""

from __future__ import annotations

import bisect
import itertools
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any, Generic, Protocol, TypeVar

from accounting.ledger.totals import carbon_per_token_complete, carbon_per_token_gaps
from accounting.ledger.units import per_1m
from reports.sharing import output_token_share, takes_share
from telemetry.histogram import Histogram, histogram_merge, histogram_quantile, histogram_quantile_bucket

# Band edges, requests/s per GPU: doubling from 0.25, the last band open-ended. An 8B-class model
# at 200 output tokens per request does ~15 req/s per RTX 4090 and ~30 per H100 at full load.
DEFAULT_BAND_EDGES_RPS_PER_GPU: tuple[float, ...] = (0.0, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0)
S_PER_H = 3600
J_PER_KWH = 3.6e6
ZERO = Decimal(0)
ONE = Decimal(1)

MEASURED = "measured"
LOWER_BOUND = "lower_bound"  # TGI's queue-time histogram: a lower bound of TTFT


@dataclass(frozen=True, slots=True)
class CurveKey:
    fleet_id: int
    gpu_model: str
    llm_model: str


@dataclass(frozen=True, slots=True)
class EndpointHour:
    """One endpoint-hour of serving: what ``telemetry.EndpointHourUsage`` holds, keyed by node."""

    node_id: int
    hour_start: datetime
    llm_model: str
    requests: int
    generation_tokens: int
    ttft: Histogram | None = None
    ttft_lower_bound: bool = False  # the histogram is TGI's queue time, a lower bound of TTFT


@dataclass(frozen=True, slots=True)
class NodeHour:
    """One ledger line (node-hour): the figures shared among the LLM models served on it."""

    node_id: int
    hour_start: datetime
    fleet_id: int
    gpu_model: str
    currency: str
    gpu_h: Decimal
    cost: Decimal
    it_kwh: Decimal
    facility_kwh: Decimal
    operational_co2e_g: Decimal | None  # location-based; None: no intensity known
    embodied_co2e_g: Decimal  # central estimate
    unpriced: bool = False  # no price, asset or tariff in force: the cost lacks that part
    # The line's output tokens, the shares' denominator (the ledger's: its endpoints'); None: the sum of its
    # endpoint-hours given to ``load_hours`` (lines built by hand).
    generation_tokens: int | None = None
    embodied_unknown_gpu_h: Decimal = ZERO  # GPU-hours of models without an embodied figure: not in embodied_co2e_g


@dataclass(frozen=True, slots=True, kw_only=True)
class _Additive:
    """The figures that add up over fleet-hours and over bands (``_summed``), and the load they give."""

    requests: int
    generation_tokens: int
    gpu_h: Decimal
    cost: Decimal
    it_kwh: Decimal
    facility_kwh: Decimal
    operational_co2e_g: Decimal | None  # the known part; None: no intensity known in any of its kWh
    embodied_co2e_g: Decimal  # central estimate
    unknown_intensity_kwh: Decimal = ZERO  # facility kWh with no known intensity: not in operational_co2e_g
    embodied_unknown_gpu_h: Decimal = ZERO  # GPU-hours of models without an embodied figure: not in embodied_co2e_g
    unpriced_node_hours: int = 0  # node-hours with no price in force: missing from cost (a lower bound)

    @property
    def rps_per_gpu(self) -> float:
        """Mean load: requests over GPU-seconds."""
        return self.requests / (float(self.gpu_h) * S_PER_H) if self.gpu_h > 0 else 0.0


@dataclass(frozen=True, slots=True)
class LoadHour(_Additive):
    """One fleet-hour of one LLM model: summed over the fleet's nodes serving it."""

    key: CurveKey
    currency: str
    hour_start: datetime
    ttft: Histogram | None = None
    ttft_lower_bound: Histogram | None = None


@dataclass(frozen=True, slots=True)
class CurveBand(_Additive):
    """The hours of one curve whose load fell in ``[low_rps_per_gpu, high_rps_per_gpu)``."""

    low_rps_per_gpu: float
    high_rps_per_gpu: float | None  # None: open-ended
    hours: int
    max_rps_per_gpu: float  # the highest load measured in the band: nothing above it is known
    ttft: Histogram | None
    ttft_basis: str | None  # "measured", "lower_bound" (TGI only), or None: no histogram

    @property
    def operational_coverage(self) -> float:
        """Share (0-1) of the band's facility kWh with a known intensity (1 without energy)."""
        if self.facility_kwh <= 0:
            return 1.0
        return float(max(ONE - self.unknown_intensity_kwh / self.facility_kwh, ZERO))

    @property
    def output_tokens_per_s_per_gpu(self) -> float:
        return self.generation_tokens / (float(self.gpu_h) * S_PER_H) if self.gpu_h > 0 else 0.0

    def ttft_quantile_s(self, q: float) -> float | None:
        return None if self.ttft is None else histogram_quantile(q, self.ttft)

    def ttft_quantile_bucket_s(self, q: float) -> tuple[float, float | None] | None:
        return None if self.ttft is None else histogram_quantile_bucket(q, self.ttft)

    @property
    def cost_per_1m_output_tokens(self) -> Decimal | None:
        return per_1m(self.cost, self.generation_tokens)

    @property
    def it_j_per_output_token(self) -> float | None:
        return float(self.it_kwh) * J_PER_KWH / self.generation_tokens if self.generation_tokens else None

    @property
    def facility_kwh_per_1m_output_tokens(self) -> float | None:
        return _float(per_1m(self.facility_kwh, self.generation_tokens))

    # Carbon per output token: withheld while any part of it is unknown (``carbon_per_token_complete``).

    @property
    def operational_gco2e_per_1m_output_tokens(self) -> float | None:
        """Location-based gCO2e per 1M output tokens; None without output tokens, and where some kWh have no
        intensity (``operational_coverage`` < 1)."""
        if not carbon_per_token_complete(unknown_intensity_kwh=self.unknown_intensity_kwh):
            return None
        return _float(per_1m(self._operational_g, self.generation_tokens))

    @property
    def embodied_gco2e_per_1m_output_tokens(self) -> float | None:
        """Embodied gCO2e (central) per 1M output tokens; None without output tokens, and where some GPU-hours
        have no embodied figure."""
        if not carbon_per_token_complete(embodied_unknown_gpu_h=self.embodied_unknown_gpu_h):
            return None
        return _float(per_1m(self.embodied_co2e_g, self.generation_tokens))

    @property
    def gco2e_per_1m_output_tokens(self) -> float | None:
        """Operational (location-based) plus embodied gCO2e per 1M output tokens; None where either is withheld."""
        complete = carbon_per_token_complete(
            unknown_intensity_kwh=self.unknown_intensity_kwh, embodied_unknown_gpu_h=self.embodied_unknown_gpu_h
        )
        if not complete:
            return None
        return _float(per_1m(self._operational_g + self.embodied_co2e_g, self.generation_tokens))

    @property
    def carbon_per_token_gaps(self) -> tuple[str, ...]:
        """Why the band's carbon per output token is withheld (the reports' words); empty where it is stated."""
        return carbon_per_token_gaps(
            facility_kwh=self.facility_kwh,
            unknown_intensity_kwh=self.unknown_intensity_kwh,
            embodied_unknown_gpu_h=self.embodied_unknown_gpu_h,
        )

    @property
    def _operational_g(self) -> Decimal:
        # None only where no kWh had an intensity: then either some kWh are unknown, or there are none.
        return ZERO if self.operational_co2e_g is None else self.operational_co2e_g


def _float(value: Decimal | None) -> float | None:
    return None if value is None else float(value)


@dataclass(frozen=True, slots=True)
class LoadCurve:
    """One fleet x GPU model x LLM model: its bands (ascending load, only those with hours)."""

    key: CurveKey
    fleet_name: str
    gpu_class: str | None  # "enterprise" / "consumer" (the GPU profile's class), None if unknown
    currency: str
    # GPUs that served the model in its busiest hour (a node serving several models shares its GPU-hours
    # among them by output tokens): the GPUs the advisor spreads the class's load over. Fractional, not
    # rounded: the load per GPU is per GPU-hour of that share, so capacity = load x this share.
    gpu_count: float
    bands: tuple[CurveBand, ...]
    first_hour: datetime | None = None
    last_hour: datetime | None = None

    @property
    def hours(self) -> int:
        return sum(band.hours for band in self.bands)

    @property
    def requests(self) -> int:
        return sum(band.requests for band in self.bands)

    @property
    def generation_tokens(self) -> int:
        return sum(band.generation_tokens for band in self.bands)

    @property
    def output_tokens_per_request(self) -> float | None:
        return self.generation_tokens / self.requests if self.requests else None

    @property
    def whole(self) -> CurveBand:
        """Every hour of the curve as one band (its overall figures)."""
        return bands_merge(self.bands)


def band_index(rps_per_gpu: float, edges: Sequence[float] = DEFAULT_BAND_EDGES_RPS_PER_GPU) -> int:
    """The band holding a load: ``edges[i] <= load < edges[i + 1]``, the last band open-ended."""
    return max(bisect.bisect_right(edges, rps_per_gpu) - 1, 0)


class MeasuredBand(Protocol):
    """What reading a load needs of a band: where its range starts, and the highest load measured in it."""

    @property
    def low_rps_per_gpu(self) -> float: ...

    @property
    def max_rps_per_gpu(self) -> float: ...


_Band = TypeVar("_Band", bound=MeasuredBand)


@dataclass(frozen=True, slots=True)
class BandReading(Generic[_Band]):
    """The band a load is read on, and how far the reading stands from what was measured."""

    band: _Band
    beyond_measured_range: bool  # above every measured load: read on the heaviest band, its TTFT a lower bound
    between_measured_loads: bool  # below the band read, above the lighter one's highest: its TTFT an upper bound


def band_read(bands: Sequence[_Band], rps_per_gpu: float) -> BandReading[_Band]:
    """The band a load is read on: the lightest whose highest *measured* load reaches it.

    Nothing is extrapolated past a measured load: a load between two measured bands
    (above one band's highest load, below the next band's) is read on the heavier
    band, whose TTFT bounds it from above, never on the lighter one's (which would
    promise too little); a load above every measured band is read on the heaviest and
    said to be beyond the measured range. ``bands``: ascending, not empty (the
    advisor passes the bands it trusts, the scenarios every band with a histogram).
    """
    band = next((b for b in bands if b.max_rps_per_gpu >= rps_per_gpu), bands[-1])
    beyond = rps_per_gpu > band.max_rps_per_gpu
    between = not beyond and rps_per_gpu < band.low_rps_per_gpu and band is not bands[0]
    return BandReading(band, beyond, between)


def load_hours(endpoint_hours: Iterable[EndpointHour], node_hours: Iterable[NodeHour]) -> list[LoadHour]:
    """Fleet-hours per LLM model; endpoint-hours without a ledger line (no GPU count yet), and those without
    output tokens (no share of their line: ``sharing.takes_share``), are left out."""
    lines = {(line.node_id, line.hour_start): line for line in node_hours}
    served: dict[tuple[int, datetime], list[EndpointHour]] = defaultdict(list)
    for usage in endpoint_hours:
        if (usage.node_id, usage.hour_start) in lines and takes_share(usage.generation_tokens):
            served[(usage.node_id, usage.hour_start)].append(usage)
    return load_hours_merge(
        part for node_hour, usages in served.items() for part in _node_hour_parts(lines[node_hour], usages)
    )


def load_hours_merge(parts: Iterable[LoadHour]) -> list[LoadHour]:
    """Parts of fleet-hours (node-hours, or sums of them read elsewhere) added up per curve, currency and hour."""
    grouped: dict[tuple[CurveKey, str, datetime], list[LoadHour]] = defaultdict(list)
    for part in parts:
        grouped[(part.key, part.currency, part.hour_start)].append(part)
    return [_load_hour_sum(hours) for hours in grouped.values()]


def _node_hour_parts(line: NodeHour, usages: list[EndpointHour]) -> list[LoadHour]:
    """The line's parts per LLM model, each its ``sharing.output_token_share`` of the line."""
    per_model: dict[str, list[EndpointHour]] = defaultdict(list)
    for usage in usages:
        per_model[usage.llm_model].append(usage)
    line_tokens = line.generation_tokens
    if line_tokens is None:
        line_tokens = sum(usage.generation_tokens for usage in usages)
    parts = []
    for model, models in per_model.items():
        share = output_token_share(sum(u.generation_tokens for u in models), line_tokens)
        if share is not None:
            parts.append(_part(line, model, models, share))
    return parts


def _part(line: NodeHour, model: str, usages: list[EndpointHour], share: Decimal) -> LoadHour:
    measured = [u.ttft for u in usages if u.ttft is not None and not u.ttft_lower_bound]
    lower = [u.ttft for u in usages if u.ttft is not None and u.ttft_lower_bound]
    return LoadHour(
        key=CurveKey(line.fleet_id, line.gpu_model, model),
        currency=line.currency,
        hour_start=line.hour_start,
        requests=sum(u.requests for u in usages),
        generation_tokens=sum(u.generation_tokens for u in usages),
        gpu_h=line.gpu_h * share,
        cost=line.cost * share,
        it_kwh=line.it_kwh * share,
        facility_kwh=line.facility_kwh * share,
        operational_co2e_g=None if line.operational_co2e_g is None else line.operational_co2e_g * share,
        embodied_co2e_g=line.embodied_co2e_g * share,
        ttft=histogram_merge(measured, coarsen=True),
        ttft_lower_bound=histogram_merge(lower, coarsen=True),
        unknown_intensity_kwh=line.facility_kwh * share if line.operational_co2e_g is None else ZERO,
        embodied_unknown_gpu_h=line.embodied_unknown_gpu_h * share,
        unpriced_node_hours=int(line.unpriced),
    )


def _load_hour_sum(hours: list[LoadHour]) -> LoadHour:
    if len(hours) == 1:
        return hours[0]
    first = hours[0]
    return LoadHour(
        key=first.key,
        currency=first.currency,
        hour_start=first.hour_start,
        ttft=histogram_merge((h.ttft for h in hours if h.ttft is not None), coarsen=True),
        ttft_lower_bound=histogram_merge((h.ttft_lower_bound for h in hours if h.ttft_lower_bound), coarsen=True),
        **_summed(hours),
    )


def _known_sum(values: Iterable[Decimal | None]) -> Decimal | None:
    """The sum of the known values; None only when none is known (their coverage says how much is)."""
    known = [value for value in values if value is not None]
    return sum(known, ZERO) if known else None


def curves_build(
    hours: Iterable[LoadHour],
    *,
    fleet_names: dict[int, str],
    gpu_classes: dict[str, str | None],
    edges: Sequence[float] = DEFAULT_BAND_EDGES_RPS_PER_GPU,
) -> list[LoadCurve]:
    """One curve per fleet x GPU model x LLM model (and currency), ordered by fleet name, GPU and LLM model."""
    _edges_check(edges)
    grouped: dict[tuple[CurveKey, str], dict[int, list[LoadHour]]] = defaultdict(lambda: defaultdict(list))
    for hour in hours:
        grouped[(hour.key, hour.currency)][band_index(hour.rps_per_gpu, edges)].append(hour)
    curves = []
    for (key, currency), by_band in grouped.items():
        bands = tuple(_band_of(edges[i], _upper(edges, i), by_band[i]) for i in sorted(by_band))
        stamps = [hour.hour_start for band_hours in by_band.values() for hour in band_hours]
        curves.append(
            LoadCurve(
                key=key,
                fleet_name=fleet_names.get(key.fleet_id, str(key.fleet_id)),
                gpu_class=gpu_classes.get(key.gpu_model),
                currency=currency,
                gpu_count=_gpus_serving(by_band.values()),
                bands=bands,
                first_hour=min(stamps),
                last_hour=max(stamps),
            )
        )
    return sorted(curves, key=lambda c: (c.fleet_name, c.key.fleet_id, c.key.gpu_model, c.key.llm_model, c.currency))


def _gpus_serving(hours_by_band: Iterable[list[LoadHour]]) -> float:
    """GPUs that served the model in its busiest hour: its GPU-hours in that hour (shared by tokens).

    Not rounded: a model holding 0.4 of a shared GPU has 0.4 GPU of capacity (rounding gave it none,
    and 2.5 became 2); not ceil'd either, which would count a shared GPU once per model served on it.
    """
    return max((float(hour.gpu_h) for hours in hours_by_band for hour in hours), default=0.0)


def _edges_check(edges: Sequence[float]) -> None:
    if not edges or edges[0] != 0 or any(b <= a for a, b in itertools.pairwise(edges)):
        raise ValueError(f"band edges must start at 0 and increase strictly, got {tuple(edges)!r}")


def _upper(edges: Sequence[float], index: int) -> float | None:
    return edges[index + 1] if index + 1 < len(edges) else None


def _summed(rows: Sequence[_Additive]) -> dict[str, Any]:
    """The additive figures of hours or of bands, summed: the fields a band adds up."""
    return {
        "requests": sum(r.requests for r in rows),
        "generation_tokens": sum(r.generation_tokens for r in rows),
        "gpu_h": sum((r.gpu_h for r in rows), ZERO),
        "cost": sum((r.cost for r in rows), ZERO),
        "it_kwh": sum((r.it_kwh for r in rows), ZERO),
        "facility_kwh": sum((r.facility_kwh for r in rows), ZERO),
        "operational_co2e_g": _known_sum(r.operational_co2e_g for r in rows),
        "embodied_co2e_g": sum((r.embodied_co2e_g for r in rows), ZERO),
        "unknown_intensity_kwh": sum((r.unknown_intensity_kwh for r in rows), ZERO),
        "embodied_unknown_gpu_h": sum((r.embodied_unknown_gpu_h for r in rows), ZERO),
        "unpriced_node_hours": sum(r.unpriced_node_hours for r in rows),
    }


def _band_of(low: float, high: float | None, hours: list[LoadHour]) -> CurveBand:
    measured = histogram_merge((h.ttft for h in hours if h.ttft is not None), coarsen=True)
    lower = histogram_merge((h.ttft_lower_bound for h in hours if h.ttft_lower_bound is not None), coarsen=True)
    ttft, basis = (measured, MEASURED) if measured is not None else (lower, LOWER_BOUND if lower else None)
    return CurveBand(
        low_rps_per_gpu=low,
        high_rps_per_gpu=high,
        hours=len(hours),
        max_rps_per_gpu=max((h.rps_per_gpu for h in hours), default=0.0),
        ttft=ttft,
        ttft_basis=basis,
        **_summed(hours),
    )


def bands_merge(bands: Sequence[CurveBand]) -> CurveBand:
    measured = histogram_merge((b.ttft for b in bands if b.ttft is not None and b.ttft_basis == MEASURED), coarsen=True)
    lower = histogram_merge((b.ttft for b in bands if b.ttft is not None and b.ttft_basis == LOWER_BOUND), coarsen=True)
    ttft, basis = (measured, MEASURED) if measured is not None else (lower, LOWER_BOUND if lower else None)
    return CurveBand(
        low_rps_per_gpu=bands[0].low_rps_per_gpu if bands else 0.0,
        high_rps_per_gpu=bands[-1].high_rps_per_gpu if bands else None,
        hours=sum(b.hours for b in bands),
        max_rps_per_gpu=max((b.max_rps_per_gpu for b in bands), default=0.0),
        ttft=ttft,
        ttft_basis=basis,
        **_summed(bands),
    )
