# Each route names the module of its view: the register (api), the inventory's inputs (boundary_api), the
# reports (reports_api) and the CSV uploads (uploads_api).
from django.urls import path

from scope2 import api, boundary_api, reports_api, uploads_api

urlpatterns = [
    path("instruments/", api.InstrumentsView.as_view(), name="instruments"),
    path("instruments/<int:instrument_id>/", api.InstrumentDetailView.as_view(), name="instrument"),
    path("instruments/<int:instrument_id>/evidence/", api.InstrumentEvidenceView.as_view(), name="instrument-evidence"),
    path("instruments/upload/", uploads_api.InstrumentsUploadView.as_view(), name="instruments-upload"),
    path("inventory-boundary/", boundary_api.InventoryBoundaryView.as_view(), name="inventory-boundary"),
    path("scope2-disclosure/", boundary_api.Scope2DisclosureView.as_view(), name="scope2-disclosure"),
    path("node-scopes/", boundary_api.NodeScopesView.as_view(), name="node-scopes"),
    path("node-scopes/<int:node_id>/", boundary_api.NodeScopeView.as_view(), name="node-scope"),
    path("scope1-emissions/", boundary_api.Scope1EmissionsView.as_view(), name="scope1-emissions"),
    path("scope1-emissions/<int:entry_id>/", boundary_api.Scope1EmissionView.as_view(), name="scope1-emission"),
    path("residual-mixes/", uploads_api.ResidualMixesView.as_view(), name="residual-mixes"),
    path("residual-mixes/upload/", uploads_api.ResidualMixesUploadView.as_view(), name="residual-mixes-upload"),
    path("reports/scope2/", reports_api.Scope2ReportView.as_view(), name="reports-scope2"),
    path("reports/scope2/ghg-table/", reports_api.Scope2GhgTableView.as_view(), name="reports-scope2-ghg-table"),
    path("reports/scope2/esrs/", reports_api.Scope2EsrsView.as_view(), name="reports-scope2-esrs"),
    # The sustainability report leads with this app's market-based figure (scope2.headline).
    path("reports/sustainability/", reports_api.SustainabilityReportView.as_view(), name="reports-sustainability"),
]
