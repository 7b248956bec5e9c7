from django.urls import path

from reports.api import FleetComparisonView, UsageReportView
from reports.closing import CorrectionsView
from reports.focus.api import FocusExportView
from reports.journal_api import JournalExportView
from reports.node_status_api import NodeStatusDetailView, NodeStatusListView

urlpatterns = [
    path("reports/usage/", UsageReportView.as_view(), name="reports-usage"),
    path("reports/focus/", FocusExportView.as_view(), name="reports-focus"),
    path("reports/journal/", JournalExportView.as_view(), name="reports-journal"),
    path("reports/comparison/", FleetComparisonView.as_view(), name="reports-comparison"),
    path("nodes/", NodeStatusListView.as_view(), name="node-status-list"),
    path("nodes/<int:node_id>/", NodeStatusDetailView.as_view(), name="node-status-detail"),
    path("reports/corrections/", CorrectionsView.as_view(), name="reports-corrections"),
    # reports/sustainability/ is routed by scope2.urls: it leads with the Scope 2 report's market figure.
]
