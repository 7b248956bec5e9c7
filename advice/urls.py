from django.urls import path

from advice.api import (
    AdviceSettingsView,
    LoadCurvesReportView,
    WorkloadClassDetailView,
    WorkloadClassesView,
)

urlpatterns = [
    path("workload-classes/", WorkloadClassesView.as_view(), name="workload-classes"),
    path("workload-classes/<int:class_id>/", WorkloadClassDetailView.as_view(), name="workload-class"),
    path("advice-settings/", AdviceSettingsView.as_view(), name="advice-settings"),
    path("reports/load-curves/", LoadCurvesReportView.as_view(), name="reports-load-curves"),
]
