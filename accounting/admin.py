"""Admin for prices, hardware profiles and assets, scoped to the organizations a user administers.

Saving or deleting a price marks the node-hours it covers for recomputation,
so the stored ledger follows (history before ``valid_from`` is untouched).
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import Model
from django.http import HttpRequest
from django.utils import timezone

import accounting.inputs.admin  # registers the audit trail and locked periods
import accounting.instruments.admin  # noqa: F401  (registers the instrument register's admin)
from accounting.ledger_store import ledger_mark, ledger_mark_existing
from accounting.models import (
    GpuAsset,
    HardwareProfile,
    LedgerSettings,
    NodeHourLedger,
    NodePrice,
    SiteMarketFactor,
    SiteTariff,
)
from fleets.admin import OrganizationScopedAdmin, organization_path_register
from fleets.models import Node

for _model, _path in (
    (HardwareProfile, "organization"),
    (GpuAsset, "gpu__node__fleet__organization"),
    (NodePrice, "fleet__organization"),
    (SiteTariff, "site__organization"),
    (SiteMarketFactor, "site__organization"),
    (NodeHourLedger, "organization"),
    (LedgerSettings, "organization"),
):
    organization_path_register(_model, _path)


def nodes_priced_by(obj: Model) -> list[int]:
    """The nodes whose ledger a price row affects."""
    if isinstance(obj, NodePrice):
        nodes = Node.objects.filter(pk=obj.node_id) if obj.node_id else Node.objects.filter(fleet_id=obj.fleet_id)
    else:
        nodes = Node.objects.filter(site_id=obj.site_id)  # type: ignore[attr-defined]
    return list(nodes.values_list("id", flat=True))


class PricedAdmin(OrganizationScopedAdmin):
    """Marks the ledger of the affected nodes from ``valid_from`` to now on every change."""

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        previous = type(obj).objects.filter(pk=obj.pk).values_list("valid_from", flat=True).first() if change else None
        super().save_model(request, obj, form, change)
        self._mark(obj, start=min(filter(None, [previous, obj.valid_from])))

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        super().delete_model(request, obj)
        self._mark(obj, start=obj.valid_from)

    def _mark(self, obj: Any, *, start: Any) -> None:
        now = timezone.now()
        if start < now:
            ledger_mark(node_ids=nodes_priced_by(obj), start=start, end=now, now=now)


@admin.register(NodePrice)
class NodePriceAdmin(PricedAdmin):
    list_display = ["__str__", "kind", "rate_per_h", "rate_per", "includes_power", "capex", "valid_from", "valid_to"]
    list_filter = ["kind"]


@admin.register(SiteTariff)
class SiteTariffAdmin(PricedAdmin):
    list_display = ["site", "flat_price_per_kwh", "valid_from", "valid_to"]


@admin.register(SiteMarketFactor)
class SiteMarketFactorAdmin(PricedAdmin):
    list_display = ["site", "gco2e_per_kwh", "source", "valid_from", "valid_to"]


class OrganizationWideAdmin(OrganizationScopedAdmin):
    """For rows that feed every line of their organization: a change recomputes them all."""

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        nodes = Node.objects.filter(fleet__organization_id=obj.organization_id).values_list("id", flat=True)
        ledger_mark_existing(node_ids=nodes, now=timezone.now())


@admin.register(LedgerSettings)
class LedgerSettingsAdmin(OrganizationWideAdmin):
    list_display = ["organization", "amortization", "idle_util_threshold_pct", "goodput_ttft_target_ms"]
    # Read by the reports only (goodput), never by the ledger: changing them recomputes no line.
    report_only_fields = frozenset({"goodput_ttft_target_ms"})

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        if change and set(form.changed_data) <= self.report_only_fields:
            super(OrganizationWideAdmin, self).save_model(request, obj, form, change)
            return
        super().save_model(request, obj, form, change)


@admin.register(HardwareProfile)
class HardwareProfileAdmin(OrganizationWideAdmin):
    list_display = ["key", "display_name", "organization", "tdp_w", "embodied_central_kgco2e", "lifetime_years"]


@admin.register(GpuAsset)
class GpuAssetAdmin(OrganizationScopedAdmin):
    list_display = ["gpu", "acquired_on", "condition", "prior_use_years", "profile_key"]

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        ledger_mark_existing(node_ids=[obj.gpu.node_id], now=timezone.now())


@admin.register(NodeHourLedger)
class NodeHourLedgerAdmin(OrganizationScopedAdmin):
    """Read-only: lines are computed, never edited."""

    list_display = ["node", "hour_start", "cost", "facility_kwh", "location_co2e_g", "location_source"]
    list_filter = ["gpu_model", "electricity_status"]
    date_hierarchy = "hour_start"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
