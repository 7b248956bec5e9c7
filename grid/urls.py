from django.urls import path

from grid.api import IntensityCsvUploadView

urlpatterns = [
    path("grid/intensity.csv", IntensityCsvUploadView.as_view(), name="grid-intensity-csv"),
]
