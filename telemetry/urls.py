from django.urls import path

from telemetry.api import IngestView

urlpatterns = [
    path("ingest/", IngestView.as_view(), name="ingest"),
    # nodes/ (collector health with each GPU's hardware profile) is routed by reports.urls: it reads accounting's.
]
