"""Admin for the instrument register (read-only: writes go through the API, where over-allocation is
checked) and for residual-mix factors, scoped to the organizations a user administers."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from accounting.inputs.admin import AuditedInputAdmin
from accounting.inputs.services import InputChange
from fleets.admin import ReadOnlyScopedAdmin, scoped_register
from scope2.models import (
    ContractualInstrument,
    InventoryBoundary,
    NodeScope,
    ResidualMixFactor,
    Scope1Emission,
    Scope2Disclosure,
)
from scope2.residual_mixes import residual_mix_delete, residual_mix_save


@scoped_register(ContractualInstrument)
class ContractualInstrumentAdmin(ReadOnlyScopedAdmin):
    list_display = ["name", "kind", "site", "volume_mwh", "share_of_consumption", "vintage_year", "generation_zone"]
    list_filter = ["kind", "technology"]
    search_fields = ["name", "certificate_ref", "certificate_id_from", "certificate_id_to", "registry"]
    exclude = ["evidence_file"]


@scoped_register(ResidualMixFactor)
class ResidualMixFactorAdmin(AuditedInputAdmin):
    """Saved through ``residual_mix_save``: audited, refused when its year overlaps a locked period."""

    list_display = ["zone", "year", "gco2e_per_kwh", "source", "organization"]
    list_filter = ["year"]

    def input_save(self, obj: Any, *, user: Any, now: datetime) -> InputChange:
        return residual_mix_save(row=obj, user=user, now=now)

    def input_delete(self, obj: Any, *, user: Any, now: datetime) -> InputChange:
        return residual_mix_delete(row=obj, user=user, now=now)


# The inventory's inputs are written through the API (scope2.boundary_api), where the rule is checked.
@scoped_register(InventoryBoundary)
class InventoryBoundaryAdmin(ReadOnlyScopedAdmin):
    list_display = ["organization", "consolidation_approach", "equity_share_pct"]


@scoped_register(NodeScope)
class NodeScopeAdmin(ReadOnlyScopedAdmin):
    list_display = ["node", "electricity", "reason"]


@scoped_register(Scope1Emission)
class Scope1EmissionAdmin(ReadOnlyScopedAdmin):
    list_display = ["site", "activity", "start", "end", "co2e_kg"]


@scoped_register(Scope2Disclosure)
class Scope2DisclosureAdmin(ReadOnlyScopedAdmin):
    list_display = ["organization", "market_matching"]
