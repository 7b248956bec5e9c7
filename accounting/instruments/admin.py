"""Admin for the instrument register (read-only: writes go through the API, where over-allocation is
checked) and for residual-mix factors, scoped to the organizations a user administers."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from accounting.instruments.models import ContractualInstrument, ResidualMixFactor
from fleets.admin import OrganizationScopedAdmin, organization_path_register

organization_path_register(ContractualInstrument, "organization")
organization_path_register(ResidualMixFactor, "organization")


@admin.register(ContractualInstrument)
class ContractualInstrumentAdmin(OrganizationScopedAdmin):
    list_display = ["name", "kind", "site", "volume_mwh", "share_of_consumption", "vintage_year", "generation_zone"]
    list_filter = ["kind", "technology"]
    search_fields = ["name", "certificate_ref"]
    exclude = ["evidence_file"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(ResidualMixFactor)
class ResidualMixFactorAdmin(OrganizationScopedAdmin):
    list_display = ["zone", "year", "gco2e_per_kwh", "source", "organization"]
    list_filter = ["year"]
