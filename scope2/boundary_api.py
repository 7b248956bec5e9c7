"""The inventory's inputs through the API: the consolidation approach, each node's electricity scope, Scope 1.

- ``GET, PUT /api/v1/inventory-boundary/``: the organization's consolidation approach (operational control
  without a row), with the rule ``scope2.boundary`` applies;
- ``GET /api/v1/node-scopes/``: every node with its tenure, the organization's choice for its electricity
  (``auto``: the default rule) and where its hardware lands; ``PUT /api/v1/node-scopes/<node_id>/`` chooses;
- ``GET, POST /api/v1/scope1-emissions/``, ``GET, PATCH /api/v1/scope1-emissions/<id>/``: direct emissions
  entered per site and period (generators, refrigerant).

As the instrument register: any member reads; ``admin`` and ``sustainability`` write (others 403); another
organization's row answers 404; a refused write changes nothing and names the field (400); every write is
audited, and refused (409) where it would change a locked period (a node's scope: the hours of its ledger
lines; the approach: every period from the organization's first figure on).
"""

from __future__ import annotations

from typing import Any, cast

from drf_spectacular.utils import extend_schema, extend_schema_serializer
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from common.api import error_responses, validated
from common.query import QueryInputSerializer, organization_ref_field, query_validated
from common.scope import report_organization
from fleets.models import Node, Organization, Site
from fleets.selectors import organizations_for_user
from governance.audited_write import audited_write
from scope2.api import SustainabilityInputView, sustainability_writable
from scope2.boundary import (
    DEFAULT_RULE,
    Consolidation,
    ElectricityChoice,
    hardware_scope,
)
from scope2.boundary_services import (
    InventoryInputInvalid,
    inventory_boundary_set,
    node_lines_window,
    node_scope_set,
    organization_window,
    scope1_emission_create,
    scope1_emission_update,
)
from scope2.exports import MATCHING
from scope2.models import InventoryBoundary, NodeScope, Scope1Emission, Scope2Disclosure
from scope2.selectors import disclosed_matching


# A refused input: 400 naming each field with why. (Comments, not docstrings, on the views: drf-spectacular
# would print a docstring into every operation's schema.)
class _View(SustainabilityInputView):
    refusals = (InventoryInputInvalid,)

    def refused(self, error: Exception) -> ValidationError:
        problems = cast(InventoryInputInvalid, error).problems  # one of ``refusals``
        return ValidationError({name: [why] for name, why in problems.items()})


_ERRORS = error_responses(
    invalid="an invalid field (named); nothing was changed",
    forbidden="a node token, or a role that may not edit the inventory's inputs",
    not_found="a node, entry or organization that is not among yours",
    conflict="the change would alter a locked period; nothing was changed",
)


# --- the consolidation approach -------------------------------------------------------------------------------


class BoundaryInputSerializer(serializers.Serializer):
    organization = serializers.CharField(required=False, max_length=200, help_text="id or slug; optional if one")
    consolidation_approach = serializers.ChoiceField(choices=[c.value for c in Consolidation])
    equity_share_pct = serializers.DecimalField(
        max_digits=7, decimal_places=4, min_value=0, max_value=100, required=False, allow_null=True
    )


class BoundaryQuerySerializer(QueryInputSerializer):
    organization = organization_ref_field("organization id or slug; optional if you belong to one only", required=False)


@extend_schema_serializer(component_name="InventoryBoundary")
class BoundaryOutputSerializer(serializers.Serializer):
    organization_id = serializers.IntegerField()
    consolidation_approach = serializers.CharField()
    equity_share_pct = serializers.DecimalField(max_digits=7, decimal_places=4, allow_null=True, coerce_to_string=False)
    rule = serializers.CharField(help_text="where each node's electricity and hardware land (scope2.boundary)")


def _boundary_output(organization: Organization) -> dict[str, Any]:
    row = InventoryBoundary.objects.filter(organization=organization).first()
    return dict(
        BoundaryOutputSerializer(
            {
                "organization_id": organization.pk,
                "consolidation_approach": row.consolidation_approach if row else Consolidation.OPERATIONAL_CONTROL,
                "equity_share_pct": row.equity_share_pct if row else None,
                "rule": DEFAULT_RULE,
            }
        ).data
    )


class _OrganizationSettingView(_View):
    # An organization's one-row setting: read by any member; written by admin or sustainability, audited, and
    # refused (409) while it would change a locked period (every period from the organization's first figure).
    model: Any
    subject: str
    input_serializer: type[serializers.Serializer]

    def output(self, organization: Organization) -> dict[str, Any]:
        raise NotImplementedError

    def write(self, organization: Organization, data: dict[str, Any]) -> Any:
        raise NotImplementedError

    def read_setting(self, request: Request) -> Response:
        query = query_validated(BoundaryQuerySerializer, request)
        return Response(self.output(report_organization(user=request.user, ref=query.get("organization"))))

    def write_setting(self, request: Request) -> Response:
        data, organization = self.validated_writable(self.input_serializer, request)
        audited_write(
            organization_id=organization.pk, user=request.user, subject=self.subject,
            before=self.model.objects.filter(organization=organization).first(),
            write=lambda: self.write(organization, data), period=lambda row: organization_window(organization),
        )  # fmt: skip
        return Response(self.output(organization))


class InventoryBoundaryView(_OrganizationSettingView):
    model, subject, input_serializer = InventoryBoundary, "inventory_boundary", BoundaryInputSerializer

    def output(self, organization: Organization) -> dict[str, Any]:
        return _boundary_output(organization)

    def write(self, organization: Organization, data: dict[str, Any]) -> Any:
        return inventory_boundary_set(
            organization=organization, approach=data["consolidation_approach"],
            equity_share_pct=data.get("equity_share_pct"),
        )  # fmt: skip

    @extend_schema(
        operation_id="inventory_boundary_read", parameters=[BoundaryQuerySerializer],
        responses={200: BoundaryOutputSerializer, **_ERRORS},
    )  # fmt: skip
    def get(self, request: Request) -> Response:
        return self.read_setting(request)

    @extend_schema(
        operation_id="inventory_boundary_set",
        summary="Choose the consolidation approach (GHG Protocol Corporate Standard, ch. 3)",
        request=BoundaryInputSerializer,
        responses={200: BoundaryOutputSerializer, **_ERRORS},
    )
    def put(self, request: Request) -> Response:
        return self.write_setting(request)


# --- the disclosed market-based matching ----------------------------------------------------------------------


class DisclosureInputSerializer(serializers.Serializer):
    organization = serializers.CharField(required=False, max_length=200, help_text="id or slug; optional if one")
    market_matching = serializers.ChoiceField(
        choices=Scope2Disclosure.Matching.choices,
        help_text="the market-based figure the GHG table and ESRS E1-6 49(b) disclose; both are always reported",
    )


@extend_schema_serializer(component_name="Scope2Disclosure")
class DisclosureOutputSerializer(serializers.Serializer):
    organization_id = serializers.IntegerField()
    market_matching = serializers.ChoiceField(choices=Scope2Disclosure.Matching.choices)
    rule = serializers.CharField()


def _disclosure_output(organization: Organization) -> dict[str, Any]:
    matching = disclosed_matching(organization_id=organization.pk)
    return dict(DisclosureOutputSerializer(
        {"organization_id": organization.pk, "market_matching": matching, "rule": MATCHING[matching]}
    ).data)  # fmt: skip


class Scope2DisclosureView(_OrganizationSettingView):
    model, subject, input_serializer = Scope2Disclosure, "scope2_disclosure", DisclosureInputSerializer

    def output(self, organization: Organization) -> dict[str, Any]:
        return _disclosure_output(organization)

    def write(self, organization: Organization, data: dict[str, Any]) -> Any:
        return Scope2Disclosure.objects.update_or_create(
            organization=organization, defaults={"market_matching": data["market_matching"]}
        )[0]

    @extend_schema(
        operation_id="scope2_disclosure_read", parameters=[BoundaryQuerySerializer],
        responses={200: DisclosureOutputSerializer, **_ERRORS},
    )  # fmt: skip
    def get(self, request: Request) -> Response:
        return self.read_setting(request)

    @extend_schema(
        operation_id="scope2_disclosure_set",
        summary="Choose which market-based matching is disclosed (annual, the 2015 Guidance; or hourly)",
        request=DisclosureInputSerializer,
        responses={200: DisclosureOutputSerializer, **_ERRORS},
    )
    def put(self, request: Request) -> Response:
        return self.write_setting(request)


# --- each node's electricity ----------------------------------------------------------------------------------


class NodeScopeInputSerializer(serializers.Serializer):
    electricity = serializers.ChoiceField(choices=[c.value for c in ElectricityChoice])
    reason = serializers.CharField(required=False, allow_blank=True, max_length=2000)


@extend_schema_serializer(component_name="NodeScope")
class NodeScopeOutputSerializer(serializers.Serializer):
    node_id = serializers.IntegerField()
    organization_id = serializers.IntegerField()
    hostname = serializers.CharField()
    tenure = serializers.CharField()
    electricity = serializers.CharField(help_text="the organization's choice; auto: the default rule")
    reason = serializers.CharField()
    hardware = serializers.CharField(help_text="category_2 (owned) or excluded_in_service (rented)")


def _nodes(user: Any) -> Any:
    return Node.objects.filter(fleet__organization__in=organizations_for_user(user=user)).select_related("fleet")


def _node_output(node: Node) -> dict[str, Any]:
    choice = NodeScope.objects.filter(node=node).first()
    return dict(
        NodeScopeOutputSerializer(
            {
                "node_id": node.pk, "organization_id": node.fleet.organization_id, "hostname": node.hostname,
                "tenure": node.tenure, "electricity": choice.electricity if choice else ElectricityChoice.AUTO.value,
                "reason": choice.reason if choice else "", "hardware": hardware_scope(tenure=node.tenure).value,
            }
        ).data
    )  # fmt: skip


class NodeScopesView(_View):
    @extend_schema(operation_id="node_scopes_list", responses={200: NodeScopeOutputSerializer(many=True), **_ERRORS})
    def get(self, request: Request) -> Response:
        return Response([_node_output(node) for node in _nodes(request.user)])


class NodeScopeView(_View):
    @extend_schema(
        operation_id="node_scope_set",
        summary="Choose where a rented node's electricity lands (auto, scope_2, category_1, category_8)",
        request=NodeScopeInputSerializer,
        responses={200: NodeScopeOutputSerializer, **_ERRORS},
    )
    def put(self, request: Request, node_id: int) -> Response:
        node = _nodes(request.user).filter(pk=node_id).first()
        if node is None:
            raise NotFound(f"no node {node_id} among yours")
        sustainability_writable(request.user, node.fleet.organization)
        data = validated(NodeScopeInputSerializer, request)
        before = NodeScope.objects.filter(node=node).first()
        audited_write(
            organization_id=node.fleet.organization_id, user=request.user, subject="node_scope", before=before,
            write=lambda: node_scope_set(node=node, electricity=data["electricity"], reason=data.get("reason", "")),
            period=lambda row: node_lines_window(node),
        )  # fmt: skip
        return Response(_node_output(node))


# --- Scope 1 --------------------------------------------------------------------------------------------------


class Scope1InputSerializer(serializers.Serializer):
    organization = serializers.CharField(required=False, max_length=200, help_text="create only: id or slug")
    site = serializers.IntegerField(min_value=1)
    activity = serializers.ChoiceField(choices=Scope1Emission.Activity.choices)
    start = serializers.DateTimeField(help_text="UTC, on the hour, inclusive")
    end = serializers.DateTimeField(help_text="UTC, on the hour, exclusive")
    co2e_kg = serializers.DecimalField(max_digits=16, decimal_places=6, min_value=0)
    description = serializers.CharField(max_length=2000)


@extend_schema_serializer(component_name="Scope1Emission")
class Scope1OutputSerializer(serializers.ModelSerializer):
    class Meta:
        model = Scope1Emission
        fields = ["id", "organization_id", "site_id", "activity", "start", "end", "co2e_kg", "description"]

    organization_id = serializers.IntegerField()
    site_id = serializers.IntegerField()
    co2e_kg = serializers.DecimalField(max_digits=16, decimal_places=6, coerce_to_string=False)


def _entries(user: Any) -> Any:
    return Scope1Emission.objects.filter(organization__in=organizations_for_user(user=user))


def _entry(user: Any, entry_id: int) -> Scope1Emission:
    row = _entries(user).filter(pk=entry_id).first()
    if row is None:
        raise NotFound(f"no Scope 1 entry {entry_id} among yours")
    return row


def _site(organization: Organization, site_id: int) -> Site:
    site = Site.objects.filter(pk=site_id, organization=organization).first()
    if site is None:
        raise ValidationError({"site": [f"site {site_id} is not a site of this organization"]})
    return site


def _period(row: Scope1Emission) -> Any:
    return (row.start, row.end)


class Scope1EmissionsView(_View):
    @extend_schema(operation_id="scope1_emissions_list", responses={200: Scope1OutputSerializer(many=True), **_ERRORS})
    def get(self, request: Request) -> Response:
        return Response(Scope1OutputSerializer(_entries(request.user), many=True).data)

    @extend_schema(
        operation_id="scope1_emissions_create",
        summary="Enter a site's direct emissions over a period (generators, refrigerant)",
        request=Scope1InputSerializer,
        responses={201: Scope1OutputSerializer, **_ERRORS},
    )
    def post(self, request: Request) -> Response:
        data, organization = self.validated_writable(Scope1InputSerializer, request)
        site = _site(organization, data["site"])
        row = audited_write(
            organization_id=organization.pk, user=request.user, subject="scope1_emission", before=None,
            write=lambda: scope1_emission_create(organization=organization, site=site, data=data), period=_period,
        )  # fmt: skip
        return Response(Scope1OutputSerializer(row).data, status=status.HTTP_201_CREATED)


class Scope1EmissionView(_View):
    @extend_schema(operation_id="scope1_emissions_read", responses={200: Scope1OutputSerializer, **_ERRORS})
    def get(self, request: Request, entry_id: int) -> Response:
        return Response(Scope1OutputSerializer(_entry(request.user, entry_id)).data)

    @extend_schema(
        operation_id="scope1_emissions_update",
        request=Scope1InputSerializer(partial=True),
        responses={200: Scope1OutputSerializer, **_ERRORS},
    )
    def patch(self, request: Request, entry_id: int) -> Response:
        row = _entry(request.user, entry_id)
        sustainability_writable(request.user, row.organization)
        data = validated(Scope1InputSerializer, request, partial=True)
        data.pop("organization", None)
        if "site" in data:
            data["site"] = _site(row.organization, data["site"])
        row = audited_write(
            organization_id=row.organization_id, user=request.user, subject="scope1_emission", before=row,
            write=lambda: scope1_emission_update(row=row, data=data), period=_period,
        )  # fmt: skip
        return Response(Scope1OutputSerializer(row).data)
