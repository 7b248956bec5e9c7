"""Admin for workload classes, advice settings (webhook, e-mail) and the notifications sent, scoped by organization.

Classes and settings save and delete through the same services as the API
(``workload_class_save``, ``advice_settings_save``): each change audited with the
admin's name, its fields before and after (a new webhook URL included).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db.models import Model
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
from fleets.admin import (
    OneByOneDeletes,
    OrganizationScopedAdmin,
    ReadOnlyScopedAdmin,
    organization_path_register,
    scoped_register,
)

organization_path_register(AdviceRefresh, "organization")


def _form_values(obj: Any, fields: tuple[str, ...]) -> dict[str, Any]:
    """The edited row's values (the admin's form set them on ``obj``), its organization included."""
    return {name: getattr(obj, name) for name in fields} | {"organization_id": obj.organization_id}


def _stored(obj: Any) -> Any:
    """The row as stored (before the form's values), or the new unsaved row."""
    return obj if obj.pk is None else type(obj)._default_manager.get(pk=obj.pk)


@dataclass(frozen=True)
class _Services:
    """The services that save and delete one model's rows, called as ``save(<row>=..., data=..., user=..., now=...)``
    and ``delete(<row>=..., user=..., now=...)``."""

    save: Callable[..., Model]
    delete: Callable[..., None]
    row: str  # the services' keyword for the row
    fields: tuple[str, ...]  # the row's fields the form edits


class _ServiceAdmin(OneByOneDeletes, OrganizationScopedAdmin):
    """Saves and deletes through ``services``, as the API does."""

    services: _Services

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        row, data = {self.services.row: _stored(obj)}, _form_values(obj, self.services.fields)
        obj.pk = self.services.save(**row, data=data, user=request.user, now=timezone.now()).pk

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        self.services.delete(**{self.services.row: obj}, user=request.user, now=timezone.now())


@scoped_register(WorkloadClass)
class WorkloadClassAdmin(_ServiceAdmin):
    list_display = ["name", "organization", "llm_model", "ttft_percentile", "ttft_target_ms", "deadline_h"]
    services = _Services(save=workload_class_save, delete=workload_class_delete, row="workload_class", fields=FIELDS)


@scoped_register(AdviceSettings)
class AdviceSettingsAdmin(_ServiceAdmin):
    list_display = ["organization", "min_hours_of_data", "curve_days", "webhook_url"]
    services = _Services(
        save=advice_settings_save, delete=advice_settings_delete, row="options", fields=SETTINGS_FIELDS
    )


@scoped_register(AdviceNotification)
class AdviceNotificationAdmin(ReadOnlyScopedAdmin):
    list_display = ["created_at", "organization", "channel", "target", "sent_at", "attempts", "error"]
