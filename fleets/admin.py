"""Admin for the inventory, scoped: staff see and pick only rows of organizations they administer."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import Model, QuerySet
from django.http import HttpRequest

from fleets.models import Fleet, Gpu, Membership, Node, NodeCredential, Organization, Site
from fleets.selectors import admin_organizations_for_user

# Path from each model (and each model a form may point at) to its organization.
ORGANIZATION_PATHS: dict[type[Model], str] = {
    Organization: "id",
    Membership: "organization",
    Site: "organization",
    Fleet: "organization",
    Node: "fleet__organization",
    Gpu: "node__fleet__organization",
    NodeCredential: "node__fleet__organization",
}


def scope_to_admin(queryset: QuerySet[Any], request: HttpRequest) -> QuerySet[Any]:
    path = ORGANIZATION_PATHS.get(queryset.model)
    if path is None:
        return queryset
    return queryset.filter(**{f"{path}__in": admin_organizations_for_user(user=request.user)})


class OrganizationScopedAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        return scope_to_admin(super().get_queryset(request), request)

    def formfield_for_foreignkey(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        field = super().formfield_for_foreignkey(db_field, request, **kwargs)
        if field is not None and hasattr(field, "queryset"):
            field.queryset = scope_to_admin(field.queryset, request)
        return field


@admin.register(Organization)
class OrganizationAdmin(OrganizationScopedAdmin):
    list_display = ["name", "slug", "created_at"]
    prepopulated_fields = {"slug": ["name"]}
    search_fields = ["name"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return bool(request.user.is_superuser)


@admin.register(Membership)
class MembershipAdmin(OrganizationScopedAdmin):
    list_display = ["user", "organization", "role"]
    list_filter = ["role"]


@admin.register(Site)
class SiteAdmin(OrganizationScopedAdmin):
    list_display = ["name", "organization", "grid_zone", "country", "pue", "currency", "time_zone"]
    search_fields = ["name", "grid_zone"]


@admin.register(Fleet)
class FleetAdmin(OrganizationScopedAdmin):
    list_display = ["name", "organization"]


@admin.register(Node)
class NodeAdmin(OrganizationScopedAdmin):
    list_display = ["hostname", "fleet", "site", "tenure", "commissioned_at", "decommissioned_at"]
    list_filter = ["tenure"]
    search_fields = ["hostname"]


@admin.register(Gpu)
class GpuAdmin(OrganizationScopedAdmin):
    list_display = ["uuid", "node", "index", "name", "first_seen_at"]
    search_fields = ["uuid", "name"]


@admin.register(NodeCredential)
class NodeCredentialAdmin(OrganizationScopedAdmin):
    """Tokens are issued by ``enroll_node`` (shown once); here they can only be seen and revoked."""

    list_display = ["prefix", "node", "created_at", "last_used_at", "revoked_at"]
    readonly_fields = ["node", "prefix", "created_at", "last_used_at"]
    fields = ["node", "prefix", "created_at", "last_used_at", "revoked_at"]

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
