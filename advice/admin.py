"""Admin for workload classes, advice settings (webhook, e-mail) and the notifications sent, scoped by organization.

Classes and settings save and delete through the same services as the API
(``workload_class_save``, ``advice_settings_save``): each change audited with the
admin's name, its fields before and after (a new webhook URL included).
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db import models
from django.http import HttpRequest
from django.utils import timezone

from advice.models import AdviceNotification, AdviceRefresh, AdviceSettings, WorkloadClass
from advice.services import (
    FIELDS,
    SETTINGS_FIELDS,
    advice_settings_delete,
    advice_settings_save,
    workload_class_delete,
    workload_class_save,
)
from fleets.admin import OneByOneDeletes, OrganizationScopedAdmin, ReadOnlyScopedAdmin, organization_path_register

organization_path_register(WorkloadClass, "organization")
organization_path_register(AdviceSettings, "organization")
organization_path_register(AdviceRefresh, "organization")
organization_path_register(AdviceNotification, "organization")


def _form_values(obj: Any, fields: tuple[str, ...]) -> dict[str, Any]:
    """The edited row's values (the admin's form set them on ``obj``), its organization included."""
    return {name: getattr(obj, name) for name in fields} | {"organization_id": obj.organization_id}


def _stored(obj: Any) -> Any:
    """The row as stored (before the form's values), or the new unsaved row."""
    return obj if obj.pk is None else type(obj)._default_manager.get(pk=obj.pk)


class _ServiceDeletes(OneByOneDeletes, OrganizationScopedAdmin):
    pass


@admin.register(WorkloadClass)
class WorkloadClassAdmin(_ServiceDeletes):
    list_display = ["name", "organization", "llm_model", "ttft_percentile", "ttft_target_ms", "deadline_h"]

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        saved = workload_class_save(
            workload_class=_stored(obj), data=_form_values(obj, FIELDS), user=request.user, now=timezone.now()
        )
        obj.pk = saved.pk

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        workload_class_delete(workload_class=obj, user=request.user, now=timezone.now())


@admin.register(AdviceSettings)
class AdviceSettingsAdmin(_ServiceDeletes):
    list_display = ["organization", "min_hours_of_data", "curve_days", "webhook_url"]
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        saved = advice_settings_save(
            options=_stored(obj), data=_form_values(obj, SETTINGS_FIELDS), user=request.user, now=timezone.now()
        )
        obj.pk = saved.pk

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        advice_settings_delete(options=obj, user=request.user, now=timezone.now())


@admin.register(AdviceNotification)
class AdviceNotificationAdmin(ReadOnlyScopedAdmin):
    list_display = ["created_at", "organization", "channel", "target", "sent_at", "attempts", "error"]
