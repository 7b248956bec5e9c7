"""``/api/v1/locked-periods/`` and ``/api/v1/audit/``: the admin's side of the inputs.

An organization admin locks a closed period (``POST``), lists the locks (any
member reads them, so a refused change can be understood) and unlocks one
(``DELETE``). The audit trail (``GET /api/v1/audit/``, JSON or CSV) is read by
admins only; it is the export that goes with the sustainability report.
"""

from __future__ import annotations

import json
from typing import Any

from django.http import HttpResponseBase
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response

from common.api import ERRORS, InputView, OrganizationRowSerializer, owned, validated
from common.csv_safety import csv_escaped
from common.periods import hour_instant_problem
from common.query import QueryInputSerializer, organization_ref_field, query_validated
from common.renderers import CSVRenderer, csv_response
from common.scope import report_organization
from fleets.permissions import Capability, change_check
from fleets.selectors import organizations_for_user
from governance.audit import audit_entries, entries_bearing_on
from governance.locks import period_lock, period_unlock
from governance.models import LockedPeriod
from governance.report_audit import AUDIT_COLUMNS, AuditEntrySerializer


class LockInputSerializer(serializers.Serializer):
    organization = serializers.CharField(required=False, max_length=200, help_text="id or slug; optional if one")
    start = serializers.DateTimeField()
    end = serializers.DateTimeField(help_text="exclusive")
    reason = serializers.CharField(required=False, allow_blank=True, max_length=200)


class LockOutputSerializer(OrganizationRowSerializer):
    start = serializers.DateTimeField()
    end = serializers.DateTimeField()
    reason = serializers.CharField()
    locked_by = serializers.CharField(source="locked_by.username", default="")
    locked_at = serializers.DateTimeField()


def locks_for_user(*, user: Any) -> Any:
    return LockedPeriod.objects.filter(organization__in=organizations_for_user(user=user)).select_related("locked_by")


class LockedPeriodsView(InputView):
    @extend_schema(operation_id="locked_periods_list", responses={200: LockOutputSerializer(many=True), **ERRORS})
    def get(self, request: Request) -> Response:
        return Response(LockOutputSerializer(locks_for_user(user=request.user), many=True).data)

    @extend_schema(
        operation_id="locked_periods_create",
        summary="Lock a closed period: changes to inputs in force within it are refused (409) until unlocked",
        request=LockInputSerializer, responses={201: LockOutputSerializer, **ERRORS},
    )  # fmt: skip
    def post(self, request: Request) -> Response:
        data = validated(LockInputSerializer, request)
        organization = report_organization(user=request.user, ref=data.get("organization"))
        change_check(user=request.user, organization=organization, capability=Capability.GOVERNANCE)
        for name in ("start", "end"):
            if problem := hour_instant_problem(data[name]):
                raise ValidationError({name: [problem]})
        if data["end"] <= data["start"]:
            raise ValidationError({"end": ["must be after start"]})
        lock = period_lock(
            organization=organization, start=data["start"], end=data["end"], reason=data.get("reason", ""),
            user=request.user, now=timezone.now(),
        )  # fmt: skip
        return Response(LockOutputSerializer(lock).data, status=status.HTTP_201_CREATED)


class LockedPeriodDetailView(InputView):
    @extend_schema(operation_id="locked_periods_unlock", responses={204: None, **ERRORS})
    def delete(self, request: Request, lock_id: int) -> Response:
        lock = owned(locks_for_user(user=request.user), lock_id, "locked period")
        change_check(user=request.user, organization=lock.organization_id, capability=Capability.GOVERNANCE)
        period_unlock(lock=lock, user=request.user, now=timezone.now())
        return Response(status=status.HTTP_204_NO_CONTENT)


class AuditQuerySerializer(QueryInputSerializer):
    organization = organization_ref_field("id or slug; optional if you belong to one", required=False)
    start = serializers.DateTimeField(required=False, help_text="changes at or after")
    end = serializers.DateTimeField(required=False, help_text="changes before")
    period_start = serializers.DateTimeField(
        required=False,
        help_text="with period_end: only the changes bearing on the reporting period [period_start, period_end) "
        "(their input's validity, delivery, year or hours overlap it, or it has no period), whenever made: the "
        "entries a report of that period carries in its audit section",
    )
    period_end = serializers.DateTimeField(required=False, help_text="exclusive; with period_start")
    format = serializers.ChoiceField(choices=["json", "csv"], required=False)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        given = ("period_start" in attrs, "period_end" in attrs)
        if any(given) and not all(given):
            raise ValidationError("give period_start and period_end together")
        if all(given) and attrs["period_end"] <= attrs["period_start"]:
            raise ValidationError("period_end must be after period_start")
        return attrs


class AuditView(InputView):
    renderer_classes = [JSONRenderer, CSVRenderer]

    @extend_schema(
        operation_id="audit_list",
        summary="The audit trail of input changes, newest first (admins); ?format=csv for the report's export",
        parameters=[AuditQuerySerializer],
        responses={200: AuditEntrySerializer(many=True), (200, "text/csv"): OpenApiTypes.STR, **ERRORS},
    )
    def get(self, request: Request) -> HttpResponseBase:
        params = query_validated(AuditQuerySerializer, request)
        organization = report_organization(user=request.user, ref=params.get("organization"))
        change_check(user=request.user, organization=organization, capability=Capability.GOVERNANCE)
        entries: Any = audit_entries(organization_id=organization.pk, start=params.get("start"), end=params.get("end"))
        period_start, period_end = params.get("period_start"), params.get("period_end")
        if period_start is not None and period_end is not None:
            entries = entries_bearing_on(entries, start=period_start, end=period_end)
        rows = AuditEntrySerializer(entries, many=True).data
        if request.accepted_renderer.format == CSVRenderer.format:
            flat = ({**row, "before": _json(row["before"]), "after": _json(row["after"])} for row in rows)
            return csv_response(AUDIT_COLUMNS, csv_escaped(flat), filename=f"audit-{organization.slug}.csv")
        return Response(rows)


def _json(value: Any) -> str:
    return "" if value is None else json.dumps(value, sort_keys=True)
