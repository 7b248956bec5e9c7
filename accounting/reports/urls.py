from django.urls import path

from accounting.reports.api import FleetComparisonView, SustainabilityReportView, UsageReportView
from accounting.reports.tokens_api import PersonalTokenRevokeView, PersonalTokensView

urlpatterns = [
    path("reports/usage/", UsageReportView.as_view(), name="reports-usage"),
    path("reports/comparison/", FleetComparisonView.as_view(), name="reports-comparison"),
    path("reports/sustainability/", SustainabilityReportView.as_view(), name="reports-sustainability"),
    path("tokens/", PersonalTokensView.as_view(), name="personal-tokens"),
    path("tokens/<int:token_id>/", PersonalTokenRevokeView.as_view(), name="personal-token-revoke"),
]
