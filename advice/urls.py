from django.urls import path

from advice import api

urlpatterns = [
    path("workload-classes/", api.WorkloadClassesView.as_view(), name="workload-classes"),
    path("workload-classes/<int:class_id>/", api.WorkloadClassDetailView.as_view(), name="workload-class"),
    path("advice-settings/", api.AdviceSettingsView.as_view(), name="advice-settings"),
    path("reports/load-curves/", api.LoadCurvesReportView.as_view(), name="reports-load-curves"),
]
