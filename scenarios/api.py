"""``/api/v1/scenarios/``: create, list, read and run what-if scenarios, and read their result.

Authentication as the reports: a personal token (``Bearer wlp_...``) or a browser
session. Any member of an organization may create and run its scenarios (a run
reads the ledger, never writes it). A scenario of an organization the user does not
belong to answers 404. A run is a Celery task: ``POST .../run/`` answers 202 with the
scenario queued; its ``status`` and ``progress`` say how far it is, ``.../result/``
gives the result once it is done (409 before).
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.utils import timezone
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.throttling import ScopedRateThrottle

from common.api import Conflict, InputView, OrganizationRowSerializer, error_responses, owned, validated
from common.query import QueryInputSerializer, organization_ref_field, query_validated
from common.scope import report_organization, report_organization_ids
from fleets.selectors import organizations_for_user
from scenarios.changes import Kind
from scenarios.models import Scenario
from scenarios.services import ScenarioInvalid, scenario_create, scenario_run_claim, scenarios_lapse
from scenarios.tasks import scenario_run_enqueue

ERRORS = error_responses(
    invalid="an invalid field (the message names it); nothing was stored",
    forbidden="a node token",
    not_found="a scenario or organization that is not among yours",
)
CONFLICT = {409: OpenApiResponse(description="the scenario is already queued or running, or has no result yet")}

CHANGES_HELP = (
    f"a list of changes, each an object with a kind ({', '.join(k.value for k in Kind)}) and its fields: "
    "nodes {fleet, gpu_model, nodes (signed)}; lifetime {fleet, extra_years, [purchase_price_per_gpu, "
    "prior_use_years]}; move {fleet, zone | price_per_kwh | pue | site (its taxes)}; tenure {fleet, mode: "
    "rent {rate_per_gpu_h, includes_power} | own {capex_per_gpu, lifetime_years, opex_per_gpu_h}}; routing "
    "{llm_model or workload_class (a class's name: its model), from_fleet, to_fleet, share 0-1}. Numbers may be "
    "given as text."
)


class ScenarioView(InputView):
    """A scenario operation: a refused scenario is a 400 naming the field."""

    def handle_exception(self, exc: Exception) -> Response:
        if isinstance(exc, ScenarioInvalid):
            exc = ValidationError({"detail": str(exc)})
        return super().handle_exception(exc)


class ScenarioInputSerializer(serializers.Serializer):
    organization = serializers.CharField(required=False, help_text="id or slug; optional if you belong to one")
    name = serializers.CharField(max_length=200)
    start = serializers.DateTimeField(help_text="first hour replayed (UTC, on the hour)")
    end = serializers.DateTimeField(help_text="end of the period, exclusive (UTC, on the hour); at most 366 days")
    changes = serializers.ListField(child=serializers.DictField(), help_text=CHANGES_HELP)


class ScenarioListQuerySerializer(QueryInputSerializer):
    organization = serializers.ListField(
        child=organization_ref_field("organization id or slug"), required=False, default=list,
        help_text="organization id or slug, repeatable; default: all of yours",
    )  # fmt: skip


class ProgressSerializer(serializers.Serializer):
    percent = serializers.FloatField(source="progress_pct")
    node_hours_replayed = serializers.IntegerField()
    node_hours_total = serializers.IntegerField()


class ScenarioOutputSerializer(OrganizationRowSerializer):
    name = serializers.CharField()
    start = serializers.DateTimeField(source="period_start")
    end = serializers.DateTimeField(source="period_end")
    changes = serializers.ListField(child=serializers.DictField())
    status = serializers.ChoiceField(choices=Scenario.Status.choices)
    progress = ProgressSerializer(source="*")
    error = serializers.CharField(help_text="why the last run failed")
    created_by = serializers.CharField(source="created_by.username", allow_null=True, default=None)
    created_at = serializers.DateTimeField()
    queued_at = serializers.DateTimeField(allow_null=True)
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)


# The reports' rule of carbon per token (``accounting.ledger.totals.carbon_per_token_complete``), on a result.
RESULT_CARBON_RULE = (
    "Each side's gCO2e per 1M output tokens (location_, embodied_ with its range, total_) is null without output "
    "tokens, and withheld (null) while any of its facility kWh has no grid intensity (location_unknown_facility_kwh "
    "above 0) or, where embodied carbon is part of it, any GPU-hour is of a model without an embodied figure "
    "(embodied_unknown_gpu_h above 0), as on the comparison's rows; carbon_per_token_note says why, and "
    "carbon_per_token_withheld gives each withheld figure its own reason. Totals of CO2e keep the known part."
)
RESULT_HELP = (
    f"actual and scenario side by side: total, fleets, llm_models (P99 TTFT), basis, notes. {RESULT_CARBON_RULE}"
)


class ScenarioDetailSerializer(ScenarioOutputSerializer):
    result = serializers.JSONField(allow_null=True, help_text=RESULT_HELP)


class ScenarioResultSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.CharField()
    result = serializers.JSONField(help_text=RESULT_HELP)


def scenarios_for_user(*, user: Any) -> QuerySet[Scenario]:
    organizations = organizations_for_user(user=user)
    return Scenario.objects.filter(organization__in=organizations).select_related("created_by")


class ScenariosView(ScenarioView):
    """Your organizations' scenarios (newest first), and a new one (stored, not run)."""

    @extend_schema(
        operation_id="scenarios_list",
        parameters=[ScenarioListQuerySerializer],
        responses={200: ScenarioOutputSerializer(many=True), **ERRORS},
    )
    def get(self, request: Request) -> Response:
        query = query_validated(ScenarioListQuerySerializer, request)
        ids = report_organization_ids(user=request.user, refs=query["organization"])
        rows = scenarios_for_user(user=request.user).filter(organization_id__in=ids).order_by("-created_at", "-id")
        scenarios_lapse(scenarios=rows, now=timezone.now())  # runs whose worker died are listed failed
        return Response(ScenarioOutputSerializer(rows, many=True).data)

    @extend_schema(
        operation_id="scenarios_create",
        summary="A named set of changes over a past period (stored, not run: POST .../run/ runs it)",
        request=ScenarioInputSerializer,
        responses={201: ScenarioDetailSerializer, **ERRORS},
    )
    def post(self, request: Request) -> Response:
        data = validated(ScenarioInputSerializer, request)
        scenario = scenario_create(
            organization=report_organization(user=request.user, ref=data.get("organization")),
            user=request.user,
            name=data["name"],
            period_start=data["start"],
            period_end=data["end"],
            changes=data["changes"],
        )
        return Response(ScenarioDetailSerializer(scenario).data, status=status.HTTP_201_CREATED)


class ScenarioDetailView(ScenarioView):
    """One scenario: its changes, status, progress of its run, and its result once done."""

    @extend_schema(operation_id="scenarios_read", responses={200: ScenarioDetailSerializer, **ERRORS})
    def get(self, request: Request, scenario_id: int) -> Response:
        scenario = owned(scenarios_for_user(user=request.user), scenario_id, "scenario")
        if scenarios_lapse(scenarios=Scenario.objects.filter(pk=scenario.pk), now=timezone.now()):
            scenario.refresh_from_db()  # its worker died: failed, with the reason
        return Response(ScenarioDetailSerializer(scenario).data)


class ScenarioRunView(ScenarioView):
    """Replays the scenario on the period's stored node-hours in a worker; the ledger is only read."""

    throttle_classes = [ScopedRateThrottle]
    throttle_scope = "scenario_runs"  # THROTTLE_SCENARIO_RUNS_RATE

    @extend_schema(
        operation_id="scenarios_run",
        summary="Queue a run (a Celery task); follow status and progress on the scenario",
        request=None,
        responses={202: ScenarioOutputSerializer, **ERRORS, **CONFLICT},
    )
    def post(self, request: Request, scenario_id: int) -> Response:
        scenario = owned(scenarios_for_user(user=request.user), scenario_id, "scenario")
        if not scenario_run_claim(scenario_id=scenario.pk, now=timezone.now()):
            raise Conflict(f"scenario {scenario.pk} is already {scenario.status}")
        scenario_run_enqueue(scenario_id=scenario.pk)
        scenario.refresh_from_db()
        return Response(ScenarioOutputSerializer(scenario).data, status=status.HTTP_202_ACCEPTED)


class ScenarioResultView(ScenarioView):
    """The last run's result: actual and scenario side by side (409 until a run is done)."""

    @extend_schema(operation_id="scenarios_result", responses={200: ScenarioResultSerializer, **ERRORS, **CONFLICT})
    def get(self, request: Request, scenario_id: int) -> Response:
        scenario = owned(scenarios_for_user(user=request.user), scenario_id, "scenario")
        if scenario.status != Scenario.Status.DONE or scenario.result is None:
            raise Conflict(f"scenario {scenario.pk} has no result: it is {scenario.get_status_display().lower()}")
        return Response({"id": scenario.pk, "status": scenario.status, "result": scenario.result})
