"""Wattledger's URLs plus ``/bench/bare-ingest/``: the reference that ``bench.ingest`` compares the real view with."""

from django.urls import include, path

from bench.bare import bare_ingest

urlpatterns = [
    path("bench/bare-ingest/", bare_ingest),
    path("", include("config.urls")),
]
