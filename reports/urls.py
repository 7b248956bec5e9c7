from django.urls import path

from reports.api import FleetComparisonView, SustainabilityReportView, UsageReportView

urlpatterns = [
    path("reports/usage/", UsageReportView.as_view(), name="reports-usage"),
    path("reports/comparison/", FleetComparisonView.as_view(), name="reports-comparison"),
    path("reports/sustainability/", SustainabilityReportView.as_view(), name="reports-sustainability"),
]
