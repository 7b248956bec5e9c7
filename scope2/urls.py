from django.urls import path

from scope2.api import InstrumentDetailView, InstrumentEvidenceView, InstrumentsView
from scope2.boundary_api import (
    InventoryBoundaryView,
    NodeScopesView,
    NodeScopeView,
    Scope1EmissionsView,
    Scope1EmissionView,
)
from scope2.reports_api import Scope2EsrsView, Scope2GhgTableView, Scope2ReportView, SustainabilityReportView
from scope2.uploads_api import InstrumentsUploadView, ResidualMixesUploadView, ResidualMixesView

urlpatterns = [
    path("instruments/", InstrumentsView.as_view(), name="instruments"),
    path("instruments/<int:instrument_id>/", InstrumentDetailView.as_view(), name="instrument"),
    path("instruments/<int:instrument_id>/evidence/", InstrumentEvidenceView.as_view(), name="instrument-evidence"),
    path("instruments/upload/", InstrumentsUploadView.as_view(), name="instruments-upload"),
    path("inventory-boundary/", InventoryBoundaryView.as_view(), name="inventory-boundary"),
    path("node-scopes/", NodeScopesView.as_view(), name="node-scopes"),
    path("node-scopes/<int:node_id>/", NodeScopeView.as_view(), name="node-scope"),
    path("scope1-emissions/", Scope1EmissionsView.as_view(), name="scope1-emissions"),
    path("scope1-emissions/<int:entry_id>/", Scope1EmissionView.as_view(), name="scope1-emission"),
    path("residual-mixes/", ResidualMixesView.as_view(), name="residual-mixes"),
    path("residual-mixes/upload/", ResidualMixesUploadView.as_view(), name="residual-mixes-upload"),
    path("reports/scope2/", Scope2ReportView.as_view(), name="reports-scope2"),
    path("reports/scope2/ghg-table/", Scope2GhgTableView.as_view(), name="reports-scope2-ghg-table"),
    path("reports/scope2/esrs/", Scope2EsrsView.as_view(), name="reports-scope2-esrs"),
    # The sustainability report leads with this app's market-based figure (scope2.headline).
    path("reports/sustainability/", SustainabilityReportView.as_view(), name="reports-sustainability"),
]
