from django.urls import path

from reports.api import FleetComparisonView, UsageReportView
from reports.closing import CorrectionsView

urlpatterns = [
    path("reports/usage/", UsageReportView.as_view(), name="reports-usage"),
    path("reports/comparison/", FleetComparisonView.as_view(), name="reports-comparison"),
    path("reports/corrections/", CorrectionsView.as_view(), name="reports-corrections"),
    # reports/sustainability/ is routed by scope2.urls: it leads with the Scope 2 report's market figure.
]
