"""What the ledger needs to price and weigh one node-hour, as frozen dataclasses.

The caller (a service reading hourly rollups, sites, prices and grid intensity)
builds these; the ledger reads nothing else. Units are in every name and
docstring: energy J, money in the site's currency, intensity gCO2e/kWh, carbon
kgCO2e for embodied inventories and g for results, time in hours.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING

from accounting.ledger.units import ONE, PERCENT, ZERO
from accounting.tariff import TariffPrice

if TYPE_CHECKING:
    from accounting.ledger.depreciation import OwnedAsset
    from accounting.ledger.fx import FxRate
    from accounting.ledger.tax import SiteTaxRates

HOUR = timedelta(hours=1)
_MICROSECONDS_PER_HOUR = Decimal(3_600_000_000)


class LedgerInputError(ValueError):
    """An input the ledger refuses to price (naive time, negative energy, held > 1 h...)."""


def require_utc_hour(hour_start: datetime) -> None:
    """Raise unless ``hour_start`` is an aware UTC datetime on a whole hour."""
    if hour_start.tzinfo is None or hour_start.utcoffset() != timedelta(0):
        raise LedgerInputError(f"hour_start must be aware UTC, got {hour_start.isoformat()}")
    if (hour_start.minute, hour_start.second, hour_start.microsecond) != (0, 0, 0):
        raise LedgerInputError(f"hour_start must be on the hour, got {hour_start.isoformat()}")


def _require_non_negative(**values: Decimal | int) -> None:
    for name, value in values.items():
        if value < 0:
            raise LedgerInputError(f"{name} must not be negative, got {value}")


def hours_held(hour_start: datetime, commissioned_at: datetime | None, decommissioned_at: datetime | None) -> Decimal:
    """Hours (0 to 1, exact) of the UTC hour at ``hour_start`` during which the node was held.

    A node commissioned or decommissioned mid-hour is held for part of it; outside
    ``[commissioned_at, decommissioned_at)`` it is held for 0 hours.
    """
    require_utc_hour(hour_start)
    if any(at is not None and at.utcoffset() is None for at in (commissioned_at, decommissioned_at)):
        raise LedgerInputError("commissioned_at and decommissioned_at must be aware datetimes")
    start = max(hour_start, commissioned_at or hour_start)
    end = min(hour_start + HOUR, decommissioned_at or hour_start + HOUR)
    held = max(end - start, timedelta(0))
    return Decimal(held // timedelta(microseconds=1)) / _MICROSECONDS_PER_HOUR


@dataclass(frozen=True)
class EmbodiedKg:
    """Embodied emissions of one asset in kgCO2e, as a range (low <= central <= high)."""

    low: Decimal
    central: Decimal
    high: Decimal

    def __post_init__(self) -> None:
        _require_non_negative(low=self.low)
        if not self.low <= self.central <= self.high:
            raise LedgerInputError(f"embodied range out of order: {self.low} / {self.central} / {self.high}")


class AmortizationMethod(enum.StrEnum):
    """How an asset's embodied emissions are spread over the hours it is held.

    TIME (default, SCI): embodied x hours held / life, whatever the asset did.
    UTILIZATION: the time-based share x the hour's utilization (0-1), so a
    workload bears only the share it used; the rest is not attributed to any
    line. Use TIME for inventories; UTILIZATION only for workload comparisons.
    """

    TIME = "time"
    UTILIZATION = "utilization"


@dataclass(frozen=True)
class EmbodiedAsset:
    """A physical asset (a GPU card, or a node's host share) whose embodied carbon we amortize.

    ``total_life_h``: expected service life from new, in hours.
    ``prior_use_h``: hours of service before we acquired it (0 when bought new).
    ``own_life_h``: hours of service we expect to get from it; ``None`` means
    the rest of its expected life, ``total_life_h - prior_use_h``.
    See ``accounting.ledger.embodied`` for the remaining-life rule.
    """

    embodied_kgco2e: EmbodiedKg
    total_life_h: Decimal
    prior_use_h: Decimal = ZERO
    own_life_h: Decimal | None = None

    def __post_init__(self) -> None:
        if self.total_life_h <= 0:
            raise LedgerInputError(f"total_life_h must be positive, got {self.total_life_h}")
        _require_non_negative(prior_use_h=self.prior_use_h, own_life_h=self.own_life_h or ZERO)


@dataclass(frozen=True)
class GpuHourInput:
    """One GPU during one node-hour.

    ``energy_j``: energy it drew in the hour (counter delta), J.
    ``tokens_served``: tokens (prompt + generation) of endpoints running on it.
    ``mean_util_pct``: mean utilization 0-100, ``None`` if not sampled.
    ``embodied``: its embodied-carbon asset; ``None`` when the model is unknown,
    which the line reports as hours without embodied data, never as zero.
    ``installed_h``: hours (0-1) of the node's held time in this hour that the
    card was installed; ``None``: all of it. Rent per GPU-hour, embodied
    amortization and idle time count these hours only (a swapped card is not
    charged beside its replacement).
    ``embodied_h``: of those hours, the ones before the end of the card's own
    embodied life; ``None``: all of them. A life that ends inside the hour
    carries embodied carbon up to its end only, as a card installed inside
    the hour does from its installation.
    """

    gpu_id: str
    energy_j: Decimal
    tokens_served: int
    mean_util_pct: Decimal | None
    embodied: EmbodiedAsset | None
    installed_h: Decimal | None = None
    embodied_h: Decimal | None = None

    def __post_init__(self) -> None:
        _require_non_negative(energy_j=self.energy_j, tokens_served=self.tokens_served)
        for name, hours in (("installed_h", self.installed_h), ("embodied_h", self.embodied_h)):
            if hours is not None and not ZERO <= hours <= ONE:
                raise LedgerInputError(f"{name} must be within 0-1, got {hours}")
        if self.mean_util_pct is not None and not ZERO <= self.mean_util_pct <= PERCENT:
            raise LedgerInputError(f"mean_util_pct must be 0-100, got {self.mean_util_pct}")


class RatePer(enum.StrEnum):
    NODE = "node"
    GPU = "gpu"


@dataclass(frozen=True)
class RentedPricing:
    """A rented node: ``rate_per_h`` (currency per hour) per node or per GPU.

    ``includes_power``: the rent covers electricity, so the line has no
    electricity cost (shown as included, not as zero-priced energy).
    """

    rate_per_h: Decimal
    per: RatePer
    includes_power: bool
    price_id: str = "rent"
    currency: str | None = None  # the rent's currency; None: the line's (the site's)
    includes_vat: bool = False  # a gross rent, made net at the hour's VAT (``accounting.ledger.tax.net_of_vat``)


@dataclass(frozen=True)
class OwnedPricing:
    """An owned node: depreciation plus ``opex_per_h``, money in the site's currency.

    ``asset``: the node as its fixed-asset register holds it (cost, salvage,
    in-service date, useful life, method, disposal): the ledger's lines charge
    its depreciation by the book over the hours held (``accounting.ledger.depreciation``).
    Without one (a what-if with no dates, the scenario replay), ``capex`` is
    spread straight-line over ``lifetime_h`` per hour held, with no end.
    """

    capex: Decimal
    lifetime_h: Decimal
    opex_per_h: Decimal
    price_id: str = "owned"
    asset: OwnedAsset | None = None
    currency: str | None = None  # capex and opex's currency; None: the line's (the site's)
    includes_vat: bool = False  # gross capex and opex, made net at the hour's VAT (``net_of_vat``)

    def __post_init__(self) -> None:
        if self.lifetime_h <= 0:
            raise LedgerInputError(f"lifetime_h must be positive, got {self.lifetime_h}")


Pricing = RentedPricing | OwnedPricing


@dataclass(frozen=True)
class IntensityFactor:
    """Carbon intensity of electricity, gCO2e/kWh, tagged with where it came from.

    ``source`` examples: ``"electricitymaps:live"``, ``"ember:annual-2023"``,
    ``"contract:ppa-7"``, ``"residual-mix:aib-2023"``. ``basis`` says what ``g_per_kwh``
    counts (``lifecycle``: with upstream; ``direct``: combustion only); ``direct_g_per_kwh``
    is the same hour's direct figure where the source gives one.
    """

    g_per_kwh: Decimal
    source: str
    basis: str = "lifecycle"
    direct_g_per_kwh: Decimal | None = None

    def __post_init__(self) -> None:
        _require_non_negative(g_per_kwh=self.g_per_kwh)
        if self.direct_g_per_kwh is not None:
            _require_non_negative(direct_g_per_kwh=self.direct_g_per_kwh)


@dataclass(frozen=True)
class NodeHourInput:
    """Everything the ledger needs for one node during one UTC hour.

    ``node_energy_j``: the node's whole IT energy if measured (GPUs and host),
    else ``None`` and the GPUs' sum is used. ``observed_s``: seconds of the held
    time covered by samples (coverage, reported, never extrapolated);
    ``bridged_s``: further seconds inside gaps whose energy and tokens a
    counter proved (counted in full, labelled bridged); the rest is missing.
    ``held_h``: hours of this hour the node was held (see ``hours_held``).
    ``tariff``: ``None`` when no tariff is in force (electricity left unpriced).
    ``location``/``market``: ``None`` when no factor is known for the hour.
    ``host_embodied``: the node's host (chassis, CPUs, RAM, disks) embodied share;
    ``host_embodied_h``: the hours of ``held_h`` before the end of its life
    (``None``: all of them).
    ``host_modelled_j``: without ``node_energy_j``, the host's energy beyond its
    GPUs modelled from the hardware profile (idle + per-GPU power x the time the
    GPUs' energy covers); a node meter's ``node_energy_j`` always wins over it.
    """

    node_id: str
    hour_start: datetime
    currency: str
    gpus: tuple[GpuHourInput, ...]
    node_energy_j: Decimal | None
    observed_s: Decimal
    held_h: Decimal
    prompt_tokens: int
    generation_tokens: int
    pue: Decimal
    tariff: TariffPrice | None
    pricing: Pricing
    location: IntensityFactor | None
    market: IntensityFactor | None
    host_embodied: EmbodiedAsset | None = None
    host_embodied_h: Decimal | None = None
    bridged_s: Decimal = ZERO
    host_modelled_j: Decimal | None = None  # the host's energy (J) modelled from its profile, where not metered
    # When the held part of the hour begins (None: at hour_start); it lasts held_h. Depreciation by the
    # book is charged over exactly that span, and a disposal at its end books the disposal loss.
    held_from: datetime | None = None
    # Of prompt_tokens, those served from the prefix cache; None where no server on the node exposes the counter.
    cached_prompt_tokens: int | None = None
    # Requests the node's serving endpoints answered in the hour (their request counters): SCI's R.
    requests: int = 0
    # A price in another currency than ``currency``: the month's average rate from it into ``currency``
    # (``accounting.ledger.fx``); None: no rate held, the hardware cost stays unconverted.
    price_fx: FxRate | None = None
    # The site's tax in force at the hour (VAT, energy tax; ``accounting.ledger.tax``); None: none known.
    tax: SiteTaxRates | None = None

    def __post_init__(self) -> None:
        require_utc_hour(self.hour_start)
        if not ZERO <= self.held_h <= ONE:
            raise LedgerInputError(f"held_h must be within 0-1, got {self.held_h}")
        if not self.hour_start <= self.held_span[0] <= self.held_span[1] <= self.hour_start + HOUR:
            raise LedgerInputError(f"held from {self.held_from} for {self.held_h} h is not within the hour")
        if self.pue < ONE:
            raise LedgerInputError(f"pue must be at least 1, got {self.pue}")
        _require_non_negative(observed_s=self.observed_s, prompt_tokens=self.prompt_tokens)
        _require_non_negative(generation_tokens=self.generation_tokens, node_energy_j=self.node_energy_j or ZERO)
        for gpu in self.gpus:
            if gpu.installed_h is not None and gpu.installed_h > self.held_h:
                raise LedgerInputError(f"GPU {gpu.gpu_id}: installed_h {gpu.installed_h} > held_h {self.held_h}")
            if gpu.embodied_h is not None and gpu.embodied_h > self.gpu_held_h(gpu):
                raise LedgerInputError(f"GPU {gpu.gpu_id}: embodied_h {gpu.embodied_h} > its held hours")
        if self.host_embodied_h is not None and not ZERO <= self.host_embodied_h <= self.held_h:
            raise LedgerInputError(f"host_embodied_h must be within 0-held_h, got {self.host_embodied_h}")

    def gpu_held_h(self, gpu: GpuHourInput) -> Decimal:
        """Hours of this hour ``gpu`` was installed while the node was held."""
        return self.held_h if gpu.installed_h is None else gpu.installed_h

    def gpu_embodied_h(self, gpu: GpuHourInput) -> Decimal:
        """Hours of this hour ``gpu`` carries embodied carbon: installed, held and inside its own life."""
        return self.gpu_held_h(gpu) if gpu.embodied_h is None else gpu.embodied_h

    @property
    def host_embodied_held_h(self) -> Decimal:
        """Hours of this hour the host share carries embodied carbon: held and inside its life."""
        return self.held_h if self.host_embodied_h is None else self.host_embodied_h

    @property
    def held_span(self) -> tuple[datetime, datetime]:
        """The instants the node was held within the hour: ``[held_from, held_from + held_h)``."""
        start = self.held_from or self.hour_start
        return start, start + timedelta(microseconds=int(self.held_h * _MICROSECONDS_PER_HOUR))

    @property
    def gpu_h(self) -> Decimal:
        """GPU-hours installed and held in this hour: what rent per GPU-hour and embodied amortization count."""
        return sum((self.gpu_held_h(gpu) for gpu in self.gpus), ZERO)

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.generation_tokens


@dataclass(frozen=True)
class LedgerPolicy:
    """Choices an organization may make; the defaults are what reports show unless changed.

    ``idle_util_threshold_pct``: a GPU that served no tokens and whose mean
    utilization is below this (0-100) is idle for the hours it was held.
    ``model_host_power``: where a node has no meter, add its host's energy
    modelled from the hardware profile's cited idle and per-GPU power (the line
    says ``modelled``); off, such a node stays at the GPU boundary (``gpu_sum``).
    """

    idle_util_threshold_pct: Decimal = Decimal(5)
    amortization: AmortizationMethod = AmortizationMethod.TIME
    model_host_power: bool = False


DEFAULT_POLICY = LedgerPolicy()
