"""Reads for the inventory: which ledger lines are whose scope, Scope 1 as entered, Category 2 capital goods.

The boundary rule is ``scope2.boundary``'s; this module only feeds it each node's tenure, each line's
power-in-rent (the ledger's electricity status ``included``) and the organization's choices.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal

from django.db.models import BooleanField, Case, Count, Max, Q, Sum, Value, When

from accounting.assets import card_in_service_at, host_in_service_at, owned_price_of
from accounting.hardware import HardwareProfile
from accounting.ledger.embodied import unallocated_fraction
from accounting.ledger.line import ElectricityStatus
from accounting.ledger.units import ZERO
from accounting.models import LedgerNodeDay, LedgerSettings, NodeHourLedger
from accounting.node_days import node_days_in_use
from accounting.profiles import gpu_embodied_asset, hardware_profiles, profile_for_gpu
from common.periods import whole_days
from fleets.models import Gpu, GpuInstallation
from reports.selectors.lines import ledger_rows, site_hours_serve
from scope2.boundary import OWNED, Boundary, Consolidation, ElectricityScope, electricity_scope
from scope2.models import InventoryBoundary, NodeScope, Scope1Emission

NO_LINE = Q(pk__in=[])


def organization_boundary(*, organization_id: int) -> Boundary:
    row = InventoryBoundary.objects.filter(organization_id=organization_id).first()
    if row is None:
        return Boundary()
    return Boundary(Consolidation(row.consolidation_approach), row.equity_share_pct)


def _power_in_rent() -> Case:
    return Case(
        When(electricity_status=ElectricityStatus.INCLUDED.value, then=Value(True)),
        default=Value(False),
        output_field=BooleanField(),
    )


def electricity_line_filters(*, organization_id: int, start: datetime, end: datetime) -> dict[ElectricityScope, Q]:
    """Per electricity scope, a filter on the organization's ledger lines of ``[start, end)`` that are in it.

    One query for the distinct (node, tenure, power in rent) of the period; each is classified by
    ``electricity_scope`` with the node's choice. A scope with no line gets a filter matching none."""
    return electricity_line_filters_since(organization_id=organization_id, since=start, start=start, end=end)[1]


@dataclass(frozen=True)
class ElectricityFilters:
    """Per electricity scope, the filters on the ledger lines of ``[since, end)`` and of ``[start, end)`` that
    are in it; and each as a condition on the lines' electricity status alone where it is one (``None``
    where not: the nodes of one status are in several scopes), which the lines' site-hours can take
    (``accounting.site_hours``: a site-hour has no node)."""

    since: dict[ElectricityScope, Q]
    period: dict[ElectricityScope, Q]
    since_by_status: dict[ElectricityScope, Q | None]
    period_by_status: dict[ElectricityScope, Q | None]


def electricity_line_filters_since(
    *, organization_id: int, since: datetime, start: datetime, end: datetime
) -> tuple[dict[ElectricityScope, Q], dict[ElectricityScope, Q]]:
    """``electricity_line_filters`` of ``[since, end)`` and of ``[start, end)`` (``since <= start``), from one
    query (``electricity_filters_since``)."""
    filters = electricity_filters_since(organization_id=organization_id, since=since, start=start, end=end)
    return filters.since, filters.period


def electricity_filters_since(
    *, organization_id: int, since: datetime, start: datetime, end: datetime
) -> ElectricityFilters:
    """The filters of ``[since, end)`` and of ``[start, end)`` (``since <= start``), from one query: the distinct
    (node, tenure, power in rent) of ``[since, end)``, each marked when it has a line from ``start`` on (those
    are the later period's)."""
    choices = dict(NodeScope.objects.filter(organization_id=organization_id).values_list("node_id", "electricity"))
    found = _node_statuses(organization_id=organization_id, since=since, start=start, end=end)
    since_rows = [(node_id, tenure, in_rent) for node_id, tenure, in_rent, _ in found]
    period_rows = [(node_id, tenure, in_rent) for node_id, tenure, in_rent, in_period in found if in_period]
    return ElectricityFilters(
        _line_filters(since_rows, choices),
        _line_filters(period_rows, choices),
        _status_filters(since_rows, choices),
        _status_filters(period_rows, choices),
    )


def _node_statuses(
    *, organization_id: int, since: datetime, start: datetime, end: datetime
) -> list[tuple[int, str, bool, int]]:
    """The distinct (node, tenure, power in rent) of the organization's lines of ``[since, end)``, each with 1
    where one of its lines is of ``[start, end)``: the whole UTC days of ``[since, start)`` and of ``[start, end)``
    from the ledger's node-days (``accounting.node_days``), the rest from the lines."""
    ranges = [(since, start), (start, end)] if since < start else [(start, end)]
    split = node_days_in_use()
    lines_parts: list[Q] = []
    days_parts: list[Q] = []
    for low, high in ranges:
        first, last = whole_days(low, high) if split else (high, high)
        if first < last:
            days_parts.append(Q(day_start__gte=first, day_start__lt=last))
            lines_parts += [Q(hour_start__gte=low, hour_start__lt=first), Q(hour_start__gte=last, hour_start__lt=high)]
        else:
            lines_parts.append(Q(hour_start__gte=low, hour_start__lt=high))
    found: dict[tuple[int, str, bool], int] = {}
    for model, parts, moment in ((NodeHourLedger, lines_parts, "hour_start"), (LedgerNodeDay, days_parts, "day_start")):
        if not parts:
            continue
        rows = (
            model.objects.filter(_any(parts), organization_id=organization_id)
            .annotate(power_in_rent=_power_in_rent())
            .values("node_id", "node__tenure", "power_in_rent")
            .annotate(in_period=Max(Case(When(**{f"{moment}__gte": start}, then=Value(1)), default=Value(0))))
            .order_by()
            .values_list("node_id", "node__tenure", "power_in_rent", "in_period")
        )
        for node_id, tenure, in_rent, in_period in rows:
            key = (node_id, tenure, in_rent)
            found[key] = max(found.get(key, 0), in_period)
    return [(*key, in_period) for key, in_period in found.items()]


def _scopes(
    rows: list[tuple[int, str, bool]], choices: dict[int, str]
) -> dict[tuple[ElectricityScope, bool], set[int]]:
    """The nodes per (scope, power in rent) of ``rows``."""
    nodes: dict[tuple[ElectricityScope, bool], set[int]] = defaultdict(set)
    for node_id, tenure, in_rent in rows:
        scope = electricity_scope(tenure=tenure, power_in_rent=in_rent, choice=choices.get(node_id, "auto"))
        nodes[(scope, in_rent)].add(node_id)
    return nodes


_INCLUDED = Q(electricity_status=ElectricityStatus.INCLUDED.value)


def _line_filters(rows: list[tuple[int, str, bool]], choices: dict[int, str]) -> dict[ElectricityScope, Q]:
    nodes = _scopes(rows, choices)
    filters = {}
    for scope in ElectricityScope:
        with_rent, without = nodes.get((scope, True), set()), nodes.get((scope, False), set())
        parts = ([Q(node_id__in=with_rent) & _INCLUDED] if with_rent else []) + (
            [Q(node_id__in=without) & ~_INCLUDED] if without else []
        )
        filters[scope] = _any(parts)
    return filters


def _status_filters(rows: list[tuple[int, str, bool]], choices: dict[int, str]) -> dict[ElectricityScope, Q | None]:
    """``_line_filters`` on the electricity status alone, over the lines ``rows`` were read from: where every
    node whose lines have power in the rent (or every node whose lines have not) is in one scope, that scope's
    lines of that status are all of them. ``None`` for every scope where a status splits between scopes."""
    nodes = _scopes(rows, choices)
    by_rent = {in_rent: {scope for scope, rent in nodes if rent == in_rent} for in_rent in (True, False)}
    if any(len(scopes) > 1 for scopes in by_rent.values()):
        return dict.fromkeys(ElectricityScope)
    return {
        scope: _any(([_INCLUDED] if scope in by_rent[True] else []) + ([~_INCLUDED] if scope in by_rent[False] else []))
        for scope in ElectricityScope
    }


def _any(parts: list[Q]) -> Q:
    combined = NO_LINE
    for index, part in enumerate(parts):
        combined = part if index == 0 else combined | part
    return combined


@dataclass(frozen=True)
class Scope1Entry:
    id: int
    site: str
    activity: str
    description: str
    co2e_kg: Decimal  # as entered, for its whole period
    in_period_co2e_kg: Decimal  # the share of its period inside the report's (pro rata temporis)


def scope1_entries(*, organization_id: int, start: datetime, end: datetime) -> list[Scope1Entry]:
    """The direct emissions entered for the organization's sites overlapping ``[start, end)``, pro rata temporis."""
    rows = Scope1Emission.objects.filter(organization_id=organization_id, start__lt=end, end__gt=start)
    entries = []
    for row in rows.select_related("site"):
        inside = (min(row.end, end) - max(row.start, start)).total_seconds()
        share = Decimal(str(inside)) / Decimal(str((row.end - row.start).total_seconds()))
        entries.append(
            Scope1Entry(row.pk, row.site.name, row.activity, row.description, row.co2e_kg, row.co2e_kg * share)
        )
    return entries


@dataclass
class CapitalGoods:
    """Category 2: cradle-to-gate (as the catalog states it) of the owned cards and host shares acquired in the
    period, kgCO2e, whole; ``unknown_model_cards``: acquired cards without a hardware profile."""

    low_kg: Decimal = ZERO
    central_kg: Decimal = ZERO
    high_kg: Decimal = ZERO
    cards: int = 0
    host_shares: int = 0
    unknown_model_cards: int = 0
    second_hand_cards: int = 0
    models: set[str] = field(default_factory=set)

    def add(self, low: Decimal, central: Decimal, high: Decimal) -> None:
        self.low_kg += low
        self.central_kg += central
        self.high_kg += high


def capital_goods(*, organization_id: int, start: datetime, end: datetime) -> CapitalGoods:
    """Owned nodes' cards that went into service in ``[start, end)``, whole, and each such node's host share:
    dated by the one in-service rule depreciation and the amortized view use (``accounting.assets``: the asset
    row's date, else the owned price's in-service date, else the node's commissioning, else the first sample;
    a card that joined the node later, not before its own installation). A second-hand card counts the share of
    its footprint earlier owners' use left (``unallocated_fraction``), as the amortized view does."""
    profiles = hardware_profiles(organization_id=organization_id)
    gpus = list(
        Gpu.objects.filter(node__fleet__organization_id=organization_id, node__tenure=OWNED).select_related(
            "node", "asset__node_price"
        )
    )
    node_of = {gpu.pk: gpu.node_id for gpu in gpus}
    node_installations: dict[int, list[GpuInstallation]] = defaultdict(list)
    for row in GpuInstallation.objects.filter(gpu__in=gpus):
        node_installations[node_of[row.gpu_id]].append(row)
    nodes = {gpu.node_id: gpu.node for gpu in gpus}
    bought = {node_id: owned_price_of(node) for node_id, node in nodes.items()}
    goods = CapitalGoods()
    for gpu in gpus:
        node, price = nodes[gpu.node_id], bought[gpu.node_id]
        card_at = card_in_service_at(gpu, node, price, node_installations[gpu.node_id])
        host_at = host_in_service_at(node, price, node_installations[gpu.node_id])
        _card(goods, gpu, profile_for_gpu(gpu, profiles), (card_at, host_at), (start, end))
    return goods


def _card(
    goods: CapitalGoods, gpu: Gpu, profile: HardwareProfile | None, dated: tuple[datetime | None, datetime | None],
    period: tuple[datetime, datetime],
) -> None:  # fmt: skip
    card_at, host_at = dated
    start, end = period
    if profile is None:
        goods.unknown_model_cards += int(card_at is not None and start <= card_at < end)
        return
    if card_at is not None and start <= card_at < end:
        embodied = gpu_embodied_asset(gpu, profile)
        share = unallocated_fraction(embodied) if embodied is not None else Decimal(1)
        kg = profile.embodied_kgco2e
        goods.add(kg.low * share, kg.central * share, kg.high * share)
        goods.cards += 1
        goods.second_hand_cards += int(share < 1)
        goods.models.add(profile.key)
    if host_at is not None and start <= host_at < end:
        host_kg = profile.host_embodied_kgco2e_per_gpu
        goods.add(host_kg, host_kg, host_kg)
        goods.host_shares += 1
        goods.models.add(profile.key)


@dataclass(frozen=True)
class AmortizationInForce:
    methods: tuple[str, ...]  # as the period's lines were computed (``time``, ``utilization``)
    setting: str  # the organization's setting now
    lives_years: dict[str, Decimal]  # per GPU model with lines in the period: the profile's expected life


def amortization_in_force(*, organization_id: int, start: datetime, end: datetime) -> AmortizationInForce:
    return embodied_in_force(organization_id=organization_id, start=start, end=end)[0]


@dataclass(frozen=True)
class ElectricityUse:
    """The facility energy of one electricity scope's lines and its location-based carbon (kWh, gCO2e)."""

    facility_kwh: Decimal = ZERO
    location_co2e_g: Decimal = ZERO
    location_unknown_kwh: Decimal = ZERO
    nodes: int = 0
    direct_basis_kwh: Decimal = ZERO  # of the located kWh, those whose grid figure is on the direct basis

    @property
    def location_basis(self) -> str | None:
        """The basis of ``location_co2e_g`` (the grid source's own figure): lifecycle, direct or mixed."""
        located = self.facility_kwh - self.location_unknown_kwh
        if not located:
            return None
        if not self.direct_basis_kwh:
            return "lifecycle"
        return "direct" if self.direct_basis_kwh == located else "mixed"


def electricity_use(*, organization_id: int, start: datetime, end: datetime, where: Q) -> ElectricityUse:
    lines = NodeHourLedger.objects.filter(
        where, organization_id=organization_id, hour_start__gte=start, hour_start__lt=end
    )
    sums = lines.aggregate(
        kwh=Sum("facility_kwh"),
        location_g=Sum("location_co2e_g"),
        unknown_kwh=Sum("facility_kwh", filter=Q(location_co2e_g__isnull=True)),
        nodes=Count("node_id", distinct=True),
        direct_kwh=Sum("facility_kwh", filter=Q(location_basis="direct", location_co2e_g__isnull=False)),
    )
    return ElectricityUse(
        sums["kwh"] or ZERO, sums["location_g"] or ZERO, sums["unknown_kwh"] or ZERO, int(sums["nodes"] or 0),
        sums["direct_kwh"] or ZERO,
    )  # fmt: skip


@dataclass(frozen=True)
class AmortizedEmbodied:
    """The ledger's embodied carbon of the period's lines (gCO2e), as the per-token figures carry it."""

    low_g: Decimal
    central_g: Decimal
    high_g: Decimal


def amortized_embodied(*, organization_id: int, start: datetime, end: datetime) -> AmortizedEmbodied:
    return embodied_in_force(organization_id=organization_id, start=start, end=end)[1]


def embodied_in_force(
    *, organization_id: int, start: datetime, end: datetime
) -> tuple[AmortizationInForce, AmortizedEmbodied]:
    """The amortization in force over the period's lines and their embodied carbon: one query, the lines
    summed per (amortization method, GPU model)."""
    site_hours = site_hours_serve(
        organization_ids=[organization_id], start=start, end=end, keys=["amortization", "gpu_model"]
    )  # the lines' site-hours, where kept
    lines = ledger_rows(organization_ids=[organization_id], start=start, end=end, site_hours=site_hours)
    rows = list(
        lines.values("amortization", "gpu_model")
        .annotate(
            low=Sum("embodied_co2e_g_low"), central=Sum("embodied_co2e_g_central"), high=Sum("embodied_co2e_g_high")
        )
        .order_by()
    )
    settings = LedgerSettings.objects.filter(organization_id=organization_id).first()
    profiles = {profile.key: profile for profile in hardware_profiles(organization_id=organization_id)}
    models = {row["gpu_model"] for row in rows}
    method = AmortizationInForce(
        methods=tuple(sorted({row["amortization"] for row in rows})),
        setting=settings.amortization if settings is not None else LedgerSettings.Amortization.TIME.value,
        lives_years={key: profiles[key].lifetime_years for key in sorted(models) if key in profiles},
    )
    low, central, high = (sum((row[name] or ZERO for row in rows), ZERO) for name in ("low", "central", "high"))
    return method, AmortizedEmbodied(low, central, high)
