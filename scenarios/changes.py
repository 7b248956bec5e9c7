"""A scenario's changes, parsed from JSON into frozen dataclasses (pure: no framework).

Each change is an object with a ``kind`` and that kind's fields (money in the
sites' currency, years of 8760 h, shares 0-1):

- ``nodes``: ``fleet``, ``gpu_model``, ``nodes`` (signed: +N adds, -N removes): the
  fleet's node-hours of that GPU model scaled hour by hour by ``(n + N) / n``, every
  measured figure (energy, cost, carbon, tokens) included: the added nodes work like
  the fleet's average node of that hour.
- ``lifetime``: ``fleet``, ``extra_years``; second-hand: ``purchase_price_per_gpu`` and
  ``prior_use_years`` (both or neither): the cards' embodied carbon spread over the
  longer life (the ledger's remaining-life rule); second-hand cards are paid for at
  the purchase price over the years left to them.
- ``move``: ``fleet`` and one or more of ``zone`` (grid zone), ``price_per_kwh`` (a
  flat tariff, net of VAT), ``pue``, ``site`` (another site of the organization: its taxes,
  VAT and energy tax in force each hour, instead of the measured site's).
- ``tenure``: ``fleet``, ``mode`` ``rent`` (``rate_per_gpu_h``, ``includes_power``) or
  ``own`` (``capex_per_gpu``, ``lifetime_years``, ``opex_per_gpu_h``).
- ``routing``: ``llm_model`` (or ``workload_class``, a class's name: its model), ``from_fleet``,
  ``to_fleet``, ``share``: that share of the model's output tokens on ``from_fleet`` served by
  ``to_fleet`` instead.

``changes_parse`` refuses anything else with a message naming the field
(``changes[1].share: ...``); fleets are checked against the organization by the service.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

MAX_CHANGES = 20
MAX_NODES = 100_000
MAX_YEARS = Decimal(30)
ZONE_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")


class ChangeInvalid(ValueError):
    """A change the replay refuses; the message names the field (``changes[0].share: ...``)."""


class Kind(enum.StrEnum):
    NODES = "nodes"
    LIFETIME = "lifetime"
    MOVE = "move"
    TENURE = "tenure"
    ROUTING = "routing"


@dataclass(frozen=True)
class FleetChange:
    """A change to one fleet: every kind but routing, which moves load from one fleet to another."""

    fleet: int


@dataclass(frozen=True)
class NodesChange(FleetChange):
    gpu_model: str
    nodes: int


@dataclass(frozen=True)
class LifetimeChange(FleetChange):
    extra_years: Decimal
    purchase_price_per_gpu: Decimal | None = None
    prior_use_years: Decimal | None = None

    @property
    def second_hand(self) -> bool:
        return self.purchase_price_per_gpu is not None


@dataclass(frozen=True)
class MoveChange(FleetChange):
    zone: str | None = None
    price_per_kwh: Decimal | None = None
    pue: Decimal | None = None
    site: int | None = None  # the site whose taxes the fleet's hours take


@dataclass(frozen=True)
class TenureChange(FleetChange):
    mode: str  # "rent" or "own"
    rate_per_gpu_h: Decimal = Decimal(0)
    includes_power: bool = False
    capex_per_gpu: Decimal = Decimal(0)
    lifetime_years: Decimal = Decimal(1)
    opex_per_gpu_h: Decimal = Decimal(0)


@dataclass(frozen=True)
class RoutingChange:
    llm_model: str  # "" until the service resolves ``workload_class`` to its model
    from_fleet: int
    to_fleet: int
    share: Decimal
    workload_class: str | None = None


Change = NodesChange | LifetimeChange | MoveChange | TenureChange | RoutingChange


def change_fleets(change: Change) -> tuple[int, ...]:
    """The fleet ids a change names."""
    if isinstance(change, FleetChange):
        return (change.fleet,)
    return (change.from_fleet, change.to_fleet)


class _Fields:
    """Reads one change object's fields, each refusal naming ``changes[i].field``."""

    def __init__(self, raw: dict[str, Any], where: str) -> None:
        self.raw, self.where = raw, where

    def fail(self, name: str, message: str) -> ChangeInvalid:
        return ChangeInvalid(f"{self.where}.{name}: {message}")

    def present(self, name: str) -> bool:
        return self.raw.get(name) not in (None, "")

    def integer(self, name: str, *, minimum: int | None = None, maximum: int | None = None) -> int:
        value = self.raw.get(name)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(name, "an integer is required")
        if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
            raise self.fail(name, f"must be within {minimum} and {maximum}")
        return value

    def text(self, name: str, *, max_length: int = 256) -> str:
        value = self.raw.get(name)
        if not isinstance(value, str) or not value.strip():
            raise self.fail(name, "a non-empty text is required")
        if len(value) > max_length:
            raise self.fail(name, f"at most {max_length} characters")
        if not value.isprintable():  # a NUL or control character: no name has one, and JSON columns refuse NUL
            raise self.fail(name, "printable characters only")
        return value.strip()

    def decimal(self, name: str, *, minimum: Decimal = Decimal(0), maximum: Decimal | None = None) -> Decimal:
        value = self.raw.get(name)
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            raise self.fail(name, "a number is required")
        try:
            number = Decimal(str(value))
        except InvalidOperation:
            raise self.fail(name, "a number is required") from None
        if not number.is_finite():
            raise self.fail(name, "a finite number is required")
        if number < minimum or (maximum is not None and number > maximum):
            bound = f"within {minimum} and {maximum}" if maximum is not None else f"at least {minimum}"
            raise self.fail(name, f"must be {bound}")
        return number

    def boolean(self, name: str, default: bool) -> bool:
        value = self.raw.get(name, default)
        if not isinstance(value, bool):
            raise self.fail(name, "true or false")
        return value

    def only(self, allowed: set[str]) -> None:
        unknown = sorted(set(self.raw) - allowed - {"kind"})
        if unknown:
            raise self.fail(unknown[0], f"not a field of a {self.raw['kind']} change")


def _nodes(f: _Fields) -> NodesChange:
    f.only({"fleet", "gpu_model", "nodes"})
    nodes = f.integer("nodes", minimum=-MAX_NODES, maximum=MAX_NODES)
    if nodes == 0:
        raise f.fail("nodes", "must not be 0 (positive adds nodes, negative removes them)")
    return NodesChange(f.integer("fleet", minimum=1), f.text("gpu_model", max_length=64), nodes)


def _lifetime(f: _Fields) -> LifetimeChange:
    f.only({"fleet", "extra_years", "purchase_price_per_gpu", "prior_use_years"})
    extra = f.decimal("extra_years", minimum=Decimal("0.1"), maximum=MAX_YEARS)
    if f.present("purchase_price_per_gpu") != f.present("prior_use_years"):
        raise f.fail("prior_use_years", "a second-hand card needs both purchase_price_per_gpu and prior_use_years")
    if not f.present("purchase_price_per_gpu"):
        return LifetimeChange(f.integer("fleet", minimum=1), extra)
    price, prior = f.decimal("purchase_price_per_gpu"), f.decimal("prior_use_years", maximum=MAX_YEARS)
    return LifetimeChange(f.integer("fleet", minimum=1), extra, price, prior)


def _move(f: _Fields) -> MoveChange:
    f.only({"fleet", "zone", "price_per_kwh", "pue", "site"})
    if not any(f.present(name) for name in ("zone", "price_per_kwh", "pue", "site")):
        raise f.fail("zone", "give a zone, a price_per_kwh, a pue or a site (one or more)")
    return MoveChange(
        fleet=f.integer("fleet", minimum=1),
        zone=_zone(f) if f.present("zone") else None,
        price_per_kwh=f.decimal("price_per_kwh", maximum=Decimal(1000)) if f.present("price_per_kwh") else None,
        pue=f.decimal("pue", minimum=Decimal(1), maximum=Decimal(5)) if f.present("pue") else None,
        site=f.integer("site", minimum=1) if f.present("site") else None,
    )


def _zone(f: _Fields) -> str:
    zone = f.text("zone", max_length=64)
    if not ZONE_PATTERN.fullmatch(zone):
        raise f.fail("zone", "a grid zone key such as DE, FR or US-CAL-CISO")
    return zone


def _tenure(f: _Fields) -> TenureChange:
    mode, fleet = f.raw.get("mode"), f.integer("fleet", minimum=1)
    if mode == "rent":
        f.only({"fleet", "mode", "rate_per_gpu_h", "includes_power"})
        return TenureChange(fleet, "rent", f.decimal("rate_per_gpu_h"), f.boolean("includes_power", False))
    if mode == "own":
        f.only({"fleet", "mode", "capex_per_gpu", "lifetime_years", "opex_per_gpu_h"})
        capex, life = f.decimal("capex_per_gpu"), f.decimal("lifetime_years", minimum=Decimal("0.1"), maximum=MAX_YEARS)
        opex = f.decimal("opex_per_gpu_h") if f.present("opex_per_gpu_h") else Decimal(0)
        return TenureChange(fleet, "own", capex_per_gpu=capex, lifetime_years=life, opex_per_gpu_h=opex)
    raise f.fail("mode", "'rent' or 'own'")


def _routing(f: _Fields) -> RoutingChange:
    f.only({"llm_model", "workload_class", "from_fleet", "to_fleet", "share"})
    source, target = f.integer("from_fleet", minimum=1), f.integer("to_fleet", minimum=1)
    if source == target:
        raise f.fail("to_fleet", "must differ from from_fleet")
    share = f.decimal("share", maximum=Decimal(1))
    workload_class = f.text("workload_class", max_length=100) if f.present("workload_class") else None
    if workload_class is not None and not f.present("llm_model"):
        return RoutingChange("", source, target, share, workload_class)
    return RoutingChange(f.text("llm_model"), source, target, share, workload_class)


_PARSERS: dict[str, Callable[[_Fields], Change]] = {
    Kind.NODES: _nodes,
    Kind.LIFETIME: _lifetime,
    Kind.MOVE: _move,
    Kind.TENURE: _tenure,
    Kind.ROUTING: _routing,
}


def changes_parse(raw: Any) -> tuple[Change, ...]:
    """The changes of a JSON list; ``ChangeInvalid`` naming the first bad field."""
    if not isinstance(raw, list) or not raw:
        raise ChangeInvalid("changes: a non-empty list of changes is required")
    if len(raw) > MAX_CHANGES:
        raise ChangeInvalid(f"changes: at most {MAX_CHANGES}")
    parsed = [_change(item, f"changes[{index}]") for index, item in enumerate(raw)]
    _one_per_kind_and_fleet(parsed)
    return tuple(parsed)


def _change(item: Any, where: str) -> Change:
    if not isinstance(item, dict):
        raise ChangeInvalid(f"{where}: an object with a kind is required")
    parser = _PARSERS.get(item.get("kind", ""))
    if parser is None:
        raise ChangeInvalid(f"{where}.kind: one of {', '.join(k.value for k in Kind)}")
    return parser(_Fields(item, where))


def _one_per_kind_and_fleet(changes: list[Change]) -> None:
    """Two changes of one kind on one fleet (or one routing of one model between two fleets) are ambiguous."""
    seen: set[tuple[Any, ...]] = set()
    for index, change in enumerate(changes):
        key: tuple[Any, ...] = (type(change), *change_fleets(change))
        if isinstance(change, NodesChange):
            key += (change.gpu_model,)
        if isinstance(change, RoutingChange):
            key += (change.llm_model, change.workload_class)
        if key in seen:
            raise ChangeInvalid(f"changes[{index}]: a second change of the same kind on the same fleet")
        seen.add(key)


def change_json(change: Change) -> dict[str, Any]:
    """The change as stored (numbers as text, so that Decimals keep their digits)."""
    kind = {
        NodesChange: Kind.NODES,
        LifetimeChange: Kind.LIFETIME,
        MoveChange: Kind.MOVE,
        TenureChange: Kind.TENURE,
        RoutingChange: Kind.ROUTING,
    }[type(change)]
    values = {name: getattr(change, name) for name in change.__dataclass_fields__}
    if isinstance(change, TenureChange):
        keep = {
            "rent": ("rate_per_gpu_h", "includes_power"),
            "own": ("capex_per_gpu", "lifetime_years", "opex_per_gpu_h"),
        }
        values = {k: v for k, v in values.items() if k in ("fleet", "mode", *keep[change.mode])}
    shown = {k: str(v) if isinstance(v, Decimal) else v for k, v in values.items() if v is not None}
    return {"kind": kind.value, **shown}
