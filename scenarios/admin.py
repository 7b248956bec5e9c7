"""Scenarios in the admin: read-only, scoped by organization (they are made and run on /scenarios/ or the API)."""

from __future__ import annotations

from django.contrib import admin

from fleets.admin import ReadOnlyScopedAdmin, organization_path_register
from scenarios.models import Scenario

organization_path_register(Scenario, "organization")


@admin.register(Scenario)
class ScenarioAdmin(ReadOnlyScopedAdmin):
    list_display = ["name", "organization", "period_start", "period_end", "status", "progress_pct", "created_at"]
    list_filter = ["status"]
