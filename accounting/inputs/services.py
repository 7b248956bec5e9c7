"""Writes of finance and sustainability inputs: node prices, site tariffs, site PUE, market factors, GPU assets.

Each write is done whole or refused whole: validated (``InputInvalid``, with
the reason), checked against the organization's locked periods
(``PeriodLocked``), saved, the ledger lines it affects re-opened, and an audit
entry kept, in one transaction that first locks the organization's row, so
that two concurrent writes cannot both pass the overlap check.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Model

from accounting.inputs.line_locks import lock_check_lines
from accounting.inputs.reopen import EVERY_HOUR, ledger_lines_reopen
from accounting.models import GpuAsset, NodePrice, SiteMarketFactor, SitePue, SiteTariff, SiteTax
from common.api import InputInvalid
from fleets.models import Node, Organization, Site
from governance.audit import audit_record, snapshot
from governance.intervals import Window, windows_changed, windows_minus
from governance.locks import lock_check

NODE_PRICE_FIELDS = (
    "kind", "rate_per_h", "rate_per", "includes_power", "capex", "lifetime_years", "opex_per_h",
    "in_service_at", "salvage_value", "depreciation_method", "valid_from", "valid_to", "currency",
    "prices_include_vat",
)  # fmt: skip
SITE_TARIFF_FIELDS = (
    "flat_price_per_kwh", "windows", "valid_from", "valid_to", "prices_include_vat", "fixed_per_month",
    "demand_per_kw_month",
)  # fmt: skip
SITE_TAX_FIELDS = ("vat_rate", "vat_recoverable", "energy_tax_per_kwh", "valid_from", "valid_to")
SITE_PUE_FIELDS = ("pue", "valid_from", "valid_to")
SITE_MARKET_FACTOR_FIELDS = ("gco2e_per_kwh", "source", "valid_from", "valid_to")
GPU_ASSET_FIELDS = ("acquired_on", "condition", "prior_use_years", "expected_own_years", "profile_key", "node_price")
_PERIOD = frozenset({"valid_from", "valid_to"})


@dataclass(frozen=True)
class InputChange:
    """A saved input and how many stored ledger hours it re-opened for recomputation."""

    obj: Model
    ledger_hours_reopened: int


def _message(error: ValidationError) -> str:
    if hasattr(error, "error_dict"):
        return "; ".join(
            f"{field}: {' '.join(messages)}" if field != "__all__" else " ".join(messages)
            for field, messages in error.message_dict.items()
        )
    return " ".join(error.messages)


def validated(row: Model) -> None:
    try:
        row.full_clean()
    except ValidationError as error:
        raise InputInvalid(_message(error)) from None


def _organization_lock(organization_id: int) -> None:
    Organization.objects.select_for_update().filter(pk=organization_id).first()


def _values_changed(before: Mapping[str, Any] | None, after: Mapping[str, Any]) -> bool:
    if before is None:
        return True
    return any(before.get(name) != value for name, value in after.items() if name not in _PERIOD)


def _period(row: Any) -> Window:
    return (row.valid_from, row.valid_to)


def _validity_save(
    *,
    row: Any,
    subject: str,
    organization_id: int,
    user: Any,
    now: datetime,
    node_windows: Callable[[Any, list[Window]], dict[int, list[Window]]],
) -> InputChange:
    """Save a row with a validity period; re-open the hours of its old and new periods that changed."""
    _organization_lock(organization_id)
    stored = type(row)._default_manager.filter(pk=row.pk).first() if row.pk else None
    before = snapshot(stored)
    validated(row)
    after = snapshot(row) or {}
    windows = windows_changed(
        before=_period(stored) if stored else None, after=_period(row), values_changed=_values_changed(before, after)
    )
    lock_check(organization_id=organization_id, windows=windows)
    row.save()
    reopened = ledger_lines_reopen(node_windows=node_windows(row, windows), now=now)
    audit_record(
        organization_id=organization_id, user=user, subject=subject, object_id=row.pk,
        before=before, after=snapshot(row), at=now, ledger_hours_reopened=reopened,
    )  # fmt: skip
    return InputChange(row, reopened)


def _price_node_windows(price: NodePrice, windows: list[Window]) -> dict[int, list[Window]]:
    """A node's own price: its hours. A fleet default: each node's hours where no own price of it is in force."""
    if price.node_id:
        return {price.node_id: windows}
    own: dict[int, list[Window]] = {}
    for node_id, start, end in NodePrice.objects.filter(fleet_id=price.fleet_id, node__isnull=False).values_list(
        "node_id", "valid_from", "valid_to"
    ):
        own.setdefault(node_id, []).append((start, end))
    nodes = Node.objects.filter(fleet_id=price.fleet_id).values_list("id", flat=True)
    return {node_id: windows_minus(windows, own.get(node_id, [])) for node_id in nodes}


def _site_node_windows(row: Any, windows: list[Window]) -> dict[int, list[Window]]:
    """A site's row (tariff, PUE, market factor): the hours of every node of the site."""
    return {node_id: windows for node_id in Node.objects.filter(site_id=row.site_id).values_list("id", flat=True)}


def _assign(row: Model, data: Mapping[str, Any], fields: tuple[str, ...]) -> None:
    for name, value in data.items():
        if name in fields:
            setattr(row, name, value)


VALIDITY_SUBJECTS: dict[type[Model], tuple[str, Callable[[Any], int], Callable[[Any, list[Window]], Any]]] = {
    NodePrice: ("node_price", lambda row: row.fleet.organization_id, _price_node_windows),
    SiteTariff: ("site_tariff", lambda row: row.site.organization_id, _site_node_windows),
    SitePue: ("site_pue_period", lambda row: row.site.organization_id, _site_node_windows),
    SiteMarketFactor: ("site_market_factor", lambda row: row.site.organization_id, _site_node_windows),
    SiteTax: ("site_tax", lambda row: row.site.organization_id, _site_node_windows),
}


def _dated_row_save(
    *, row: Any, data: Mapping[str, Any], fields: tuple[str, ...], related: tuple[str, ...], user: Any, now: datetime
) -> InputChange:
    """Create (``row`` unsaved, with its parent) or change a dated row: the fields of ``data``."""
    model = type(row)
    subject, organization_of, node_windows = VALIDITY_SUBJECTS[model]
    with transaction.atomic():
        if row.pk:
            row = model._default_manager.select_related(*related).get(pk=row.pk)
        _assign(row, data, fields)
        return _validity_save(
            row=row, subject=subject, organization_id=organization_of(row), user=user, now=now,
            node_windows=node_windows,
        )  # fmt: skip


def node_price_save(*, price: NodePrice, data: Mapping[str, Any], user: Any, now: datetime) -> InputChange:
    """Create (``price`` unsaved, with its fleet and node) or change a node price: the fields of ``data``."""
    return _dated_row_save(
        row=price, data=data, fields=NODE_PRICE_FIELDS, related=("fleet", "node"), user=user, now=now
    )


def node_price_life_change(
    *, price: NodePrice, effective_at: datetime, lifetime_years: Any, user: Any, now: datetime
) -> InputChange:
    """A change of an owned price's useful life (the new total life), applied prospectively from
    ``effective_at``: only the hours from then on are lock-checked and re-opened; earlier ones keep theirs."""
    with transaction.atomic():
        price = NodePrice.objects.select_related("fleet", "node").get(pk=price.pk)
        organization_id = price.fleet.organization_id
        _organization_lock(organization_id)
        if price.kind != NodePrice.Kind.OWNED:
            raise InputInvalid("kind: only an owned price has a useful life to change")
        before = snapshot(price)
        change = {"from": effective_at.isoformat(), "lifetime_years": str(lifetime_years)}
        price.life_changes = [*price.life_changes, change]
        validated(price)
        start = max(effective_at, price.valid_from)
        windows: list[Window] = [(start, price.valid_to)] if price.valid_to is None or start < price.valid_to else []
        lock_check(organization_id=organization_id, windows=windows)
        price.save()
        reopened = ledger_lines_reopen(node_windows=_price_node_windows(price, windows), now=now)
        audit_record(
            organization_id=organization_id, user=user, subject="node_price", object_id=price.pk,
            before=before, after=snapshot(price), at=now, ledger_hours_reopened=reopened,
        )  # fmt: skip
    return InputChange(price, reopened)


def site_tariff_save(*, tariff: SiteTariff, data: Mapping[str, Any], user: Any, now: datetime) -> InputChange:
    """Create (``tariff`` unsaved, with its site) or change a site tariff: the fields of ``data``."""
    return _dated_row_save(row=tariff, data=data, fields=SITE_TARIFF_FIELDS, related=("site",), user=user, now=now)


def site_pue_period_save(*, row: SitePue, data: Mapping[str, Any], user: Any, now: datetime) -> InputChange:
    """Create (``row`` unsaved, with its site) or change a site's dated PUE: the fields of ``data``."""
    return _dated_row_save(row=row, data=data, fields=SITE_PUE_FIELDS, related=("site",), user=user, now=now)


def site_market_factor_save(*, row: SiteMarketFactor, data: Mapping[str, Any], user: Any, now: datetime) -> InputChange:
    """Create (``row`` unsaved, with its site) or change a site's market factor: the fields of ``data``."""
    return _dated_row_save(row=row, data=data, fields=SITE_MARKET_FACTOR_FIELDS, related=("site",), user=user, now=now)


def site_tax_save(*, row: SiteTax, data: Mapping[str, Any], user: Any, now: datetime) -> InputChange:
    """Create (``row`` unsaved, with its site) or change a site's taxes (VAT, energy tax): the fields of ``data``."""
    return _dated_row_save(row=row, data=data, fields=SITE_TAX_FIELDS, related=("site",), user=user, now=now)


def validity_row_delete(*, row: Any, user: Any, now: datetime) -> InputChange:
    """Delete a price, tariff, PUE or market factor row: refused in a locked period, its hours re-opened."""
    subject, organization_of, node_windows = VALIDITY_SUBJECTS[type(row)]
    with transaction.atomic():
        organization_id = organization_of(row)
        _organization_lock(organization_id)
        before = snapshot(row)
        windows = [_period(row)]
        lock_check(organization_id=organization_id, windows=windows)
        row_id = row.pk
        affected = node_windows(row, windows)  # before the row goes: a fleet default's nodes exclude own prices
        row.delete()
        reopened = ledger_lines_reopen(node_windows=affected, now=now)
        audit_record(
            organization_id=organization_id, user=user, subject=subject, object_id=row_id,
            before=before, after=None, at=now, ledger_hours_reopened=reopened,
        )  # fmt: skip
    return InputChange(row, reopened)


def validity_row_save(*, row: Any, user: Any, now: datetime) -> InputChange:
    """Save a price, tariff, PUE or market-factor row whose fields are already set (the Django admin's form)."""
    subject, organization_of, node_windows = VALIDITY_SUBJECTS[type(row)]
    with transaction.atomic():
        return _validity_save(
            row=row, subject=subject, organization_id=organization_of(row), user=user, now=now,
            node_windows=node_windows,
        )  # fmt: skip


def _all_lines_save(
    *,
    row: Model,
    subject: str,
    organization_id: int,
    node_ids: list[int],
    user: Any,
    now: datetime,
    fields: tuple[str, ...] | None = None,
    windows: list[Window] | None = None,
) -> InputChange:
    """Save an input that has no period of its own: it weighs on the stored lines of ``node_ids`` (in
    ``windows``; default: every hour)."""
    windows = EVERY_HOUR if windows is None else windows
    _organization_lock(organization_id)
    stored = type(row)._default_manager.filter(pk=row.pk).first() if row.pk else None
    before = snapshot(stored, fields=fields)
    validated(row)
    lock_check_lines(organization_id=organization_id, node_ids=node_ids, windows=windows)
    row.save()
    reopened = ledger_lines_reopen(node_windows={n: windows for n in node_ids}, now=now)
    audit_record(
        organization_id=organization_id, user=user, subject=subject, object_id=row.pk,
        before=before, after=snapshot(row, fields=fields), at=now, ledger_hours_reopened=reopened,
    )  # fmt: skip
    return InputChange(row, reopened)


def site_pue_update(*, site: Site, pue: Any, user: Any, now: datetime) -> InputChange:
    """Change a site's own PUE: the figure of every hour no dated PUE row (``SitePue``) covers.

    Those hours' stored lines are recomputed; hours under a dated row keep theirs.
    """
    with transaction.atomic():
        site = Site.objects.get(pk=site.pk)
        site.pue = pue
        nodes = list(Node.objects.filter(site=site).values_list("id", flat=True))
        dated = list(SitePue.objects.filter(site=site).values_list("valid_from", "valid_to"))
        return _all_lines_save(
            row=site,
            subject="site_pue",
            organization_id=site.organization_id,
            node_ids=nodes,
            user=user,
            now=now,
            fields=("pue",),
            windows=windows_minus(EVERY_HOUR, dated),
        )


def gpu_asset_save(*, asset: GpuAsset, data: Mapping[str, Any], user: Any, now: datetime) -> InputChange:
    """Create (``asset`` unsaved, with its GPU) or change a GPU asset; its node's lines are recomputed."""
    with transaction.atomic():
        if asset.pk:
            asset = GpuAsset.objects.select_related("gpu__node__fleet").get(pk=asset.pk)
        _assign(asset, data, GPU_ASSET_FIELDS)
        return _asset_lines_save(asset, asset.gpu.node, user=user, now=now)


def gpu_asset_row_save(*, asset: GpuAsset, user: Any, now: datetime) -> InputChange:
    """Save a GPU asset whose fields are already set (the Django admin's form)."""
    with transaction.atomic():
        return _asset_lines_save(asset, _asset_node(asset), user=user, now=now)


def _asset_node(asset: GpuAsset) -> Node:
    return Node.objects.select_related("fleet").get(pk=asset.gpu.node_id)


def _asset_lines_save(asset: GpuAsset, node: Node, *, user: Any, now: datetime) -> InputChange:
    """Save ``asset``; every line of its node is recomputed (the asset's embodied carbon weighs on each)."""
    return _all_lines_save(
        row=asset, subject="gpu_asset", organization_id=node.fleet.organization_id, node_ids=[node.pk],
        user=user, now=now,
    )  # fmt: skip


def gpu_asset_delete(*, asset: GpuAsset, user: Any, now: datetime) -> InputChange:
    """Delete a GPU asset record: refused while a stored line of its node is locked; its node's lines re-open."""
    with transaction.atomic():
        node = _asset_node(asset)
        organization_id = node.fleet.organization_id
        _organization_lock(organization_id)
        lock_check_lines(organization_id=organization_id, node_ids=[node.pk])
        before, asset_id = snapshot(asset), asset.pk
        asset.delete()
        reopened = ledger_lines_reopen(node_windows={node.pk: EVERY_HOUR}, now=now)
        audit_record(
            organization_id=organization_id, user=user, subject="gpu_asset", object_id=asset_id,
            before=before, after=None, at=now, ledger_hours_reopened=reopened,
        )  # fmt: skip
    return InputChange(asset, reopened)


def organization_row_save(*, row: Any, subject: str, user: Any, now: datetime) -> InputChange:
    """Save a row that weighs on every line of its organization (a hardware profile, the ledger settings)."""
    with transaction.atomic():
        nodes = list(Node.objects.filter(fleet__organization_id=row.organization_id).values_list("id", flat=True))
        return _all_lines_save(
            row=row, subject=subject, organization_id=row.organization_id, node_ids=nodes, user=user, now=now
        )


def organization_setting_save(*, row: Any, subject: str, user: Any, now: datetime) -> InputChange:
    """Save an organization's setting that the reports read and no ledger line weighs on (the goodput target):
    audited; no stored line changes, so none is locked against it or re-opened."""
    with transaction.atomic():
        return _all_lines_save(
            row=row, subject=subject, organization_id=row.organization_id, node_ids=[], user=user, now=now, windows=[]
        )


def organization_row_delete(*, row: Any, subject: str, user: Any, now: datetime) -> InputChange:
    """Delete such a row: refused while a locked period holds lines of the organization; all lines re-open."""
    with transaction.atomic():
        organization_id = row.organization_id
        _organization_lock(organization_id)
        nodes = list(Node.objects.filter(fleet__organization_id=organization_id).values_list("id", flat=True))
        lock_check_lines(organization_id=organization_id, node_ids=nodes)
        before, row_id = snapshot(row), row.pk
        row.delete()
        reopened = ledger_lines_reopen(node_windows={n: EVERY_HOUR for n in nodes}, now=now)
        audit_record(
            organization_id=organization_id, user=user, subject=subject, object_id=row_id,
            before=before, after=None, at=now, ledger_hours_reopened=reopened,
        )  # fmt: skip
    return InputChange(row, reopened)


def node_rent_change(
    *,
    node: Node,
    rate_per_h: Any,
    rate_per: str,
    valid_from: datetime,
    user: Any,
    now: datetime,
    currency: str | None = None,
) -> int:
    """A node's rent from ``valid_from``: the own price in force then ends there, a rented one follows.

    ``currency`` (ISO 4217) of the rent; ``None``: the currency of the node's own price in force then, else
    blank (the site's). Returns the ledger hours re-opened by both writes (one transaction: both or neither).
    """
    with transaction.atomic():
        _organization_lock(node.fleet.organization_id)
        current = (
            NodePrice.objects.filter(node=node, valid_from__lte=valid_from).exclude(valid_to__lte=valid_from).first()
        )
        if currency is None:
            currency = current.currency if current is not None else ""
        rent = {"kind": NodePrice.Kind.RENTED, "rate_per_h": rate_per_h, "rate_per": rate_per, "capex": None,
                "lifetime_years": None, "currency": currency}  # fmt: skip
        if current is not None and current.valid_from == valid_from:
            return node_price_save(price=current, data=rent, user=user, now=now).ledger_hours_reopened
        later = NodePrice.objects.filter(node=node, valid_from__gt=valid_from).order_by("valid_from")
        until = current.valid_to if current is not None else later.values_list("valid_from", flat=True).first()
        if current is not None:
            # Ending it re-opens [valid_from, until): the very hours the new rent re-opens, counted once below.
            node_price_save(price=current, data={"valid_to": valid_from}, user=user, now=now)
        new = NodePrice(fleet=node.fleet, node=node)
        data = rent | {"valid_from": valid_from, "valid_to": until}
        return node_price_save(price=new, data=data, user=user, now=now).ledger_hours_reopened
