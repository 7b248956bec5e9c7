"""Replaying measured node-hours under a scenario's changes (pure: no framework, no database).

One pass over the stored ledger's rows (``LEDGER_COLUMNS``, as ``values_list``
gives them) sums them into buckets, one per fleet x site x GPU model x PUE x hour;
the changes then act on the buckets, never on the stored ledger:

1. ``nodes``: a bucket x ``(n + N) / n``, ``n`` the fleet's node-hours of that GPU
   model in that hour (every figure: the added nodes work like the average node).
2. ``move``: PUE (facility kWh = IT kWh x the new PUE; electricity and carbon x new / old
   PUE, at the prices and intensities measured); zone (location carbon = facility kWh x
   the zone's intensity of that hour).
3. ``tenure``: hardware = GPU-hours x rent, or each card's capex over its life + opex
   for its GPU-hours; rent with power included has no electricity line; without, kWh
   once included are unpriced.
4. ``move`` tariff: electricity = facility kWh not included in rent x the price.
5. ``lifetime``: embodied x (rate over the longer life) / (rate the ledger used), by the
   remaining-life rule of ``accounting.ledger.embodied``, per card: the ledger's card has
   the GPU model's expected life L, its asset's prior use p and own expected years o (none:
   the rest of L); kept ``extra`` years longer it has life L + extra, and own years
   o + extra (none: the rest). A new card with no own years: L / (L + extra). A change's
   second-hand cards (``prior_use_years``) carry the rate of that prior use over
   L + extra, and cost the purchase price over the years left to them instead of the
   hardware cost measured.
6. Taxes, on a bucket whose energy or money 2-5 changed, or that a ``move`` takes to another
   site: energy tax and VAT again, at the taxes in force at the hour at the bucket's site (the
   move's site; none in force: none): energy tax = facility kWh not included in rent x the
   rate; VAT on rent, running cost and electricity, in cost where not recoverable. Other
   buckets keep the ledger's taxes (scaled with the nodes).
7. ``routing`` (on the fleets' sums): the moved output tokens leave the source fleet
   with its per-output-token figures and reach the target with the target's.

Facility energy, electricity, hardware, taxes and cost are the ledger's own rules
(``accounting.ledger.line``: ``facility_kwh``, ``electricity_cost``,
``tariff_electricity_cost``, ``undated_hardware_costs``, ``vat_base``, ``line_cost``;
``accounting.ledger.tax``: ``line_taxes``), applied to the bucket's sums, so that a change
of a money rule changes the ledger and the replay alike; the actual side's cost is the
ledger's (hardware, electricity, energy tax and non-recoverable VAT).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from datetime import datetime
from decimal import Decimal
from typing import TypeGuard

from accounting.ledger.embodied import embodied_rate_g_per_h
from accounting.ledger.inputs import EmbodiedAsset, EmbodiedKg, OwnedPricing, RatePer, RentedPricing
from accounting.ledger.line import (
    ElectricityStatus,
    HardwareCost,
    electricity_cost,
    facility_kwh,
    line_cost,
    tariff_electricity_cost,
    undated_hardware_costs,
    vat_base,
)
from accounting.ledger.tax import LineTaxes, SiteTaxRates, line_taxes
from accounting.ledger.units import ONE, ZERO, h_from_years
from accounting.tariff import TariffPrice, Validity, in_force
from scenarios.changes import (
    Change,
    LifetimeChange,
    MoveChange,
    NodesChange,
    RoutingChange,
    TenureChange,
)
from scenarios.latency import ModelUsage, TtftMix, ttft_mix

LEDGER_COLUMNS = (
    "fleet_id",
    "site_id",
    "gpu_model",
    "pue",
    "hour_start",
    "held_h",
    "gpu_h",
    "it_kwh",
    "facility_kwh",
    "electricity_status",
    "electricity_cost",
    "hardware_cost",
    "location_co2e_g",
    "embodied_co2e_g_low",
    "embodied_co2e_g_central",
    "embodied_co2e_g_high",
    "prompt_tokens",
    "generation_tokens",
    "rent_cost",
    "depreciation_cost",
    "opex_cost",
    "energy_tax_cost",
    "vat_amount",
    "vat_cost",
    "embodied_unknown_gpu_h",
    "node_id",
)
"""The stored ledger's columns the replay reads, in the order ``Replay.add`` takes them (the node last,
optional: it finds the cards' lives in ``Replay(node_lives=...)``)."""

LifeKey = tuple[tuple[Decimal, Decimal | None], ...]
"""The lives the ledger amortised a node's cards over: per card, (prior use years, own expected years or
``None``: the rest of the GPU model's life); empty: new cards over the GPU model's life."""

USAGE_COLUMNS = ("fleet_id", "hour_start", "llm_model", "kind", "prompt_tokens", "generation_tokens", "requests",
                 "bounds_s", "counts", "gpu_h")  # fmt: skip
"""Endpoint-hour usage as ``Replay.add_usage`` takes it (kind: the server, e.g. vllm, tgi; gpu_h: its share of its
node-hour's GPU-hours by ``reports.sharing``'s rule, zero without output tokens)."""


class ReplayError(ValueError):
    """A scenario that the measured data cannot answer (a fleet with no such node-hours, no tokens...)."""


@dataclass(slots=True)
class Sums:
    """Summed node-hour figures: money in the sites' currency, energy kWh, carbon gCO2e, tokens.

    ``facility_kwh_priced`` / ``_included``: kWh whose electricity is priced, or included
    in rent (the rest is unpriced); ``facility_kwh_located``: kWh with a known location
    intensity (the rest has no location carbon); ``it_kwh_priced`` / ``_included`` /
    ``_located``: the IT kWh behind them (facility kWh at another PUE). ``embodied_unknown_gpu_h``:
    GPU-hours of models without an embodied figure (no embodied carbon in the sums; no change gives
    them one). ``hardware_cost`` is ``rent_cost + depreciation_cost + opex_cost``; taxes as on the
    ledger's lines (``cost`` adds energy tax and non-recoverable VAT). Tokens are Decimal: scaled sums
    are fractional.
    """

    rows: int = 0
    held_h: Decimal = ZERO
    gpu_h: Decimal = ZERO
    it_kwh: Decimal = ZERO
    facility_kwh: Decimal = ZERO
    facility_kwh_priced: Decimal = ZERO
    facility_kwh_included: Decimal = ZERO
    facility_kwh_located: Decimal = ZERO
    it_kwh_priced: Decimal = ZERO
    it_kwh_included: Decimal = ZERO
    it_kwh_located: Decimal = ZERO
    electricity_cost: Decimal = ZERO
    hardware_cost: Decimal = ZERO
    rent_cost: Decimal = ZERO
    depreciation_cost: Decimal = ZERO
    opex_cost: Decimal = ZERO
    energy_tax_cost: Decimal = ZERO
    vat_amount: Decimal = ZERO
    vat_cost: Decimal = ZERO
    location_co2e_g: Decimal = ZERO
    embodied_co2e_g_low: Decimal = ZERO
    embodied_co2e_g_central: Decimal = ZERO
    embodied_co2e_g_high: Decimal = ZERO
    embodied_unknown_gpu_h: Decimal = ZERO
    prompt_tokens: Decimal = ZERO
    generation_tokens: Decimal = ZERO

    @property
    def taxes(self) -> LineTaxes:
        return LineTaxes(self.energy_tax_cost, self.vat_amount, self.vat_cost)

    @property
    def hardware(self) -> HardwareCost:
        return HardwareCost(self.rent_cost, self.depreciation_cost, self.opex_cost)

    @property
    def location_unknown_facility_kwh(self) -> Decimal:
        """Facility kWh without a location intensity (no location carbon in the sums)."""
        return self.facility_kwh - self.facility_kwh_located

    @property
    def cost(self) -> Decimal:
        """The ledger's cost: hardware, electricity, and the taxes in cost (energy tax, non-recoverable VAT)."""
        return line_cost(self.hardware_cost, self.electricity_cost, self.taxes.in_cost)

    def scaled(self, factor: Decimal) -> Sums:
        """Every quantity x ``factor`` (the count of rows stays)."""
        values = {f.name: getattr(self, f.name) * factor for f in fields(self) if f.name != "rows"}
        return Sums(rows=self.rows, **values)

    def add(self, other: Sums) -> None:
        """Add ``other`` in place."""
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))


_QUANTITIES = tuple(f.name for f in fields(Sums) if f.name != "rows")


def sums_total(parts: Iterable[Sums]) -> Sums:
    total = Sums()
    for part in parts:
        total.add(part)
    return total


BucketKey = tuple[int, int, str, Decimal, datetime, LifeKey]  # fleet, site, GPU model, PUE, hour, cards' lives


@dataclass(frozen=True)
class ReplayInputs:
    """What the service resolves for the changes: catalog lives (years) by GPU model, the location
    intensity (gCO2e/kWh, ``None``: unknown) of each hour in each moved fleet's new zone, and each
    site's taxes over the period by site id (the measured sites' and those a move names; a site
    not given has none)."""

    changes: tuple[Change, ...]
    lifetime_years: Mapping[str, Decimal] = field(default_factory=dict)
    zone_intensity: Mapping[int, Mapping[datetime, Decimal | None]] = field(default_factory=dict)
    site_taxes: Mapping[int, Sequence[Validity[SiteTaxRates]]] = field(default_factory=dict)


class Replay:
    """Sums the measured rows in one pass (``add``, ``add_usage``), then ``run`` applies the changes."""

    def __init__(self, node_lives: Mapping[int, LifeKey] | None = None) -> None:
        self.node_lives: Mapping[int, LifeKey] = node_lives or {}
        self.buckets: dict[BucketKey, Sums] = {}
        self.usage: dict[tuple[int, str], ModelUsage] = defaultdict(ModelUsage)
        self.currencies: set[str] = set()
        self.rows = 0

    def add(self, row: tuple) -> None:
        """One stored ledger row, its values in ``LEDGER_COLUMNS`` order."""
        (fleet, site, gpu_model, pue, hour, held, gpu_h, it, facility, status, electricity, hardware, location,
         low, central, high, prompt, generation, rent, depreciation, opex, energy_tax, vat, vat_cost,
         embodied_unknown, *node) = row  # fmt: skip
        key = (fleet, site, gpu_model, pue, hour, self.node_lives.get(node[0], ()) if node else ())
        sums = self.buckets.get(key)
        if sums is None:
            sums = self.buckets[key] = Sums()
        sums.rows += 1
        sums.held_h += held
        sums.gpu_h += gpu_h
        sums.it_kwh += it
        sums.facility_kwh += facility
        if status == ElectricityStatus.PRICED:
            sums.facility_kwh_priced += facility
            sums.it_kwh_priced += it
        elif status == ElectricityStatus.INCLUDED:
            sums.facility_kwh_included += facility
            sums.it_kwh_included += it
        if electricity is not None:
            sums.electricity_cost += electricity
        sums.hardware_cost += hardware
        sums.rent_cost += rent
        sums.depreciation_cost += depreciation
        sums.opex_cost += opex
        sums.energy_tax_cost += energy_tax
        sums.vat_amount += vat
        sums.vat_cost += vat_cost
        if location is not None:
            sums.location_co2e_g += location
            sums.facility_kwh_located += facility
            sums.it_kwh_located += it
        sums.embodied_co2e_g_low += low
        sums.embodied_co2e_g_central += central
        sums.embodied_co2e_g_high += high
        sums.embodied_unknown_gpu_h += embodied_unknown
        sums.prompt_tokens += prompt
        sums.generation_tokens += generation
        self.rows += 1

    @property
    def site_ids(self) -> set[int]:
        """The sites of the rows added (whose taxes a change may compute again)."""
        return {key[1] for key in self.buckets}

    def add_usage(self, row: tuple) -> None:
        """One endpoint-hour of usage, its values in ``USAGE_COLUMNS`` order."""
        fleet, hour, model, *rest = row
        self.usage[(fleet, model or "unknown")].add(hour, tuple(rest))

    def run(self, inputs: ReplayInputs) -> Outcome:
        """The actual and scenario sums per fleet, and the per-model output and TTFT, with notes."""
        notes: list[str] = []
        factors = _node_factors(self.buckets, [c for c in inputs.changes if isinstance(c, NodesChange)])
        actual: dict[int, Sums] = defaultdict(Sums)
        scenario: dict[int, Sums] = defaultdict(Sums)
        for key, sums in self.buckets.items():
            actual[key[0]].add(sums)
            scenario[key[0]].add(_bucket_scenario(key, sums, inputs, factors.get((key[0], key[2], key[4]))))
        _lifetime_notes(inputs, {key[2] for key in self.buckets}, notes)
        for fleet in {f for f, _ in self.usage} - set(actual):
            actual[fleet], scenario[fleet] = Sums(), Sums()
        models = _model_tokens(self.usage, actual, scenario)
        routed = {}
        for change in inputs.changes:
            if isinstance(change, RoutingChange):
                routed[change] = _route(change, scenario, models)
        lives = {c.fleet: self._lifetime_curve(c, inputs.lifetime_years) for c in inputs.changes if _is_life(c)}
        return Outcome(dict(actual), dict(scenario), self.usage, models, routed, notes, self.rows, lives)

    def _lifetime_curve(self, change: LifetimeChange, lives: Mapping[str, Decimal]) -> list[LifePoint]:
        """The fleet's measured hours with only its cards' life changed, a year at a time up to the change's."""
        steps = [Decimal(k) for k in range(int(change.extra_years) + 1)]
        steps += [change.extra_years] if change.extra_years not in steps else []
        mine = {key: sums for key, sums in self.buckets.items() if key[0] == change.fleet}
        measured = sums_total(mine.values())
        points = []
        for extra in steps:
            step = LifetimeChange(change.fleet, extra, prior_use_years=change.prior_use_years)
            embodied = ZERO
            for (_, _, gpu_model, _, _, cards), sums in mine.items():
                life = lives.get(gpu_model)
                factor = lifetime_factor(life, step, cards) if life is not None and extra else ONE
                embodied += sums.embodied_co2e_g_central * factor
            points.append(LifePoint.of(extra, embodied, measured))
        return points


@dataclass(frozen=True)
class LifePoint:
    """A fleet's measured hours with its cards kept ``extra_years`` longer: embodied and location gCO2e, tokens,
    and what the carbon leaves out (the facility kWh without a location intensity, of ``facility_kwh``; the
    GPU-hours without an embodied figure), which a longer life does not change."""

    extra_years: Decimal
    embodied_co2e_g: Decimal
    location_co2e_g: Decimal
    generation_tokens: Decimal
    facility_kwh: Decimal = ZERO
    location_unknown_facility_kwh: Decimal = ZERO
    embodied_unknown_gpu_h: Decimal = ZERO

    @classmethod
    def of(cls, extra_years: Decimal, embodied_co2e_g: Decimal, measured: Sums) -> LifePoint:
        """The point of ``extra_years``: its embodied gCO2e, the rest as ``measured``."""
        return cls(
            extra_years,
            embodied_co2e_g,
            measured.location_co2e_g,
            measured.generation_tokens,
            facility_kwh=measured.facility_kwh,
            location_unknown_facility_kwh=measured.location_unknown_facility_kwh,
            embodied_unknown_gpu_h=measured.embodied_unknown_gpu_h,
        )


def _is_life(change: Change) -> TypeGuard[LifetimeChange]:
    return isinstance(change, LifetimeChange)


@dataclass
class Outcome:
    """What a replay gives: per fleet the actual and scenario sums; per (fleet, LLM model) the scenario's
    output tokens (``models``: generation, prompt) beside the measured ``usage``."""

    actual: dict[int, Sums]
    scenario: dict[int, Sums]
    usage: Mapping[tuple[int, str], ModelUsage]
    models: dict[tuple[int, str], tuple[Decimal, Decimal]]
    routed: dict[RoutingChange, Decimal]  # output tokens each routing moved
    notes: list[str]
    rows: int
    lifetime_curves: dict[int, list[LifePoint]] = field(default_factory=dict)  # per fleet given a longer life

    def ttft(self, llm_model: str) -> TtftMix:
        """The model's TTFT histogram as measured, and as the scenario's traffic would see it (``latency``)."""
        return ttft_mix(llm_model, usage=self.usage, tokens=self.models, routed=self.routed)


def _node_factors(buckets: Mapping[BucketKey, Sums], changes: list[NodesChange]) -> dict[tuple, Decimal]:
    """Per (fleet, GPU model, hour): ``(n + N) / n`` (0 at most all removed), n its node-hours then."""
    wanted = {(c.fleet, c.gpu_model): c.nodes for c in changes}
    counts: dict[tuple, int] = defaultdict(int)
    for (fleet, _, gpu_model, _, hour, _), sums in buckets.items():
        if (fleet, gpu_model) in wanted:
            counts[(fleet, gpu_model, hour)] += sums.rows
    for fleet, gpu_model in wanted:
        if not any(key[:2] == (fleet, gpu_model) for key in counts):
            raise ReplayError(f"fleet {fleet} has no measured node-hours of GPU model {gpu_model!r} in the period")
    return {key: max(Decimal(n + wanted[key[:2]]), ZERO) / n for key, n in counts.items()}


def _bucket_scenario(key: BucketKey, sums: Sums, inputs: ReplayInputs, factor: Decimal | None) -> Sums:
    fleet, site, gpu_model, pue, hour, cards = key
    result = sums.scaled(factor) if factor is not None else sums.scaled(ONE)
    for change in inputs.changes:
        if isinstance(change, MoveChange) and change.fleet == fleet:
            if change.pue is not None:
                _pue(result, pue, change.pue)
            if change.zone is not None:
                _zone(result, inputs.zone_intensity.get(fleet, {}).get(hour))
    for change in inputs.changes:
        if isinstance(change, TenureChange) and change.fleet == fleet:
            _tenure(result, change)
    for change in inputs.changes:
        if isinstance(change, MoveChange) and change.fleet == fleet and change.price_per_kwh is not None:
            _tariff(result, TariffPrice(change.price_per_kwh, SCENARIO_PRICE_ID))
    for change in inputs.changes:
        if isinstance(change, LifetimeChange) and change.fleet == fleet:
            _lifetime(result, change, inputs.lifetime_years.get(gpu_model), cards)
    if any(_reprices(change, fleet) for change in inputs.changes):
        _taxes(result, in_force(inputs.site_taxes.get(_site(inputs.changes, fleet, site), ()), hour))
    return result


def _reprices(change: Change, fleet: int) -> bool:
    """Whether ``change`` changes the fleet's energy or money, or its site: its taxes are then computed again."""
    if isinstance(change, MoveChange) and change.fleet == fleet:
        return change.pue is not None or change.price_per_kwh is not None or change.site is not None
    if isinstance(change, LifetimeChange) and change.fleet == fleet:
        return change.second_hand
    return isinstance(change, TenureChange) and change.fleet == fleet


def _site(changes: tuple[Change, ...], fleet: int, measured: int) -> int:
    """The fleet's site under the changes: a move's, else the one measured."""
    for change in changes:
        if isinstance(change, MoveChange) and change.fleet == fleet and change.site is not None:
            return change.site
    return measured


def _taxes(sums: Sums, tax: SiteTaxRates | None) -> None:
    """The ledger's taxes (``line_taxes``) of the bucket's sums under ``tax`` (none in force: none): energy
    tax on the facility kWh not included in rent, VAT on its rent, running cost and electricity."""
    taxes = line_taxes(tax=tax, facility_kwh=sums.facility_kwh - sums.facility_kwh_included, energy_taxed=True,
                       vat_base=vat_base(sums.hardware, sums.electricity_cost))  # fmt: skip
    sums.energy_tax_cost, sums.vat_amount, sums.vat_cost = taxes.energy_tax_cost, taxes.vat_amount, taxes.vat_cost


# The trace tag of the flat price a ``move`` change gives (``TariffPrice.price_id``).
SCENARIO_PRICE_ID = "scenario:price_per_kwh"


def _pue(sums: Sums, pue: Decimal, new_pue: Decimal) -> None:
    """Facility kWh of the same IT kWh at ``new_pue`` (the ledger's rule); their electricity and carbon at the
    prices and intensities measured (per kWh, so x new / old PUE)."""
    sums.facility_kwh = facility_kwh(sums.it_kwh, new_pue)
    sums.facility_kwh_priced = facility_kwh(sums.it_kwh_priced, new_pue)
    sums.facility_kwh_included = facility_kwh(sums.it_kwh_included, new_pue)
    sums.facility_kwh_located = facility_kwh(sums.it_kwh_located, new_pue)
    ratio = new_pue / pue
    sums.electricity_cost *= ratio
    sums.location_co2e_g *= ratio


def _zone(sums: Sums, intensity_g_per_kwh: Decimal | None) -> None:
    known = intensity_g_per_kwh is not None
    sums.location_co2e_g = sums.facility_kwh * intensity_g_per_kwh if intensity_g_per_kwh is not None else ZERO
    sums.facility_kwh_located = sums.facility_kwh if known else ZERO
    sums.it_kwh_located = sums.it_kwh if known else ZERO


def _tariff(sums: Sums, tariff: TariffPrice) -> None:
    """The kWh not included in rent priced at ``tariff``."""
    sums.facility_kwh_priced = sums.facility_kwh - sums.facility_kwh_included
    sums.it_kwh_priced = sums.it_kwh - sums.it_kwh_included
    sums.electricity_cost = tariff_electricity_cost(sums.facility_kwh_priced, tariff)


def _tenure(sums: Sums, change: TenureChange) -> None:
    if change.mode == "rent":
        rent = RentedPricing(change.rate_per_gpu_h, RatePer.GPU, change.includes_power, price_id=SCENARIO_PRICE_ID)
        _hardware(sums, undated_hardware_costs(rent, sums.held_h, sums.gpu_h))
        electricity, status = electricity_cost(sums.facility_kwh, rent, None)
        if status is ElectricityStatus.INCLUDED:
            sums.electricity_cost = electricity or ZERO
            sums.facility_kwh_priced, sums.it_kwh_priced = ZERO, ZERO
            sums.facility_kwh_included, sums.it_kwh_included = sums.facility_kwh, sums.it_kwh
            return
    else:
        _hardware(sums, _cards_owned_cost(change.capex_per_gpu, change.lifetime_years, change.opex_per_gpu_h, sums))
    # power once in the rent is now unpriced, unless a tariff is given
    sums.facility_kwh_included, sums.it_kwh_included = ZERO, ZERO


def _hardware(sums: Sums, costs: HardwareCost) -> None:
    """The bucket's hardware cost replaced by ``costs`` (by kind: VAT is on rent and running cost only)."""
    sums.hardware_cost = costs.total
    sums.rent_cost, sums.depreciation_cost, sums.opex_cost = costs.rent, costs.depreciation, costs.opex


def _cards_owned_cost(capex_per_gpu: Decimal, life_years: Decimal, opex_per_gpu_h: Decimal, sums: Sums) -> HardwareCost:
    """The ledger's owned hardware cost of cards each held their GPU-hours: capex over the life, plus opex."""
    owned = OwnedPricing(capex_per_gpu, h_from_years(life_years), opex_per_gpu_h, price_id=SCENARIO_PRICE_ID)
    return undated_hardware_costs(owned, sums.gpu_h, sums.gpu_h)


def lifetime_factor(life_years: Decimal, change: LifetimeChange, cards: LifeKey = ()) -> Decimal:
    """Embodied per hour with the longer life over embodied per hour as the ledger amortised the cards.

    ``cards``: per card, the (prior use, own expected) years the ledger used (``LifeKey``); empty: one new
    card over ``life_years``. The cards share the GPU model's embodied kg, so their rates add up.
    """
    unit = EmbodiedKg(ONE, ONE, ONE)
    used, longer = ZERO, ZERO
    for prior_years, own_years in cards or ((ZERO, None),):
        prior_h = h_from_years(prior_years)
        own_h = None if own_years is None else h_from_years(own_years)
        used += embodied_rate_g_per_h(EmbodiedAsset(unit, h_from_years(life_years), prior_h, own_h)).central
        life_h = h_from_years(life_years + change.extra_years)
        if change.prior_use_years is not None:  # the change's second-hand cards
            kept = EmbodiedAsset(unit, life_h, h_from_years(change.prior_use_years))
        else:
            kept = EmbodiedAsset(
                unit, life_h, prior_h, None if own_h is None else own_h + h_from_years(change.extra_years)
            )
        longer += embodied_rate_g_per_h(kept).central
    return longer / used if used else ONE


def _lifetime(sums: Sums, change: LifetimeChange, life_years: Decimal | None, cards: LifeKey = ()) -> None:
    if life_years is None:
        return
    factor = lifetime_factor(life_years, change, cards)
    sums.embodied_co2e_g_low *= factor
    sums.embodied_co2e_g_central *= factor
    sums.embodied_co2e_g_high *= factor
    if change.purchase_price_per_gpu is not None:
        left_years = life_years + change.extra_years - (change.prior_use_years or ZERO)
        if left_years <= 0:
            raise ReplayError(f"fleet {change.fleet}: prior_use_years leaves the cards no life to use")
        _hardware(sums, _cards_owned_cost(change.purchase_price_per_gpu, left_years, ZERO, sums))


def _lifetime_notes(inputs: ReplayInputs, gpu_models: set[str], notes: list[str]) -> None:
    if any(isinstance(c, LifetimeChange) for c in inputs.changes):
        unknown = sorted(m for m in gpu_models if m not in inputs.lifetime_years)
        if unknown:
            notes.append(f"no expected life known for GPU model(s) {', '.join(unknown)}: their embodied is unchanged")
    for change in inputs.changes:
        if isinstance(change, LifetimeChange) and not change.second_hand:
            notes.append(
                f"fleet {change.fleet}: hardware cost as measured (the ledger's lines do not split depreciation "
                "from opex); give purchase_price_per_gpu and prior_use_years to cost the cards over their life"
            )


def _model_tokens(
    usage: Mapping[tuple[int, str], ModelUsage], actual: Mapping[int, Sums], scenario: Mapping[int, Sums]
) -> dict[tuple[int, str], tuple[Decimal, Decimal]]:
    """Scenario (generation, prompt) tokens per fleet and model: measured x the fleet's node scaling."""
    models = {}
    for (fleet, model), row in usage.items():
        before = actual[fleet].generation_tokens
        ratio = scenario[fleet].generation_tokens / before if before else ONE
        models[(fleet, model)] = (Decimal(row.generation_tokens) * ratio, Decimal(row.prompt_tokens) * ratio)
    return models


def _route(change: RoutingChange, scenario: dict[int, Sums], models: dict[tuple[int, str], tuple]) -> Decimal:
    """Move the change's share of the model's output tokens; return how many output tokens moved."""
    source, target = scenario.get(change.from_fleet), scenario.get(change.to_fleet)
    generation, prompt = models.get((change.from_fleet, change.llm_model), (ZERO, ZERO))
    if source is None or not generation:
        raise ReplayError(f"fleet {change.from_fleet} served no output tokens of {change.llm_model!r} in the period")
    if target is None or not target.generation_tokens:
        raise ReplayError(f"fleet {change.to_fleet} served no output tokens in the period: nothing to cost them with")
    moved, moved_prompt = generation * change.share, prompt * change.share
    leaving = source.scaled(moved / source.generation_tokens)
    arriving = target.scaled(moved / target.generation_tokens)
    source.add(leaving.scaled(-ONE))
    target.add(arriving)
    # The fleets' average prompt tokens per output token moved with the figures; the model's own move instead.
    source.prompt_tokens += leaving.prompt_tokens - moved_prompt
    target.prompt_tokens += moved_prompt - arriving.prompt_tokens
    models[(change.from_fleet, change.llm_model)] = (generation - moved, prompt - moved_prompt)
    there = models.get((change.to_fleet, change.llm_model), (ZERO, ZERO))
    models[(change.to_fleet, change.llm_model)] = (there[0] + moved, there[1] + moved_prompt)
    return moved
