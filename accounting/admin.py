"""Admin for prices, hardware profiles and assets, scoped to the organizations a user administers.

Prices, tariffs, PUE (dated and the site's own), market factors and GPU assets
save and delete through the inputs' services (``AuditedInputAdmin``): audited,
refused in a locked period, re-opening exactly the ledger hours they affect. A
site's grid zone, time zone and currency too (``site_fields_save``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.utils import timezone

from accounting.inputs.admin import AuditedInputAdmin, admin_refusing
from accounting.inputs.services import (
    InputChange,
    gpu_asset_delete,
    gpu_asset_row_save,
    organization_row_delete,
    organization_row_save,
    organization_setting_save,
    site_pue_update,
    validity_row_delete,
    validity_row_save,
)
from accounting.inputs.sites import SITE_FIELDS, site_fields_save
from accounting.models import (
    GpuAsset,
    HardwareProfile,
    InputUpload,
    JournalAccount,
    LedgerSettings,
    NodeHourLedger,
    NodePrice,
    SiteMarketFactor,
    SitePue,
    SiteTariff,
    SiteTax,
)
from accounting.node_days import node_days_recompute
from accounting.site_hours import site_hours_recompute
from common.currencies import currency_problem
from fleets.admin import (
    OneByOneDeletes,
    OrganizationScopedAdmin,
    ReadOnlyScopedAdmin,
    SiteAdmin,
    organization_path_register,
)
from fleets.models import Site
from governance.admin_audit import admin_row_delete_audited

for _model, _path in (
    (HardwareProfile, "organization"),
    (GpuAsset, "gpu__node__fleet__organization"),
    (NodePrice, "fleet__organization"),
    (SiteTariff, "site__organization"),
    (SiteMarketFactor, "site__organization"),
    (SitePue, "site__organization"),
    (SiteTax, "site__organization"),
    (NodeHourLedger, "organization"),
    (LedgerSettings, "organization"),
    (InputUpload, "organization"),
    (JournalAccount, "organization"),
):
    organization_path_register(_model, _path)


@admin.register(InputUpload)
class InputUploadAdmin(ReadOnlyScopedAdmin):
    """CSV uploads as their worker left them (made on the API or the prices page): why one failed."""

    list_display = ["id", "organization", "kind", "file_name", "state", "rows_done", "rows_total", "created_at"]
    list_filter = ["kind", "state"]
    exclude = ["content"]


class ValidityInputAdmin(AuditedInputAdmin):
    """Prices, tariffs, PUE periods, market factors: saved as through the API (audited, lock-checked; the
    hours of the old and new periods re-opened)."""

    def input_save(self, obj: Any, *, user: Any, now: datetime) -> InputChange:
        return validity_row_save(row=obj, user=user, now=now)

    def input_delete(self, obj: Any, *, user: Any, now: datetime) -> InputChange:
        return validity_row_delete(row=obj, user=user, now=now)


@admin.register(NodePrice)
class NodePriceAdmin(ValidityInputAdmin):
    list_display = ["__str__", "kind", "rate_per_h", "rate_per", "includes_power", "capex", "valid_from", "valid_to"]
    list_filter = ["kind"]


@admin.register(SiteTariff)
class SiteTariffAdmin(ValidityInputAdmin):
    list_display = ["site", "flat_price_per_kwh", "valid_from", "valid_to"]


@admin.register(SiteMarketFactor)
class SiteMarketFactorAdmin(ValidityInputAdmin):
    list_display = ["site", "gco2e_per_kwh", "source", "valid_from", "valid_to"]


@admin.register(SitePue)
class SitePueAdmin(ValidityInputAdmin):
    list_display = ["site", "pue", "valid_from", "valid_to"]


@admin.register(SiteTax)
class SiteTaxAdmin(ValidityInputAdmin):
    list_display = ["site", "vat_rate", "vat_recoverable", "energy_tax_per_kwh", "valid_from", "valid_to"]


class OrganizationWideAdmin(AuditedInputAdmin):
    """Rows that feed every line of their organization: audited, refused while a locked period holds lines of
    the organization, and every stored line re-opened."""

    subject = ""

    def input_save(self, obj: Any, *, user: Any, now: datetime) -> InputChange:
        return organization_row_save(row=obj, subject=self.subject, user=user, now=now)

    def input_delete(self, obj: Any, *, user: Any, now: datetime) -> InputChange:
        return organization_row_delete(row=obj, subject=self.subject, user=user, now=now)


class LedgerSettingsForm(forms.ModelForm):
    """A form posted without the goodput target (a script written before it existed) keeps the stored one,
    or the default: the target is optional here, never cleared."""

    class Meta:
        model = LedgerSettings
        fields = ["organization", "amortization", "idle_util_threshold_pct", "goodput_ttft_target_ms"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["goodput_ttft_target_ms"].required = False

    def clean_goodput_ttft_target_ms(self) -> int:
        value = self.cleaned_data.get("goodput_ttft_target_ms")
        return int(self.instance.goodput_ttft_target_ms if value is None else value)


@admin.register(LedgerSettings)
class LedgerSettingsAdmin(OrganizationWideAdmin):
    form = LedgerSettingsForm
    subject = "ledger_settings"
    list_display = ["organization", "amortization", "idle_util_threshold_pct", "goodput_ttft_target_ms"]
    # Read by the reports only (goodput), never by the ledger: a change of them alone re-opens no line.
    report_only_fields = frozenset({"goodput_ttft_target_ms"})

    def input_save(self, obj: Any, *, user: Any, now: datetime) -> InputChange:
        stored = LedgerSettings.objects.filter(pk=obj.pk).first() if obj.pk else None
        if stored is not None and _changed_fields(stored, obj) <= self.report_only_fields:
            return organization_setting_save(row=obj, subject=self.subject, user=user, now=now)
        return super().input_save(obj, user=user, now=now)


def _changed_fields(stored: Any, edited: Any) -> set[str]:
    return {f.name for f in edited._meta.concrete_fields if getattr(stored, f.attname) != getattr(edited, f.attname)}


@admin.register(HardwareProfile)
class HardwareProfileAdmin(OrganizationWideAdmin):
    subject = "hardware_profile"
    list_display = ["key", "display_name", "organization", "tdp_w", "embodied_central_kgco2e", "lifetime_years"]


@admin.register(GpuAsset)
class GpuAssetAdmin(AuditedInputAdmin):
    list_display = ["gpu", "acquired_on", "condition", "prior_use_years", "profile_key"]

    def input_save(self, obj: Any, *, user: Any, now: datetime) -> InputChange:
        return gpu_asset_row_save(asset=obj, user=user, now=now)

    def input_delete(self, obj: Any, *, user: Any, now: datetime) -> InputChange:
        return gpu_asset_delete(asset=obj, user=user, now=now)


class SiteForm(forms.ModelForm):
    """The site's currency checked against the one ISO 4217 list (``common.currencies``), as every input's is."""

    class Meta:
        model = Site
        fields = list(SITE_FIELDS)

    def clean_currency(self) -> str:
        currency = str(self.cleaned_data.get("currency") or "")
        if problem := currency_problem(currency):
            raise forms.ValidationError(problem)
        return currency


@admin.register(Site)
class AuditedSiteAdmin(OneByOneDeletes, SiteAdmin):
    """Every change audited with the admin's name. The site's own PUE goes through ``site_pue_update``
    (``site_pue``); its other fields through ``site_fields_save`` (``site``): a new grid zone, time zone or
    currency is lock-checked and re-opens its nodes' lines, as the PUE does. A refusal is shown, not a 500."""

    form = SiteForm

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        stored = Site.objects.filter(pk=obj.pk).values_list("pue", flat=True).first() if change else None
        pue = obj.pue
        if stored is not None:
            obj.pue = stored  # saved with its fields below; a new PUE after, through its own service
        save = super().save_model
        reopened = site_fields_save(site=obj, save=lambda: save(request, obj, form, change), user=request.user,
                                    now=timezone.now())  # fmt: skip
        if stored is not None and stored != pue:
            reopened += site_pue_update(site=obj, pue=pue, user=request.user, now=timezone.now()).ledger_hours_reopened
        obj.pue = pue
        if reopened:
            messages.info(request, f"{reopened} ledger hours re-opened for recomputation")

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        admin_row_delete_audited(
            row=obj, subject="site", fields=SITE_FIELDS, organization_of=lambda site: site.organization_id,
            user=request.user, now=timezone.now(),
        )  # fmt: skip

    def changeform_view(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        return admin_refusing(request, lambda: super(AuditedSiteAdmin, self).changeform_view(request, *args, **kwargs))


@admin.register(NodeHourLedger)
class NodeHourLedgerAdmin(OrganizationScopedAdmin):
    """Read-only: lines are computed, never edited. A line deleted here (or with its node) leaves its site-hours
    (``accounting.site_hours``) and its node's days (``accounting.node_days``: its lines counted, its serving days'
    GPU model), which are summed again without it."""

    list_display = ["node", "hour_start", "cost", "facility_kwh", "location_co2e_g", "location_source"]
    list_filter = ["gpu_model", "electricity_status"]
    date_hierarchy = "hour_start"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        with transaction.atomic():
            super().delete_model(request, obj)
            site_hours_recompute([(obj.site_id, obj.hour_start)])
            node_days_recompute([(obj.node_id, obj.hour_start)])

    def delete_queryset(self, request: HttpRequest, queryset: Any) -> None:
        with transaction.atomic():
            touched = set(queryset.values_list("site_id", "hour_start"))
            node_hours = set(queryset.values_list("node_id", "hour_start"))
            super().delete_queryset(request, queryset)
            site_hours_recompute(touched)
            node_days_recompute(node_hours)
