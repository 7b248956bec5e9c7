"""The advisor: which fleets take a workload class, at what share, from measured load curves only.

For a class (an LLM model, a TTFT target at a percentile, expected output tokens
per day) and the curves of the fleets serving that model:

1. **Capacity per fleet.** Walk the fleet's load bands upwards (bands with fewer
   than ``min_band_hours`` hours are not trusted and skipped). While the band's
   TTFT at the class's percentile is within the target, the fleet holds the
   target up to the highest load *measured* in that band; the first band over
   the target (or without a histogram) stops the walk. Nothing is extrapolated
   past the measured range. Loads below the lowest band are taken at the lowest
   band (less load is assumed not to lengthen TTFT).
   Capacity in output tokens/day = load x GPUs x output tokens per request x 86,400.
2. **Order.** Each fleet's score per output token is
   ``(1 - w) x cost / max cost + w x gCO2e / max gCO2e`` over the candidate fleets
   (``w`` the class's carbon weight; gCO2e operational + embodied). Carbon per output token
   follows the reports' rule (``accounting.ledger.totals.carbon_per_token_complete``): withheld
   where any of the fleet's kWh has no grid intensity or any GPU-hour no embodied figure. A
   fleet whose carbon is withheld counts as the worst (its carbon part 1, as the dirtiest fleet
   known): never as cleaner on its known part alone; the figures say why.
   Cost leaves out unpriced node-hours: such a fleet's cost is said to be a lower bound.
   With fleets in several currencies cost cannot be compared, and the order is by carbon alone.
3. **Allocation.** Fill the lowest-score fleet up to its capacity, then the next:
   with per-token figures fixed per fleet this greedy fill is the cheapest
   feasible mix. Demand beyond the fleets' summed capacity: infeasible, said so.
4. **Figures.** Each placed share is priced at the band its load is read on (``bands.band_read``, the
   scenarios' reading too: the lowest band measured up to the load; a load between two measured bands:
   the heavier, whose TTFT bounds it from above; above all: the last): cost,
   IT energy, facility energy and gCO2e per output token times its tokens per day.

The curve a class's load is read on is the fleet's load for that LLM model: the
class's traffic is assumed to be what the fleet serves of it. "All on
enterprise" / "all on consumer" spread the whole class over the fleets of that
GPU class in proportion to their GPUs, whether or not the target then holds.

Pure arithmetic: nothing here imports Django.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from decimal import Decimal
from typing import Any

from accounting.ledger.units import TOKENS_PER_MILLION, money_quantize, significant
from reports.bands import MEASURED, CurveBand, LoadCurve, band_read

S_PER_DAY = 86_400
J_PER_KWH = 3.6e6
PERCENTILES = (50, 90, 95, 99)
ENTERPRISE, CONSUMER = "enterprise", "consumer"

# Statuses of an advice
OK = "ok"
INSUFFICIENT_DATA = "insufficient_data"
INFEASIBLE = "infeasible"

# What bound a fleet's capacity, or the recommendation
LATENCY = "latency"
MEASURED_RANGE = "measured_range"
NO_LATENCY_DATA = "no_latency_data"
TOO_LITTLE_DATA = "too_little_data"
COST = "cost"
CARBON_WEIGHTED_COST = "carbon_weighted_cost"
CAPACITY = "capacity"


@dataclass(frozen=True)
class ClassSpec:
    class_id: int
    name: str
    llm_model: str  # "" = any model: each fleet's best-measured curve
    ttft_target_ms: float
    ttft_percentile: int
    output_tokens_per_day: int
    carbon_weight: float = 0.0
    deadline_h: int | None = None

    def __post_init__(self) -> None:
        if self.ttft_percentile not in PERCENTILES:
            raise ValueError(f"ttft_percentile must be one of {PERCENTILES}, got {self.ttft_percentile}")
        if not 0 <= self.carbon_weight <= 1:
            raise ValueError(f"carbon_weight must be within 0..1, got {self.carbon_weight}")
        if self.ttft_target_ms <= 0 or self.output_tokens_per_day <= 0:
            raise ValueError("ttft_target_ms and output_tokens_per_day must be positive")


@dataclass(frozen=True)
class AdvisorSettings:
    min_hours: int = 24  # a curve with fewer measured hours is not advised on
    min_band_hours: int = 3  # a band with fewer hours is not trusted


@dataclass(frozen=True)
class FleetFit:
    """One candidate fleet: how much of the class it can take within the target, and why no more."""

    fleet_id: int
    fleet_name: str
    gpu_model: str
    gpu_class: str | None
    llm_model: str
    currency: str
    hours: int
    gpu_count: float  # fractional: a shared GPU's share (see LoadCurve.gpu_count)
    output_tokens_per_request: float | None
    capacity_rps_per_gpu: float
    capacity_output_tokens_per_day: float
    binding: str  # latency, measured_range, no_latency_data, too_little_data
    binding_ttft_ms: float | None  # the TTFT at the class's percentile in the band that stopped the walk
    binding_band_rps_per_gpu: tuple[float, float | None] | None
    cost_per_1m_output_tokens: Decimal | None
    gco2e_per_1m_output_tokens: float | None
    it_j_per_output_token: float | None
    score: float | None = None
    # Share (0-1) of the fleet's facility kWh with a known grid intensity: below 1, gCO2e is withheld (None).
    operational_coverage: float = 1.0
    # Why gCO2e per 1M output tokens is withheld (CurveBand.carbon_per_token_gaps); None where it is stated.
    carbon_note: str | None = None
    # Node-hours with no price, asset or tariff in force: their cost is missing, cost per 1M is a lower bound.
    unpriced_node_hours: int = 0


@dataclass(frozen=True)
class Placement:
    fleet_id: int
    fleet_name: str
    gpu_model: str
    gpu_class: str | None
    share: float
    output_tokens_per_day: float
    rps_per_gpu: float
    band_rps_per_gpu: tuple[float, float | None]
    beyond_measured_range: bool
    between_measured_loads: bool  # below the band read (nothing measured at the load): its TTFT an upper bound
    ttft_ms: float | None  # at the class's percentile, in the band
    ttft_bucket_ms: tuple[float, float | None] | None
    ttft_basis: str | None
    cost_per_day: Decimal | None
    it_kwh_per_day: float | None
    facility_kwh_per_day: float | None
    operational_kgco2e_per_day: float | None
    embodied_kgco2e_per_day: float | None


@dataclass(frozen=True)
class Outcome:
    """A way to place the whole class, and what a day of it costs and emits."""

    label: str
    placements: tuple[Placement, ...]
    currency: str | None
    cost_per_day: Decimal | None
    it_kwh_per_day: float | None
    facility_kwh_per_day: float | None
    operational_kgco2e_per_day: float | None
    embodied_kgco2e_per_day: float | None
    target_holds: bool | None  # None: some load lies beyond the measured range
    note: str = ""

    @property
    def kgco2e_per_day(self) -> float | None:
        if self.operational_kgco2e_per_day is None or self.embodied_kgco2e_per_day is None:
            return None
        return self.operational_kgco2e_per_day + self.embodied_kgco2e_per_day


@dataclass(frozen=True)
class Advice:
    class_id: int
    status: str  # ok, insufficient_data, infeasible
    binding: str
    explanation: str
    hours_of_data: int
    recommendation: Outcome | None
    all_enterprise: Outcome | None
    all_consumer: Outcome | None
    fits: tuple[FleetFit, ...] = field(default_factory=tuple)

    def fingerprint(self) -> str:
        """What counts as a change of advice: the status and the fleets' shares to the nearest 5 %."""
        if self.recommendation is None:
            return self.status
        shares = sorted((p.fleet_id, p.gpu_model, round(p.share * 20)) for p in self.recommendation.placements)
        return f"{self.status}:" + ";".join(f"{fleet}/{model}={twentieths * 5}%" for fleet, model, twentieths in shares)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready (Decimals and tuples as strings and lists)."""
        data = _jsonable(asdict(self))
        for key, outcome in (("recommendation", self.recommendation), ("all_enterprise", self.all_enterprise),
                             ("all_consumer", self.all_consumer)):  # fmt: skip
            if outcome is not None:
                data[key] = _outcome_shown(outcome)
        for fit in data["fits"]:
            cost = fit["cost_per_1m_output_tokens"]
            fit["cost_per_1m_output_tokens"] = None if cost is None else str(significant(Decimal(cost)))
        return data


def _outcome_shown(outcome: Outcome) -> dict[str, Any]:
    """An outcome as JSON, money rounded once to its currency's minor unit (none without one currency)."""
    data = _jsonable(asdict(outcome)) | {"kgco2e_per_day": outcome.kgco2e_per_day}
    data["cost_per_day"] = _money(outcome.cost_per_day, outcome.currency)
    for shown, placement in zip(data["placements"], outcome.placements, strict=True):
        shown["cost_per_day"] = _money(placement.cost_per_day, outcome.currency)
    return data


def _money(amount: Decimal | None, currency: str | None) -> str | None:
    return None if amount is None or currency is None else str(money_quantize(amount, currency))


def _jsonable(value: Any) -> Any:
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, dict):
        return {key: _jsonable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(item) for item in value]
    return value


def advise(spec: ClassSpec, curves: Sequence[LoadCurve], settings: AdvisorSettings = AdvisorSettings()) -> Advice:
    """The advice for one class from the curves (any fleets; those of other LLM models are ignored)."""
    candidates = _candidates(spec, curves)
    if not candidates:
        model = spec.llm_model or "any model"
        text = f"No measured hours of {model} on any fleet: no advice until a fleet has served it."
        return Advice(spec.class_id, INSUFFICIENT_DATA, TOO_LITTLE_DATA, text, 0, None, None, None)
    fits = [_fit(spec, curve, settings) for curve in candidates]
    trusted = [(fit, curve) for fit, curve in zip(fits, candidates, strict=True) if fit.binding != TOO_LITTLE_DATA]
    if not trusted:
        return _too_little(spec, fits, settings)
    scored = _scored(spec, trusted)
    hours = sum(fit.hours for fit, _ in scored)
    enterprise = _spread(
        spec, [pair for pair in scored if pair[0].gpu_class == ENTERPRISE], "all on enterprise", settings
    )
    consumer = _spread(spec, [pair for pair in scored if pair[0].gpu_class == CONSUMER], "all on consumer", settings)
    fits_out = tuple(fit for fit, _ in scored) + tuple(fit for fit in fits if fit.binding == TOO_LITTLE_DATA)
    placed = _fill(spec, scored, settings)
    if placed is None:
        text = _infeasible_text(spec, scored)
        return Advice(spec.class_id, INFEASIBLE, CAPACITY, text, hours, None, enterprise, consumer, fits_out)
    currencies = {fit.currency for fit, _ in scored if any(p.fleet_id == fit.fleet_id for p in placed)}
    recommendation = _with_currency(_outcome("recommended", placed, spec), currencies, "")
    binding, text = _explained(spec, scored, recommendation, settings)
    return Advice(spec.class_id, OK, binding, text, hours, recommendation, enterprise, consumer, fits_out)


def _candidates(spec: ClassSpec, curves: Sequence[LoadCurve]) -> list[LoadCurve]:
    if spec.llm_model:
        return [curve for curve in curves if curve.key.llm_model == spec.llm_model]
    best: dict[tuple[int, str], LoadCurve] = {}
    for curve in curves:
        key = (curve.key.fleet_id, curve.key.gpu_model)
        if key not in best or curve.hours > best[key].hours:
            best[key] = curve
    return list(best.values())


def _trusted_bands(curve: LoadCurve, settings: AdvisorSettings) -> list[CurveBand]:
    return [band for band in curve.bands if band.hours >= settings.min_band_hours]


def _ttft_ms(band: CurveBand, percentile: int) -> float | None:
    seconds = band.ttft_quantile_s(percentile / 100)
    return None if seconds is None else seconds * 1000


def _fit(spec: ClassSpec, curve: LoadCurve, settings: AdvisorSettings) -> FleetFit:
    whole = curve.whole
    capacity_rps, binding, ttft_ms, band_range = 0.0, MEASURED_RANGE, None, None
    if curve.hours < settings.min_hours:
        binding = TOO_LITTLE_DATA
    elif not _trusted_bands(curve, settings):
        binding = NO_LATENCY_DATA  # hours enough, but spread over bands too thin to trust
    else:
        for band in _trusted_bands(curve, settings):
            ttft_ms = _ttft_ms(band, spec.ttft_percentile)
            band_range = (band.low_rps_per_gpu, band.high_rps_per_gpu)
            if ttft_ms is None or band.ttft_basis != MEASURED:
                binding = NO_LATENCY_DATA
                break
            if ttft_ms > spec.ttft_target_ms:
                binding = LATENCY
                break
            capacity_rps = band.max_rps_per_gpu
        else:
            binding = MEASURED_RANGE
    per_request = curve.output_tokens_per_request or 0.0
    return FleetFit(
        fleet_id=curve.key.fleet_id,
        fleet_name=curve.fleet_name,
        gpu_model=curve.key.gpu_model,
        gpu_class=curve.gpu_class,
        llm_model=curve.key.llm_model,
        currency=curve.currency,
        hours=curve.hours,
        gpu_count=curve.gpu_count,
        output_tokens_per_request=curve.output_tokens_per_request,
        capacity_rps_per_gpu=capacity_rps,
        capacity_output_tokens_per_day=capacity_rps * curve.gpu_count * per_request * S_PER_DAY,
        binding=binding,
        binding_ttft_ms=ttft_ms if binding in (LATENCY, MEASURED_RANGE) else None,
        binding_band_rps_per_gpu=band_range,
        cost_per_1m_output_tokens=whole.cost_per_1m_output_tokens,
        gco2e_per_1m_output_tokens=whole.gco2e_per_1m_output_tokens,
        it_j_per_output_token=whole.it_j_per_output_token,
        operational_coverage=whole.operational_coverage,
        carbon_note="; ".join(whole.carbon_per_token_gaps) or None,
        unpriced_node_hours=whole.unpriced_node_hours,
    )


_Pair = tuple[FleetFit, LoadCurve]


def _scored(spec: ClassSpec, trusted: list[_Pair]) -> list[_Pair]:
    """The fits with their score, lowest (best) first."""
    weight = spec.carbon_weight if len({fit.currency for fit, _ in trusted}) == 1 else 1.0
    costs = [float(fit.cost_per_1m_output_tokens or 0) for fit, _ in trusted]
    carbons = [fit.gco2e_per_1m_output_tokens for fit, _ in trusted]
    top_cost = max(costs) or 1.0
    top_carbon = max((c for c in carbons if c is not None), default=0.0) or 1.0
    scored = []
    for (fit, curve), cost, carbon in zip(trusted, costs, carbons, strict=True):
        # Withheld (a part unknown) or without tokens: the worst, never cleaner on a partial figure.
        carbon_part = 1.0 if carbon is None else carbon / top_carbon
        score = (1 - weight) * cost / top_cost + weight * carbon_part
        scored.append((_replace(fit, score=score), curve))
    # At an equal score, a fleet whose carbon is known before one whose carbon is withheld.
    return sorted(scored, key=lambda p: (p[0].score, p[0].gco2e_per_1m_output_tokens is None, p[0].fleet_name))


def _replace(fit: FleetFit, **changes: Any) -> FleetFit:
    return FleetFit(**{**asdict(fit), **changes})


def _fill(spec: ClassSpec, scored: list[_Pair], settings: AdvisorSettings) -> list[Placement] | None:
    remaining, placed = float(spec.output_tokens_per_day), []
    for fit, curve in scored:
        if remaining <= 0:
            break
        take = min(remaining, fit.capacity_output_tokens_per_day)
        if take > 0:
            placed.append(_placement(spec, fit, curve, take, settings))
            remaining -= take
    return placed if remaining <= 1e-9 * spec.output_tokens_per_day else None


def _placement(
    spec: ClassSpec, fit: FleetFit, curve: LoadCurve, tokens_per_day: float, settings: AdvisorSettings
) -> Placement:
    per_request, gpus = fit.output_tokens_per_request or 0.0, fit.gpu_count
    rps = tokens_per_day / S_PER_DAY / per_request / gpus if per_request and gpus else float("inf")
    reading = band_read(_trusted_bands(curve, settings) or list(curve.bands), rps)
    band = reading.band
    bucket = band.ttft_quantile_bucket_s(spec.ttft_percentile / 100)
    per_token = _per_token(band)
    return Placement(
        fleet_id=fit.fleet_id,
        fleet_name=fit.fleet_name,
        gpu_model=fit.gpu_model,
        gpu_class=fit.gpu_class,
        share=tokens_per_day / spec.output_tokens_per_day,
        output_tokens_per_day=tokens_per_day,
        rps_per_gpu=rps,
        band_rps_per_gpu=(band.low_rps_per_gpu, band.high_rps_per_gpu),
        beyond_measured_range=reading.beyond_measured_range,
        between_measured_loads=reading.between_measured_loads,
        ttft_ms=_ttft_ms(band, spec.ttft_percentile),
        ttft_bucket_ms=None if bucket is None else (bucket[0] * 1000, None if bucket[1] is None else bucket[1] * 1000),
        ttft_basis=band.ttft_basis,
        cost_per_day=None if per_token[0] is None else per_token[0] * Decimal(tokens_per_day),
        **{name: None if value is None else value * tokens_per_day for name, value in per_token[1].items()},
    )


def _per_token(band: CurveBand) -> tuple[Decimal | None, dict[str, float | None]]:
    """Cost per output token, and per output token: kWh (IT, facility) and kgCO2e (operational, embodied)."""
    cost = band.cost_per_1m_output_tokens
    operational = band.operational_gco2e_per_1m_output_tokens
    embodied = band.embodied_gco2e_per_1m_output_tokens
    j = band.it_j_per_output_token
    facility = band.facility_kwh_per_1m_output_tokens
    million = float(TOKENS_PER_MILLION)
    return (
        None if cost is None else cost / TOKENS_PER_MILLION,
        {
            "it_kwh_per_day": None if j is None else j / J_PER_KWH,
            "facility_kwh_per_day": None if facility is None else facility / million,
            "operational_kgco2e_per_day": None if operational is None else operational / million / 1000,
            "embodied_kgco2e_per_day": None if embodied is None else embodied / million / 1000,
        },
    )


def _sum_or_none(values: list[Any]) -> Any:
    return None if not values or any(v is None for v in values) else sum(values[1:], values[0])


def _outcome(label: str, placed: list[Placement], spec: ClassSpec, note: str = "") -> Outcome:
    # Missed at a measured load, or already at a lower one than asked: it fails (more load is assumed no faster).
    # A lower bound (TGI's queue time) over the target proves a miss, but one under it proves nothing.
    # Between measured loads the heavier band's TTFT is an upper bound: under the target it holds, over it is unknown.
    missed = any(
        p.ttft_ms is not None and p.ttft_ms > spec.ttft_target_ms and not p.between_measured_loads for p in placed
    )
    unknown = any(
        p.ttft_ms is None
        or p.beyond_measured_range
        or p.ttft_basis != MEASURED
        or (p.between_measured_loads and p.ttft_ms > spec.ttft_target_ms)
        for p in placed
    )
    holds = False if missed else (None if unknown else True)
    return Outcome(
        label=label,
        placements=tuple(placed),
        currency=None,
        cost_per_day=_sum_or_none([p.cost_per_day for p in placed]),
        it_kwh_per_day=_sum_or_none([p.it_kwh_per_day for p in placed]),
        facility_kwh_per_day=_sum_or_none([p.facility_kwh_per_day for p in placed]),
        operational_kgco2e_per_day=_sum_or_none([p.operational_kgco2e_per_day for p in placed]),
        embodied_kgco2e_per_day=_sum_or_none([p.embodied_kgco2e_per_day for p in placed]),
        target_holds=holds,
        note=note,
    )


def _spread(spec: ClassSpec, pairs: list[_Pair], label: str, settings: AdvisorSettings) -> Outcome | None:
    """The whole class on these fleets, in proportion to their GPUs (None without such a fleet)."""
    pairs = [(fit, curve) for fit, curve in pairs if fit.gpu_count and fit.output_tokens_per_request]
    if not pairs:
        return None
    gpus = sum(fit.gpu_count for fit, _ in pairs)
    placed = [
        _placement(spec, fit, curve, spec.output_tokens_per_day * fit.gpu_count / gpus, settings)
        for fit, curve in pairs
    ]
    outcome = _outcome(label, placed, spec)
    currencies = {fit.currency for fit, _ in pairs}
    note = ""
    if outcome.target_holds is None:
        lower = any(p.ttft_ms is not None and p.ttft_basis != MEASURED for p in placed)
        note = (
            "TTFT known only as a lower bound (TGI's queue time): the target is not known to hold"
            if lower
            else "beyond the measured range: the target is not known to hold"
        )
    return _with_currency(outcome, currencies, note)


def _with_currency(outcome: Outcome, currencies: set[str], note: str) -> Outcome:
    single = next(iter(currencies)) if len(currencies) == 1 else None
    fields = asdict(outcome) | {"placements": outcome.placements, "currency": single, "note": note}
    if single is None:
        fields["cost_per_day"] = None
        fields["note"] = (note + "; " if note else "") + "fleets in several currencies: no cost total"
    return Outcome(**fields)


def _too_little(spec: ClassSpec, fits: list[FleetFit], settings: AdvisorSettings) -> Advice:
    held = ", ".join(f"{fit.fleet_name} ({fit.gpu_model}): {fit.hours} h" for fit in fits)
    text = (
        f"Too little data to advise: every fleet serving {spec.llm_model or 'this class'} has fewer than "
        f"{settings.min_hours} measured hours ({held}). No recommendation until then."
    )
    hours = sum(fit.hours for fit in fits)
    return Advice(spec.class_id, INSUFFICIENT_DATA, TOO_LITTLE_DATA, text, hours, None, None, None, tuple(fits))


def _target(spec: ClassSpec) -> str:
    return f"P{spec.ttft_percentile} TTFT <= {spec.ttft_target_ms:g} ms"


def _fit_limit(fit: FleetFit, spec: ClassSpec) -> str:
    load = f"{fit.capacity_rps_per_gpu:.3g} req/s per GPU ({fit.capacity_output_tokens_per_day:,.0f} output tokens/day)"
    if fit.binding == LATENCY and fit.binding_band_rps_per_gpu is not None:
        low, high = fit.binding_band_rps_per_gpu
        band = f"{low:g}-{high:g}" if high is not None else f"{low:g}+"
        if fit.capacity_rps_per_gpu == 0:
            return (
                f"{fit.fleet_name} misses {_target(spec)} at its lowest trusted load: at {band} req/s per GPU "
                f"its P{spec.ttft_percentile} is {fit.binding_ttft_ms:.0f} ms (latency bound)"
            )
        return (
            f"{fit.fleet_name} holds {_target(spec)} up to {load}; at {band} req/s per GPU its "
            f"P{spec.ttft_percentile} is {fit.binding_ttft_ms:.0f} ms (latency bound)"
        )
    if fit.binding == NO_LATENCY_DATA and fit.capacity_rps_per_gpu == 0:
        return f"{fit.fleet_name} has no trusted load band with a measured TTFT histogram (no capacity credited)"
    if fit.binding == NO_LATENCY_DATA:
        return f"{fit.fleet_name} has no measured TTFT above {load}"
    return f"{fit.fleet_name} holds {_target(spec)} up to {load}, the highest load measured (measured range bound)"


def _infeasible_text(spec: ClassSpec, scored: list[_Pair]) -> str:
    total = sum(fit.capacity_output_tokens_per_day for fit, _ in scored)
    limits = "; ".join(_fit_limit(fit, spec) for fit, _ in scored)
    return (
        f"No measured mix holds {_target(spec)} at {spec.output_tokens_per_day:,} output tokens/day: together the "
        f"fleets hold it for at most {total:,.0f} output tokens/day. {limits}."
    )


def _explained(
    spec: ClassSpec, scored: list[_Pair], recommendation: Outcome, settings: AdvisorSettings
) -> tuple[str, str]:
    best = scored[0][0]
    order = "carbon-weighted cost" if spec.carbon_weight > 0 else "cost"
    shares = ", ".join(
        f"{p.share:.0%} on {p.fleet_name} ({p.gpu_model}; {p.rps_per_gpu:.3g} req/s per GPU, "
        f"P{spec.ttft_percentile} {_ms(p.ttft_ms)})"
        for p in recommendation.placements
    )
    hours = ", ".join(f"{fit.fleet_name} {fit.hours} h" for fit, _ in scored)
    first = recommendation.placements[0]
    if first.fleet_id == best.fleet_id and first.share >= 1 - 1e-9:
        binding = CARBON_WEIGHTED_COST if spec.carbon_weight > 0 else COST
        reason = f"{best.fleet_name} is lowest in {order} and holds {_target(spec)} at the whole expected load"
    else:
        binding = best.binding if best.binding in (LATENCY, MEASURED_RANGE, NO_LATENCY_DATA) else CAPACITY
        reason = _fit_limit(best, spec) + f"; the rest goes to the next lowest in {order}"
    if len({fit.currency for fit, _ in scored}) > 1:
        reason += " (the fleets price in several currencies: they are ordered by gCO2e alone)"
    text = (
        f"{shares}. Why: {reason}. Figures per fleet (whole period): "
        + "; ".join(_fit_figures(fit) for fit, _ in scored)
        + f". Data: {hours} (a band needs {settings.min_band_hours} h to be trusted)."
    )
    return binding, text


def _fit_figures(fit: FleetFit) -> str:
    cost = (
        "cost unknown"
        if fit.cost_per_1m_output_tokens is None
        else f"{fit.cost_per_1m_output_tokens:.4g} {fit.currency}"
    )
    if fit.unpriced_node_hours and fit.cost_per_1m_output_tokens is not None:
        cost = f"at least {cost} ({fit.unpriced_node_hours} node-hours unpriced, their cost missing)"
    if fit.gco2e_per_1m_output_tokens is not None:
        carbon = f"{fit.gco2e_per_1m_output_tokens:.4g} gCO2e per 1M output tokens"
    elif fit.carbon_note is not None:
        carbon = f"gCO2e per 1M output tokens not stated ({fit.carbon_note}; counted as the worst for carbon)"
    else:
        carbon = "? gCO2e per 1M output tokens"
    return f"{fit.fleet_name}: {cost} and {carbon}"


def _ms(value: float | None) -> str:
    return "unknown" if value is None else f"{value:.0f} ms"
