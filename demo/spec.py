"""The demo organization as data: sites, fleets, nodes, prices, tariffs and market factors, with their basis.

Pure data (no ORM): ``demo.inventory`` writes it. Every site bills in
USD, so fleet totals add up without exchange rates; European prices are
converted once, here, at the rates below, and each comment gives the local figure.
Prices are approximate public figures from 2025, for a demo, not quotes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal

from accounting.ledger.inputs import IntensityFactor

ORGANIZATION = "Demo AI"
USERNAME = "admin"
PASSWORD = "wattledger-demo"  # noqa: S105 - a local demo login, printed on purpose
SEED = 2025  # the collectors' --seed: the same seed and hostname give the same GPUs and samples
SIMULATED_INTENSITY_SOURCE = "simulated:annual-shaped"

# Approximate 2025 averages; converting once keeps every site in USD.
USD_PER_EUR = Decimal("1.10")
USD_PER_SEK = Decimal("0.100")
USD_PER_PLN = Decimal("0.265")


def usd(amount: str, rate: Decimal = Decimal(1)) -> Decimal:
    """A local price in USD, to 1/100 cent."""
    return (Decimal(amount) * rate).quantize(Decimal("0.0001"))


@dataclass(frozen=True)
class Window:
    """A time-of-use window in the site's local time (see ``accounting.tariff``)."""

    name: str
    start: str
    end: str
    price_per_kwh: Decimal
    days: tuple[int, ...] | None = None  # Monday = 0; None: every day

    def as_json(self) -> dict[str, object]:
        raw: dict[str, object] = {
            "name": self.name,
            "start": self.start,
            "end": self.end,
            "price_per_kwh": str(self.price_per_kwh),
        }
        if self.days is not None:
            raw["days"] = list(self.days)
        return raw


@dataclass(frozen=True)
class TaxSpec:
    """A ``SiteTax``: VAT (a fraction; recoverable or not) and an energy tax per facility kWh, in USD."""

    vat_rate: Decimal
    vat_recoverable: bool
    energy_tax_per_kwh: Decimal = Decimal(0)


@dataclass(frozen=True)
class SiteSpec:
    name: str
    grid_zone: str
    country: str
    pue: Decimal
    time_zone: str
    windows: tuple[Window, ...] = ()  # empty: no tariff (power is paid in the rent)
    market: IntensityFactor | None = None
    currency: str = "USD"
    # The tariff's prices include VAT (gross), its fixed charge per month and demand charge per kW-month (net, USD).
    prices_include_vat: bool = False
    fixed_per_month: Decimal = Decimal(0)
    demand_per_kw_month: Decimal = Decimal(0)
    tax: TaxSpec | None = None


@dataclass(frozen=True)
class PriceSpec:
    """A ``NodePrice``: rented per GPU-hour, or owned (capex over a lifetime, plus opex per node-hour)."""

    kind: str  # "rented" or "owned"
    rate_per_gpu_h: Decimal | None = None
    includes_power: bool = False
    capex: Decimal | None = None
    lifetime_years: Decimal | None = None
    opex_per_h: Decimal = Decimal(0)


@dataclass(frozen=True)
class AssetSpec:
    """How a node's cards were acquired: ``acquired_days_before`` the backfill window starts."""

    acquired_days_before: int
    prior_use_years: Decimal = Decimal(0)  # 0: bought new
    expected_own_years: Decimal | None = None


@dataclass(frozen=True)
class NodeSpec:
    hostname: str
    site: str
    model: str  # the collector's --simulate model key
    gpu_count: int
    tenure: str
    price: PriceSpec | None = None  # None: the fleet's default price
    assets: tuple[AssetSpec, ...] = ()  # one per GPU, in index order; empty: no asset rows
    llm: str = "8b"  # the collector's --simulate-llm: the one LLM the node's inference server serves

    @property
    def simulate(self) -> str:
        return f"{self.model}:{self.gpu_count}"


@dataclass(frozen=True)
class FleetSpec:
    name: str
    description: str
    price: PriceSpec
    nodes: tuple[NodeSpec, ...] = field(default_factory=tuple)
    # The collector's --simulate-pattern: the fleet's weekly load (telemetry.collector.simulated.PATTERNS).
    load_pattern: str = "steady"


# --- prices ----------------------------------------------------------------------

# H100 PCIe (the card the study measured) at USD 1.99 per GPU-hour: the study's "alternative
# provider" on-demand price (IOG-Foundation/llm-inference-benchmarks README, May 2025); power,
# cooling and the host are in the rent, as with every cloud GPU rental.
H100_RENT = PriceSpec("rented", rate_per_gpu_h=Decimal("1.99"), includes_power=True)
# A rented RTX 4090 on a GPU marketplace: RunPod community cloud ~0.34, Vast.ai asks
# mostly 0.35-0.50 USD per GPU-hour (2025); the host pays the electricity.
RTX4090_RENT = PriceSpec("rented", rate_per_gpu_h=Decimal("0.40"), includes_power=True)
# An owned 4 x RTX 4090 box: cards ~1,800 USD each (2025 street price; MSRP 1,599),
# host (CPU, board, 128 GB RAM, 2 PSUs, chassis) ~2,400 USD, over 4 years; opex
# 0.04 USD/h (~29 USD a month: internet share, spares, upkeep). Power is billed by the tariff.
RTX4090_OWNED = PriceSpec(
    "owned", capex=Decimal(4 * 1800 + 2400), lifetime_years=Decimal(4), opex_per_h=Decimal("0.04")
)
# The same box with second-hand cards (~1,300 USD each, 2025 used market), kept 3 years.
RTX4090_OWNED_USED = PriceSpec(
    "owned", capex=Decimal(4 * 1300 + 2400), lifetime_years=Decimal(3), opex_per_h=Decimal("0.04")
)

# --- sites -----------------------------------------------------------------------

_WEEKDAYS = (0, 1, 2, 3, 4)
_WEEKEND = (5, 6)

SITES = (
    SiteSpec(
        "dc-sjc",
        "US-CAL-CISO",
        "US",
        Decimal("1.20"),
        "America/Los_Angeles",
        # The enterprise fleet rents here with power in the rent: this electricity is the provider's
        # Scope 2 and the demo's Scope 3 Category 1 (scope2.boundary), so the demo claims no instrument
        # of its own here. Illustrative: the provider's stated market-based factor for the capacity it
        # sells (~80 % solar-matched at 0 g, the rest at a CAISO residual mix of ~250 g), for the ledger's
        # internal per-line figures.
        market=IntensityFactor(Decimal(50), "provider:sjc-colo-stated-factor-2025"),
    ),
    SiteSpec(
        "home-sto",
        "SE-SE3",
        "SE",
        Decimal("1.02"),
        "Europe/Stockholm",
        # Stockholm household, all-in (SE3 spot + grid fee + energy tax + VAT), with a
        # time-of-use grid tariff ("tidstariff": high-load hours weekdays 06-22):
        # ~2.30 SEK/kWh peak, ~1.50 SEK/kWh otherwise.
        windows=(
            Window("peak", "06:00", "22:00", usd("2.30", USD_PER_SEK), _WEEKDAYS),
            Window("night", "22:00", "06:00", usd("1.50", USD_PER_SEK), _WEEKDAYS),
            Window("weekend", "06:00", "06:00", usd("1.50", USD_PER_SEK), _WEEKEND),
        ),
        # A hydro contract backed by guarantees of origin counts as 0 g (GHG Protocol Scope 2).
        market=IntensityFactor(Decimal(0), "contract:hydro-guarantees-of-origin"),
        # The all-in prices include 25 % VAT, which a household cannot reclaim (a cost); the energy tax is in
        # them too, so none is added. The marketplace rent of the box rented here is quoted net (USD, as
        # RunPod and Vast.ai list it): the household pays the 25 % on it too, and on the owned box's running
        # cost (in cost: the README's consumer figures include it). The grid subscription: ~300 SEK a month,
        # and a power charge ("effektavgift") of ~50 SEK per kW of the month's peak (illustrative, of the order
        # of Ellevio's).
        prices_include_vat=True,
        tax=TaxSpec(Decimal("0.25"), vat_recoverable=False),
        fixed_per_month=usd("300", USD_PER_SEK),
        demand_per_kw_month=usd("50", USD_PER_SEK),
    ),
    SiteSpec(
        "home-ber",
        "DE",
        "DE",
        Decimal("1.03"),
        "Europe/Berlin",
        # Berlin household, all-in ~0.39 EUR/kWh on average (BDEW 2025), with the
        # time-variable grid fee of EnWG section 14a (module 3): high 17-21, low 23-06.
        windows=(
            Window("high", "17:00", "21:00", usd("0.44", USD_PER_EUR)),
            Window("standard-day", "06:00", "17:00", usd("0.38", USD_PER_EUR)),
            Window("standard-evening", "21:00", "23:00", usd("0.38", USD_PER_EUR)),
            Window("low", "23:00", "06:00", usd("0.31", USD_PER_EUR)),
        ),
        # A standard supply contract: the residual mix (illustrative, of the order of the
        # AIB residual mix for Germany; use the current AIB report for real reporting).
        market=IntensityFactor(Decimal(700), "residual-mix:AIB-DE-approx"),
    ),
    SiteSpec(
        "home-waw",
        "PL",
        "PL",
        Decimal("1.05"),
        "Europe/Warsaw",
        # Warsaw household on the two-zone G12 tariff, all-in (energy + distribution
        # + VAT): ~1.10 PLN/kWh by day, ~0.70 PLN/kWh 13-15 and 22-06.
        windows=(
            Window("day", "06:00", "13:00", usd("1.10", USD_PER_PLN)),
            Window("afternoon-off-peak", "13:00", "15:00", usd("0.70", USD_PER_PLN)),
            Window("evening", "15:00", "22:00", usd("1.10", USD_PER_PLN)),
            Window("night", "22:00", "06:00", usd("0.70", USD_PER_PLN)),
        ),
        # No green contract: the residual mix (illustrative, of the order of the AIB
        # residual mix for Poland; use the current AIB report for real reporting).
        market=IntensityFactor(Decimal(800), "residual-mix:AIB-PL-approx"),
    ),
)

# --- fleets and nodes --------------------------------------------------------------

_NEW = AssetSpec(acquired_days_before=400)
_NEWER = AssetSpec(acquired_days_before=150)
# Ex-gaming cards bought after 1.5 years of use, kept 2.5 more.
_USED = AssetSpec(acquired_days_before=200, prior_use_years=Decimal("1.5"), expected_own_years=Decimal("2.5"))

# Each node's inference server serves one LLM: the study's 8B (Llama 3 8B class) or its 14B
# (DeepSeek-R1-Distill-Qwen-14B). Both fleets serve both; on the consumer fleet the 14B (two
# cards per replica, tensor parallel) runs on three owned boxes, the 8B on the rented ones and
# the second-hand box.
# The headline (seed_demo's summary, `manage.py headline`, the README): the consumer fleet against the
# enterprise one, LLM model by LLM model.
HEADLINE_FLEET, HEADLINE_BASELINE = "consumer", "enterprise"
FLEETS = (
    FleetSpec(
        "enterprise",
        "Rented H100 PCIe nodes in a San Jose data centre: low latency, power in the rent, busy on weekdays.",
        H100_RENT,
        (
            NodeSpec("sjc-h100-01", "dc-sjc", "h100-pcie", 8, "rented", llm="8b"),
            NodeSpec("sjc-h100-02", "dc-sjc", "h100-pcie", 8, "rented", llm="14b"),
        ),
        load_pattern="office",
    ),
    FleetSpec(
        "consumer",
        "RTX 4090 boxes, owned at home sites and rented on a marketplace: cheap tokens, slower first token, "
        "idle at night and on weekend mornings.",
        RTX4090_OWNED,
        (
            NodeSpec("sto-4090-01", "home-sto", "rtx-4090", 4, "owned", assets=(_NEW,) * 4, llm="14b"),
            NodeSpec("sto-4090-02", "home-sto", "rtx-4090", 4, "rented", price=RTX4090_RENT, llm="8b"),
            NodeSpec("ber-4090-01", "home-ber", "rtx-4090", 4, "owned", assets=(_NEWER,) * 4, llm="14b"),
            NodeSpec(
                "ber-4090-02",
                "home-ber",
                "rtx-4090",
                4,
                "owned",
                price=RTX4090_OWNED_USED,
                assets=(_USED,) * 4,
                llm="8b",
            ),
            NodeSpec("waw-4090-01", "home-waw", "rtx-4090", 4, "owned", assets=(_NEW, _NEW, _USED, _USED), llm="14b"),
            NodeSpec("waw-4090-02", "home-waw", "rtx-4090", 4, "rented", price=RTX4090_RENT, llm="8b"),
        ),
        load_pattern="spare",
    ),
)


def all_nodes() -> list[tuple[FleetSpec, NodeSpec]]:
    return [(fleet, node) for fleet in FLEETS for node in fleet.nodes]


# --- workload classes ----------------------------------------------------------------


@dataclass(frozen=True)
class WorkloadClassSpec:
    """A ``WorkloadClass`` of the demo, created once (a user's later edits are kept)."""

    name: str
    llm: str  # a key of telemetry.collector.simprofiles.LLMS
    ttft_target_ms: int
    expected_output_tokens_per_day: int
    ttft_percentile: int = 99
    deadline_h: int | None = None  # None: latency-sensitive
    carbon_weight: Decimal = Decimal(0)


# Sized against the fleets' measured capacity per day at full load (8B: ~1.9 billion output
# tokens on the enterprise node, ~1.7 on the consumer ones; 14B: ~1.0 and ~0.3 billion).
WORKLOAD_CLASSES = (
    # Interactive chat with a real-time target: the study's "tight SLO" traffic. The RTX 4090s'
    # P99 on the 8B (110-330 ms) misses 150 ms; the H100s' (27-78 ms) holds it.
    WorkloadClassSpec("Chat assistant", "8b", ttft_target_ms=150, expected_output_tokens_per_day=600_000_000),
    # Batch summarisation: first-token latency hardly matters, a day's deadline does; cost
    # leads, carbon weighs a fifth: the study's "send batch work to idle consumer GPUs".
    WorkloadClassSpec(
        "Document summaries",
        "14b",
        ttft_target_ms=5_000,
        expected_output_tokens_per_day=150_000_000,
        deadline_h=24,
        carbon_weight=Decimal("0.2"),
    ),
)
