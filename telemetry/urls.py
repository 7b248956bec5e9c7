from django.urls import path

from telemetry.api import IngestView
from telemetry.status_api import NodeStatusDetailView, NodeStatusListView

urlpatterns = [
    path("ingest/", IngestView.as_view(), name="ingest"),
    path("nodes/", NodeStatusListView.as_view(), name="node-status-list"),
    path("nodes/<int:node_id>/", NodeStatusDetailView.as_view(), name="node-status-detail"),
]
