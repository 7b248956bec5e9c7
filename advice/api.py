"""``/api/v1/workload-classes/`` (placement advice) and ``/api/v1/reports/load-curves/``.

Authentication as the reports: a personal token (``Bearer wlp_...``) or a browser
session. Any member reads an organization's classes and their advice; the
``admin`` and ``engineer`` roles create, change and delete them (others: 403).
``/api/v1/advice-settings/`` (minimum hours of data, curve history, webhook URL,
e-mail addresses) is the admin's alone, read and write.
A class of an organization the user does not belong to answers 404. Every change
is kept in the audit trail (subject ``workload_class``).
"""

from __future__ import annotations

from decimal import Decimal
from functools import partial
from typing import Any

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone
from drf_spectacular.utils import extend_schema, extend_schema_serializer
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from advice.models import Advice, AdviceSettings, WorkloadClass
from advice.services import (
    ClassInvalid,
    advice_settings,
    advice_settings_save,
    workload_class_delete,
    workload_class_save,
)
from advice.tasks import advice_refresh_task
from common.api import InputView, OrganizationRowSerializer, error_responses, owned, validated
from common.outbound import OutboundRefused, target_check
from common.query import QueryInputSerializer, organization_ref_field, query_validated
from common.scope import report_fleet_ids, writable_organization
from fleets.permissions import Capability, change_check
from fleets.selectors import organizations_for_user
from reports.curves import load_curve_rows, load_curves
from reports.report_view import ReportView, report_operation
from reports.serializers import (
    BAND_CARBON_NOTE,
    BAND_CARBON_PER_1M_OUTPUT_TOKENS,
    BAND_EMBODIED_PER_1M_OUTPUT_TOKENS,
    BAND_EMBODIED_UNKNOWN,
    BAND_INTENSITY_COVERAGE,
    BAND_OPERATIONAL_PER_1M_OUTPUT_TOKENS,
    PER_TOKEN_FIGURES,
    PeriodOutputSerializer,
    ScopeInputSerializer,
    money_per_unit_field,
    number,
)

ERRORS = error_responses(
    invalid="an invalid field (the answer names it), or a name already used; nothing changed",
    forbidden="a node token, or a role other than admin or engineer for a change",
    not_found="a class or organization that is not among yours",
)


class ClassView(InputView):
    """A workload class or advice-settings operation: a refused class is a 400 naming its fields."""

    def handle_exception(self, exc: Exception) -> Response:
        if isinstance(exc, ClassInvalid):
            exc = ValidationError(exc.errors)
        return super().handle_exception(exc)


class ClassInputSerializer(serializers.Serializer):
    organization = organization_ref_field("create only: organization id or slug; optional if you belong to one only",
                                          required=False)  # fmt: skip
    name = serializers.CharField(max_length=100)
    llm_model = serializers.CharField(
        max_length=256, required=False, allow_blank=True,
        help_text="the served model name (ServingEndpoint.model_name) the class runs on; empty: any model",
    )  # fmt: skip
    ttft_target_ms = serializers.IntegerField(min_value=1, max_value=600_000, help_text="TTFT target, milliseconds")
    ttft_percentile = serializers.ChoiceField(choices=[50, 90, 95, 99], default=99,
                                              help_text="the percentile the target applies to")  # fmt: skip
    deadline_h = serializers.IntegerField(
        min_value=1, max_value=48, required=False, allow_null=True,
        help_text="null: latency-sensitive; else deferrable within this many hours (windows from 48 h forecasts)",
    )  # fmt: skip
    expected_output_tokens_per_day = serializers.IntegerField(min_value=1, max_value=10**15)
    carbon_weight = serializers.DecimalField(
        max_digits=3, decimal_places=2, min_value=0, max_value=1, default=Decimal(0),
        help_text="0: cheapest mix; 1: lowest gCO2e (operational + embodied); between: weighted",
    )  # fmt: skip


class AdviceOutputSerializer(serializers.Serializer):
    status = serializers.CharField(help_text="ok, insufficient_data (too few measured hours) or infeasible")
    binding = serializers.CharField(
        help_text="what bound it: cost, carbon_weighted_cost, latency, measured_range, capacity, too_little_data"
    )
    explanation = serializers.CharField(help_text="the recommendation in words: shares, why, the figures, the hours")
    hours_of_data = serializers.IntegerField(help_text="measured fleet-hours the advice rests on")
    computed_at = serializers.DateTimeField()
    changed_at = serializers.DateTimeField(source="created_at", help_text="since when the advice has been this")
    result = serializers.JSONField(
        help_text="recommendation and all_enterprise / all_consumer (placements with share, load per GPU, TTFT at "
        "the percentile with its bucket, cost, kWh and kgCO2e per day), fits (per fleet: capacity within the target "
        "and what bound it, hours), window (deferrable classes: best window, saving vs now, signal average/marginal)"
    )


class ClassOutputSerializer(OrganizationRowSerializer):
    name = serializers.CharField()
    llm_model = serializers.CharField()
    ttft_target_ms = serializers.IntegerField()
    ttft_percentile = serializers.IntegerField()
    deadline_h = serializers.IntegerField(allow_null=True)
    expected_output_tokens_per_day = serializers.IntegerField()
    carbon_weight = serializers.DecimalField(max_digits=3, decimal_places=2)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    advice = AdviceOutputSerializer(allow_null=True, help_text="the latest advice; null until the hourly refresh ran")


def classes_for_user(*, user: Any) -> QuerySet[WorkloadClass]:
    return WorkloadClass.objects.filter(organization__in=organizations_for_user(user=user))


def _owned(user: Any, class_id: int) -> WorkloadClass:
    found: WorkloadClass = owned(classes_for_user(user=user), class_id, "workload class")
    return found


def _latest(workload_class: WorkloadClass) -> Advice | None:
    return workload_class.advice.order_by("-created_at", "-id").first()


def _shown(workload_class: WorkloadClass) -> dict[str, Any]:
    data = dict(ClassOutputSerializer({**vars(workload_class), "advice": None}).data)
    latest = _latest(workload_class)
    data["advice"] = None if latest is None else AdviceOutputSerializer(latest).data
    return data


def _refresh_queued(organization_id: int) -> None:
    """The organization's advice recomputed by a task queued once the change is committed."""
    transaction.on_commit(partial(advice_refresh_task.delay, organization_id=organization_id))


class WorkloadClassesView(ClassView):
    @extend_schema(operation_id="workload_classes_list", summary="Your organizations' workload classes, with advice",
                   responses={200: ClassOutputSerializer(many=True), **ERRORS})  # fmt: skip
    def get(self, request: Request) -> Response:
        return Response([_shown(c) for c in classes_for_user(user=request.user).order_by("organization_id", "name")])

    @extend_schema(
        operation_id="workload_classes_create",
        summary="Define a workload class (admin or engineer)",
        description=(
            "Name unique in the organization. Its placement advice is computed by a refresh queued on commit "
            "(and hourly after that); `advice` is null until then."
        ),
        request=ClassInputSerializer, responses={201: ClassOutputSerializer, **ERRORS},
    )  # fmt: skip
    def post(self, request: Request) -> Response:
        data = validated(ClassInputSerializer, request)
        ref = data.pop("organization", None)
        organization = writable_organization(user=request.user, ref=ref, capability=Capability.WORKLOADS)
        workload_class = workload_class_save(
            workload_class=WorkloadClass(organization=organization), data=data, user=request.user, now=timezone.now()
        )
        _refresh_queued(organization.pk)
        return Response(_shown(workload_class), status=status.HTTP_201_CREATED)


class WorkloadClassDetailView(ClassView):
    @extend_schema(operation_id="workload_classes_read", responses={200: ClassOutputSerializer, **ERRORS})
    def get(self, request: Request, class_id: int) -> Response:
        return Response(_shown(_owned(request.user, class_id)))

    @extend_schema(
        operation_id="workload_classes_update", summary="Change a class (the fields given; the organization stays)",
        request=ClassInputSerializer(partial=True), responses={200: ClassOutputSerializer, **ERRORS},
    )  # fmt: skip
    def patch(self, request: Request, class_id: int) -> Response:
        workload_class = _owned(request.user, class_id)
        change_check(user=request.user, organization=workload_class.organization_id, capability=Capability.WORKLOADS)
        data = validated(ClassInputSerializer, request, partial=True)
        data.pop("organization", None)  # a class stays in its organization
        workload_class_save(workload_class=workload_class, data=data, user=request.user, now=timezone.now())
        _refresh_queued(workload_class.organization_id)
        return Response(_shown(workload_class))

    @extend_schema(operation_id="workload_classes_delete", summary="Delete a class and its advice",
                   responses={204: None, **ERRORS})  # fmt: skip
    def delete(self, request: Request, class_id: int) -> Response:
        workload_class = _owned(request.user, class_id)
        change_check(user=request.user, organization=workload_class.organization_id, capability=Capability.WORKLOADS)
        workload_class_delete(workload_class=workload_class, user=request.user, now=timezone.now())
        return Response(status=status.HTTP_204_NO_CONTENT)


class SettingsSerializer(serializers.Serializer):
    organization_id = serializers.IntegerField(read_only=True)
    min_hours_of_data = serializers.IntegerField(
        min_value=1, max_value=8760, required=False, help_text="a fleet with fewer measured hours is not advised on"
    )
    curve_days = serializers.IntegerField(min_value=1, max_value=90, required=False,
                                          help_text="days of history the load curves read")  # fmt: skip
    webhook_url = serializers.URLField(
        max_length=200, allow_blank=True, required=False,
        help_text="http(s) URL POSTed a JSON body when a class's advice changes",
    )  # fmt: skip
    notify_emails = serializers.ListField(child=serializers.EmailField(), required=False, max_length=20,
                                          help_text="addresses e-mailed when a class's advice changes")  # fmt: skip

    def validate_webhook_url(self, value: str) -> str:
        """The outbound rule (``common.outbound``) when saved; it is checked again when sent."""
        if value:
            try:
                target_check(value)
            except OutboundRefused as refused:
                raise serializers.ValidationError(str(refused)) from None
        return value


class SettingsQuerySerializer(QueryInputSerializer):
    organization = organization_ref_field("organization id or slug; optional if you belong to one", required=False)


class AdviceSettingsView(ClassView):
    """One organization's advice settings (``?organization=`` id or slug; optional if you belong to one)."""

    @staticmethod
    def _settings(request: Request) -> AdviceSettings:
        query = query_validated(SettingsQuerySerializer, request)
        ref = query.get("organization")
        organization = writable_organization(user=request.user, ref=ref, capability=Capability.NOTIFICATIONS)
        return advice_settings(organization_id=organization.pk)

    @staticmethod
    def _shown(options: AdviceSettings) -> dict[str, Any]:
        return dict(SettingsSerializer({**vars(options), "notify_emails": options.email_list}).data)

    @extend_schema(operation_id="advice_settings_read", summary="Advice settings (admin)",
                   parameters=[SettingsQuerySerializer], responses={200: SettingsSerializer, **ERRORS})  # fmt: skip
    def get(self, request: Request) -> Response:
        return Response(self._shown(self._settings(request)))

    @extend_schema(
        operation_id="advice_settings_update",
        summary="Set the minimum hours of data, the curves' history, and where changes are sent (admin)",
        parameters=[SettingsQuerySerializer],
        request=SettingsSerializer, responses={200: SettingsSerializer, **ERRORS},
    )  # fmt: skip
    def put(self, request: Request) -> Response:
        options = self._settings(request)
        data = validated(SettingsSerializer, request, partial=True)
        if "notify_emails" in data:
            data["notify_emails"] = "\n".join(data["notify_emails"])
        advice_settings_save(options=options, data=data, user=request.user, now=timezone.now())
        return Response(self._shown(options))


def _ttft_ms(percentile: str) -> serializers.FloatField:
    return number(f"TTFT {percentile}, ms, interpolated within its bucket")


def _bucket_low_ms(percentile: str) -> serializers.FloatField:
    return number(f"lower bound of the bucket {percentile} falls in, ms")


def _bucket_high_ms() -> serializers.FloatField:
    return number("upper bound of that bucket, ms; null: the +Inf bucket")


class LoadCurveRowSerializer(serializers.Serializer):
    fleet_id = serializers.IntegerField()
    fleet_name = serializers.CharField()
    gpu_model = serializers.CharField()
    gpu_class = serializers.CharField(allow_null=True, help_text="enterprise or consumer (the GPU profile's class)")
    llm_model = serializers.CharField(help_text="the served model name")
    currency = serializers.CharField()
    gpu_count = number(
        "GPUs that served the model in its busiest hour (its GPU-hours then, shared by output tokens; fractional "
        "for a shared GPU)"
    )
    curve_hours = serializers.IntegerField(help_text="fleet-hours of the curve, all bands")
    band_low_rps_per_gpu = serializers.FloatField(help_text="band: requests/s per GPU, inclusive")
    band_high_rps_per_gpu = serializers.FloatField(allow_null=True, help_text="exclusive; null: open-ended")
    hours = serializers.IntegerField(help_text="fleet-hours whose load fell in the band")
    rps_per_gpu = number("mean load of the band's hours: requests / GPU-seconds")
    max_rps_per_gpu = number("the highest hour's load in the band: the measured range ends here")
    output_tokens_per_s_per_gpu = number("output tokens / GPU-seconds")
    requests = serializers.IntegerField()
    generation_tokens = serializers.IntegerField(help_text="output tokens")
    ttft_basis = serializers.CharField(allow_null=True, help_text="measured, lower_bound (TGI queue time) or null")
    ttft_p50_ms = _ttft_ms("P50")
    ttft_p50_bucket_low_ms = _bucket_low_ms("P50")
    ttft_p50_bucket_high_ms = _bucket_high_ms()
    ttft_p90_ms = _ttft_ms("P90")
    ttft_p90_bucket_low_ms = _bucket_low_ms("P90")
    ttft_p90_bucket_high_ms = _bucket_high_ms()
    ttft_p95_ms = _ttft_ms("P95")
    ttft_p95_bucket_low_ms = _bucket_low_ms("P95")
    ttft_p95_bucket_high_ms = _bucket_high_ms()
    ttft_p99_ms = _ttft_ms("P99")
    ttft_p99_bucket_low_ms = _bucket_low_ms("P99")
    ttft_p99_bucket_high_ms = _bucket_high_ms()
    cost_per_1m_output_tokens = money_per_unit_field(PER_TOKEN_FIGURES["cost_per_1m_output_tokens"])
    it_j_per_output_token = number("IT energy J / output tokens")
    facility_kwh_per_1m_output_tokens = number("facility kWh (after PUE) / output tokens x 1e6")
    operational_gco2e_per_1m_output_tokens = number(BAND_OPERATIONAL_PER_1M_OUTPUT_TOKENS)
    embodied_gco2e_per_1m_output_tokens = number(BAND_EMBODIED_PER_1M_OUTPUT_TOKENS)
    gco2e_per_1m_output_tokens = number(BAND_CARBON_PER_1M_OUTPUT_TOKENS)
    operational_coverage = number(BAND_INTENSITY_COVERAGE)
    embodied_unknown_gpu_h = number(BAND_EMBODIED_UNKNOWN)
    carbon_per_token_note = serializers.CharField(allow_null=True, help_text=BAND_CARBON_NOTE)
    unpriced_node_hours = serializers.IntegerField(
        help_text="node-hours with no price, asset or tariff in force: their cost is missing, so "
        "cost_per_1m_output_tokens is a lower bound when this is above 0"
    )


@report_operation(
    operation_id="reports_load_curves",
    summary="Measured load curves: per fleet x GPU model x LLM model, figures per load band",
    description=(
        "Fleet-hours binned by load (requests/s per GPU; bands 0-0.25-0.5-1-2-4-8-16-32-64-) with, per band, the "
        "merged TTFT histogram's P50/P90/P95/P99 and their bucket bounds, output tokens/s per GPU, and cost, J "
        "and gCO2e (operational + embodied) per output token. A node-hour serving several LLM models is shared "
        "among them by output tokens (an allocation). Unit figures keep 4 significant digits. What the advisor "
        "reads: it never uses a load above a band's `max_rps_per_gpu`. CSV: `Accept: text/csv` or `?format=csv`."
    ),
)
class LoadCurvesReportView(ReportView):
    class InputSerializer(ScopeInputSerializer):
        llm_model = serializers.ListField(child=serializers.CharField(max_length=256), required=False,
                                          help_text="served model name, repeatable")  # fmt: skip

    @extend_schema_serializer(component_name="LoadCurvesReport")
    class OutputSerializer(PeriodOutputSerializer):
        results = LoadCurveRowSerializer(many=True)

    def get(self, request: Request) -> Any:
        params, start, end, organization_ids = self.scope(request)
        fleet_ids = report_fleet_ids(organization_ids=organization_ids, ids=params.get("fleet", []))
        # load_curves shares a node-hour among every model it served before keeping the asked ones.
        curves = load_curves(organization_ids=organization_ids, start=start, end=end, fleet_ids=fleet_ids,
                             llm_models=params.get("llm_model", []))  # fmt: skip
        rows = load_curve_rows(curves)
        if self.wants_csv(request):
            columns = list(LoadCurveRowSerializer().fields)
            return self.csv_answer(columns, rows, report="load-curves", start=start, end=end)
        return Response(self.OutputSerializer({"start": start, "end": end, "results": rows}).data)
