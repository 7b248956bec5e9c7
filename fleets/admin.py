"""Admin for the inventory, scoped: staff see and pick only rows of organizations they administer."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from django.contrib import admin
from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Model, QuerySet, URLField
from django.http import HttpRequest
from django.utils import timezone

from fleets.models import (
    Fleet,
    Gpu,
    GpuInstallation,
    Membership,
    Node,
    NodeCredential,
    Organization,
    PersonalToken,
    Site,
)
from fleets.selectors import admin_organizations_for_user

# Path from each model (and each model a form may point at) to its organization.
ORGANIZATION_PATHS: dict[type[Model], str] = {
    Organization: "id",
    Membership: "organization",
    Site: "organization",
    Fleet: "organization",
    Node: "fleet__organization",
    Gpu: "node__fleet__organization",
    GpuInstallation: "gpu__node__fleet__organization",
    NodeCredential: "node__fleet__organization",
}


def organization_path_register(model: type[Model], path: str) -> None:
    """Let another app's models be scoped like the inventory's (``path`` leads to their organization)."""
    ORGANIZATION_PATHS[model] = path


AdminT = TypeVar("AdminT", bound="admin.ModelAdmin[Any]")


def scoped_register(model: type[Model], path: str = "organization") -> Callable[[type[AdminT]], type[AdminT]]:
    """``admin.register(model)``, its rows scoped like the inventory's (``path`` leads to their organization)."""
    organization_path_register(model, path)
    return admin.register(model)


def scope_to_admin(queryset: QuerySet[Any], request: HttpRequest) -> QuerySet[Any]:
    if queryset.model is get_user_model():
        return users_for_admin(queryset, request)
    path = ORGANIZATION_PATHS.get(queryset.model)
    if path is None:
        return queryset
    return queryset.filter(**{f"{path}__in": admin_organizations_for_user(user=request.user)})


def users_for_admin(queryset: QuerySet[Any], request: HttpRequest) -> QuerySet[Any]:
    """Users an organization admin may pick: members of the organizations they administer, no superuser.

    A superuser picks among everyone. Anyone else never sees another
    organization's people, nor a superuser (not even one who is a member too).
    """
    if request.user.is_superuser:
        return queryset
    members = Membership.objects.filter(organization__in=admin_organizations_for_user(user=request.user))
    return queryset.filter(pk__in=members.values("user_id"), is_superuser=False)


def is_organization_admin(request: HttpRequest) -> bool:
    return admin_organizations_for_user(user=request.user).exists()


class OrganizationScopedAdmin(admin.ModelAdmin):
    """Organization admins manage their own organizations' rows; nobody else's.

    Permission comes from the membership role, not from Django's per-model
    permissions, and every object is checked against the scoped queryset.
    """

    # A URL typed without a scheme is read as https (Django 6's default, chosen now).
    formfield_overrides = {URLField: {"assume_scheme": "https"}}

    def _in_scope(self, request: HttpRequest, obj: Any) -> bool:
        return obj is None or self.get_queryset(request).filter(pk=obj.pk).exists()

    def has_module_permission(self, request: HttpRequest) -> bool:
        return is_organization_admin(request)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return is_organization_admin(request) and self._in_scope(request, obj)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return is_organization_admin(request) and self._in_scope(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return is_organization_admin(request) and self._in_scope(request, obj)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return is_organization_admin(request)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        return scope_to_admin(super().get_queryset(request), request)

    def formfield_for_foreignkey(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        return _scoped_field(super().formfield_for_foreignkey(db_field, request, **kwargs), request)

    def formfield_for_manytomany(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        return _scoped_field(super().formfield_for_manytomany(db_field, request, **kwargs), request)


def _scoped_field(field: Any, request: HttpRequest) -> Any:
    """A relation's form field offering only rows in the admin's scope (users included)."""
    queryset = getattr(field, "queryset", None)
    if field is not None and queryset is not None:
        field.queryset = scope_to_admin(queryset, request)
    return field


# Organizations, memberships and fleets are registered by governance (``governance.admin``), whose
# subclasses audit every save and delete.
class OrganizationAdmin(OrganizationScopedAdmin):
    list_display = ["name", "slug", "created_at"]
    prepopulated_fields = {"slug": ["name"]}
    search_fields = ["name"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return bool(request.user.is_superuser)


class MembershipAdmin(OrganizationScopedAdmin):
    list_display = ["user", "organization", "role"]
    list_filter = ["role"]


class FixedOrganizationAdmin(OrganizationScopedAdmin):
    """A row whose organization is set when it is added and fixed after: its nodes' ledger lines and audit
    trail are that organization's."""

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        fixed = ["organization"] if obj is not None else []
        return [*super().get_readonly_fields(request, obj), *fixed]


# Registered by the ledger app (``accounting.admin``): the site's PUE, grid zone, time zone and currency are
# inputs of its nodes' ledger lines.
class SiteAdmin(FixedOrganizationAdmin):
    list_display = ["name", "organization", "grid_zone", "country", "pue", "currency", "time_zone"]
    search_fields = ["name", "grid_zone"]


class FleetAdmin(FixedOrganizationAdmin):
    list_display = ["name", "organization"]


# Registered by the ledger app (``accounting.inputs.admin``), whose subclass audits every save and delete.
class NodeAdmin(OrganizationScopedAdmin):
    list_display = ["hostname", "fleet", "site", "tenure", "commissioned_at", "decommissioned_at"]
    list_filter = ["tenure"]
    search_fields = ["hostname"]


class GpuInstallationInline(admin.TabularInline):
    """Hardware changes: when the card was installed and ended, as its samples showed (read-only)."""

    model = GpuInstallation
    fields = ("installed_at", "ended_at", "ended_reason")
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Gpu)
class GpuAdmin(OrganizationScopedAdmin):
    """GPUs as their collectors report them (keyed by NVML UUID): shown, never added or edited by hand, since
    a GPU's node and model are what the ledger charges by."""

    list_display = ["uuid", "node", "index", "name", "first_seen_at"]
    search_fields = ["uuid", "name"]
    readonly_fields = ["node", "uuid", "index", "name", "energy_counter_supported", "first_seen_at"]
    inlines = [GpuInstallationInline]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


@admin.register(GpuInstallation)
class GpuInstallationAdmin(OrganizationScopedAdmin):
    """Every GPU installed in or ended from a node: the hardware changes the ledger charges by."""

    list_display = ["gpu", "uuid", "installed_at", "ended_at", "ended_reason"]
    list_filter = ["ended_reason"]
    readonly_fields = ["gpu", "installed_at", "ended_at", "ended_reason"]

    @admin.display(description="NVML UUID")
    def uuid(self, obj: GpuInstallation) -> str:
        return obj.gpu.uuid

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


# Registered by the ledger app, as ``NodeAdmin``.
class NodeCredentialAdmin(OrganizationScopedAdmin):
    """Tokens are issued by ``enroll_node`` (shown once); here they can only be seen and revoked."""

    list_display = ["prefix", "node", "created_at", "last_used_at", "revoked_at"]
    readonly_fields = ["node", "prefix", "created_at", "last_used_at"]
    fields = ["node", "prefix", "created_at", "last_used_at", "revoked_at"]

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(PersonalToken)
class PersonalTokenAdmin(admin.ModelAdmin):
    """Personal API tokens: issued at ``POST /api/v1/tokens/`` (shown once); here only seen and revoked.

    Tokens belong to people, not organizations: staff see their own tokens, superusers everyone's.
    """

    list_display = ["prefix", "name", "user", "scope", "created_at", "last_used_at", "expires_at", "revoked_at"]
    list_filter = [("revoked_at", admin.EmptyFieldListFilter), "scope"]
    # The scope is chosen at issue: widening a token afterwards would hand a scraper the reports.
    readonly_fields = ["user", "name", "prefix", "scope", "created_at", "last_used_at", "expires_at"]
    fields = ["user", "name", "prefix", "scope", "created_at", "last_used_at", "expires_at", "revoked_at"]
    actions = ["revoke"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        tokens = super().get_queryset(request)
        return tokens if request.user.is_superuser else tokens.filter(user_id=request.user.pk)

    def _own_or_superuser(self, request: HttpRequest, obj: Any) -> bool:
        if not request.user.is_active or not request.user.is_staff:
            return False
        return obj is None or request.user.is_superuser or obj.user_id == request.user.pk

    def has_module_permission(self, request: HttpRequest) -> bool:
        return self._own_or_superuser(request, None)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self._own_or_superuser(request, obj)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self._own_or_superuser(request, obj)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # revoke instead: the row stays as a record of the token

    @admin.action(description="Revoke selected tokens")
    def revoke(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        revoked = queryset.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())
        self.message_user(request, f"{revoked} token(s) revoked")


class ReadOnlyScopedAdmin(OrganizationScopedAdmin):
    """Rows the admin shows but never adds or changes (they are written by the product: samples, audit, runs)."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class OneByOneDeletes:
    """An admin whose bulk delete goes through its ``delete_model`` one row at a time, in one transaction:
    each row audited (and, for inputs, lock-checked) as a single delete would be; all or none."""

    def delete_queryset(self, request: HttpRequest, queryset: Any) -> None:
        with transaction.atomic():
            for obj in queryset:
                self.delete_model(request, obj)  # type: ignore[attr-defined]
