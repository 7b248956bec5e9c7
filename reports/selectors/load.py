"""The comparison's load dimension: each comparison row's figures per requests/s-per-GPU band.

Fleets are compared at like load: the hours of a row are binned by their load
(requests per second per GPU), with the measured load curves of
``reports.curves`` (one banding, the advisor's): per fleet x GPU model x
LLM model, fleet-hours binned by ``DEFAULT_BAND_EDGES_RPS_PER_GPU``. A row per
fleet (or per GPU model) merges its curves' bands of the same range, so its
``hours`` count each LLM model's fleet-hours apart. The hours without output
tokens or requests (a ``no_output_tokens`` row) have no load and no band.

Each band comes with the baseline fleet's band of the same range (all its curves
merged; per LLM model, its curves of the same LLM model, whatever their GPU model,
as the comparison's own ratios: ``BaselineBasis``), so its ratios compare like load
with like load, and per LLM model like model with like model.

This module is not imported by ``reports.selectors`` (the advice
package reads reports' selectors, and reads them first).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime

from reports.bands import DEFAULT_BAND_EDGES_RPS_PER_GPU, CurveBand, LoadCurve, bands_merge
from reports.curves import load_curves
from reports.metrics import ComparisonRow, LedgerAllocation
from reports.selectors.allocation import llm_name

# What a row is matched to curves by: (fleet,), (fleet, GPU model) or (fleet, GPU model, LLM model).
_RowKey = tuple[int | str | None, ...]
GROUPINGS = ("fleet", "gpu_model", "llm_model")


@dataclass(frozen=True)
class LoadBand:
    """One band of one comparison row, in ``currency``, beside the baseline fleet's band of the same range."""

    band: CurveBand
    currency: str
    baseline: CurveBand | None = None
    baseline_currency: str | None = None


def comparison_load_bands(
    rows: Sequence[ComparisonRow],
    *,
    organization_ids: Collection[int],
    start: datetime,
    end: datetime,
    by: str,
    baseline_fleet_id: int | None = None,
    fleet_ids: Collection[int] = (),
    edges: Sequence[float] = DEFAULT_BAND_EDGES_RPS_PER_GPU,
) -> list[list[LoadBand]]:
    """Per comparison row (same order): its bands by ascending load, each with the baseline fleet's.

    ``by``: the grouping the rows were made with (``fleet``, ``gpu_model`` or ``llm_model``).
    """
    if by not in GROUPINGS:
        raise ValueError(f"by must be one of {GROUPINGS}, got {by!r}")
    read = set(fleet_ids) | ({baseline_fleet_id} if fleet_ids and baseline_fleet_id is not None else set())
    curves = load_curves(
        organization_ids=organization_ids, start=start, end=end, fleet_ids=read, band_edges_rps_per_gpu=edges
    )
    per_row: dict[_RowKey, list[LoadCurve]] = defaultdict(list)
    # The baseline fleet's curves: all of them (None), and per LLM model (by=llm_model).
    per_baseline: dict[str | None, list[LoadCurve]] = defaultdict(list)
    for curve in curves:
        per_row[_curve_key(curve, by)].append(curve)
        if curve.key.fleet_id == baseline_fleet_id:
            per_baseline[None].append(curve)
            per_baseline[llm_name(curve.key.llm_model)].append(curve)
    merged_baselines: dict[str | None, dict[float, tuple[CurveBand, str]]] = {}
    answer: list[list[LoadBand]] = []
    for row in rows:
        stats = row.stats
        if stats.allocation is LedgerAllocation.UNATTRIBUTED:
            answer.append([])
            continue
        like = stats.llm_model if by == "llm_model" else None
        if like not in merged_baselines:
            merged_baselines[like] = _merged(per_baseline.get(like, []))
        baseline = merged_baselines[like]
        bands = _merged(per_row.get(_row_key(stats.fleet_id, stats.gpu_model, stats.llm_model, by), []))
        answer.append([
            LoadBand(band=band, currency=currency, baseline=base[0], baseline_currency=base[1])
            for low, (band, currency) in sorted(bands.items())
            for base in [baseline.get(low, (None, None))]
        ])  # fmt: skip
    return answer


def _curve_key(curve: LoadCurve, by: str) -> _RowKey:
    return _row_key(curve.key.fleet_id, curve.key.gpu_model, llm_name(curve.key.llm_model), by)


def _row_key(fleet_id: int, gpu_model: str | None, llm_model: str | None, by: str) -> _RowKey:
    if by == "fleet":
        return (fleet_id,)
    return (fleet_id, gpu_model) if by == "gpu_model" else (fleet_id, gpu_model, llm_model)


def _merged(curves: list[LoadCurve]) -> dict[float, tuple[CurveBand, str]]:
    """The curves' bands merged per range (keyed by its lower edge), with their currency.

    The comparison refuses a row in two currencies before this is reached; should curves
    still differ, the first curve's currency is kept and the money ratio says nothing.
    """
    grouped: dict[float, list[CurveBand]] = defaultdict(list)
    for curve in curves:
        for band in curve.bands:
            grouped[band.low_rps_per_gpu].append(band)
    currency = curves[0].currency if curves else ""
    return {low: (bands_merge(bands), currency) for low, bands in grouped.items()}
