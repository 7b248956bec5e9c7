"""Admin for workload classes, advice settings (webhook, e-mail) and the notifications sent, scoped by organization."""

from __future__ import annotations

from django.contrib import admin
from django.db import models

from advice.models import AdviceNotification, AdviceRefresh, AdviceSettings, WorkloadClass
from fleets.admin import OrganizationScopedAdmin, ReadOnlyScopedAdmin, organization_path_register

organization_path_register(WorkloadClass, "organization")
organization_path_register(AdviceSettings, "organization")
organization_path_register(AdviceRefresh, "organization")
organization_path_register(AdviceNotification, "organization")


@admin.register(WorkloadClass)
class WorkloadClassAdmin(OrganizationScopedAdmin):
    list_display = ["name", "organization", "llm_model", "ttft_percentile", "ttft_target_ms", "deadline_h"]


@admin.register(AdviceSettings)
class AdviceSettingsAdmin(OrganizationScopedAdmin):
    list_display = ["organization", "min_hours_of_data", "curve_days", "webhook_url"]
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}


@admin.register(AdviceNotification)
class AdviceNotificationAdmin(ReadOnlyScopedAdmin):
    list_display = ["created_at", "organization", "channel", "target", "sent_at", "attempts", "error"]
