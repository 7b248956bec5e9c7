from django.urls import path

from reports.api import FleetComparisonView, UsageReportView

urlpatterns = [
    path("reports/usage/", UsageReportView.as_view(), name="reports-usage"),
    path("reports/comparison/", FleetComparisonView.as_view(), name="reports-comparison"),
    # reports/sustainability/ is routed by scope2.urls: it leads with the Scope 2 report's market figure.
]
