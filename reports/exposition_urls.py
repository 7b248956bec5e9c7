from django.urls import path

from reports.exposition_api import MetricsView

# At the root, where Prometheus looks by default (metrics_path: /metrics).
urlpatterns = [
    path("metrics", MetricsView.as_view(), name="metrics"),
]
