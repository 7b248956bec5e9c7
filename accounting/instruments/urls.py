from django.urls import path

from accounting.instruments.api import InstrumentDetailView, InstrumentEvidenceView, InstrumentsView
from accounting.instruments.reports_api import Scope2EsrsView, Scope2GhgTableView, Scope2ReportView

urlpatterns = [
    path("instruments/", InstrumentsView.as_view(), name="instruments"),
    path("instruments/<int:instrument_id>/", InstrumentDetailView.as_view(), name="instrument"),
    path("instruments/<int:instrument_id>/evidence/", InstrumentEvidenceView.as_view(), name="instrument-evidence"),
    path("reports/scope2/", Scope2ReportView.as_view(), name="reports-scope2"),
    path("reports/scope2/ghg-table/", Scope2GhgTableView.as_view(), name="reports-scope2-ghg-table"),
    path("reports/scope2/esrs/", Scope2EsrsView.as_view(), name="reports-scope2-esrs"),
]
