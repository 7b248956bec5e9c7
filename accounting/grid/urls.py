from django.urls import path

from accounting.grid.api import IntensityCsvUploadView

urlpatterns = [
    path("grid/intensity.csv", IntensityCsvUploadView.as_view(), name="grid-intensity-csv"),
]
