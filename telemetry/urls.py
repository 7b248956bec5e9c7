from django.urls import path

from telemetry.api import IngestView

urlpatterns = [
    path("ingest/", IngestView.as_view(), name="ingest"),
]
