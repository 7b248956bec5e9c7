"""Collector health per node, for engineers: ``GET /api/v1/nodes/`` and ``GET /api/v1/nodes/<id>/``.

Freshness and losses come from what each collector last reported
(``CollectorStatus``); gaps come from hourly usage, never from raw samples; each GPU's hardware
profile from ``accounting.profiles`` (the rule the ledger prices and weighs it by), so a model no
profile matches is named in the node's status.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.db.models import Prefetch, QuerySet
from django.shortcuts import get_object_or_404
from django.utils import timezone
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounting.hardware import HardwareProfile
from accounting.profiles import gpu_profiles, unknown_gpu_models
from common.stages import NodeHourStage
from fleets.models import Gpu, Node
from fleets.selectors import nodes_for_user
from telemetry.models import CollectorStatus, ParkedHour
from telemetry.selectors import node_gaps

GAP_WINDOW = timedelta(hours=24)


def node_statuses(*, user: Any) -> QuerySet[Node]:
    """The user's nodes with their collector status, GPUs and parked hours, in four queries whatever their number."""
    return (
        nodes_for_user(user=user)
        .select_related("fleet", "site", "collector_status")
        .prefetch_related(
            Prefetch("gpus", queryset=Gpu.objects.order_by("index")),
            Prefetch("parked_hours", queryset=ParkedHour.objects.order_by("hour_start", "stage")),
        )
        .order_by("fleet__name", "hostname")
    )


class GpuOut(serializers.Serializer):
    uuid = serializers.CharField()
    index = serializers.IntegerField()
    name = serializers.CharField(help_text="the model name NVML or dcgm-exporter reported")
    energy_counter_supported = serializers.BooleanField(allow_null=True)
    hardware_profile = serializers.CharField(
        allow_null=True, help_text="the hardware profile's key; null: an unknown model (no embodied figure)"
    )


class ParkedHourOut(serializers.Serializer):
    hour_start = serializers.DateTimeField()
    stage = serializers.ChoiceField(choices=NodeHourStage.choices, help_text="which computation failed")
    error = serializers.CharField(help_text="what the last attempt raised")
    attempts = serializers.IntegerField(help_text="failed attempts in a row")
    failed_at = serializers.DateTimeField()
    retry_at = serializers.DateTimeField(help_text="the next attempt is not before this time")


class NodeStatusOut(serializers.Serializer):
    id = serializers.IntegerField()
    hostname = serializers.CharField()
    fleet = serializers.CharField(source="fleet.name")
    site = serializers.CharField(source="site.name")
    last_report_at = serializers.DateTimeField(allow_null=True)
    newest_sample_at = serializers.DateTimeField(allow_null=True)
    staleness_s = serializers.FloatField(allow_null=True, help_text="seconds from the newest sample to now")
    lag_s = serializers.FloatField(allow_null=True, help_text="delivery delay of the last batch, seconds")
    dropped_batches = serializers.IntegerField(help_text="batches the collector's full spool dropped")
    spool_bytes = serializers.IntegerField()
    collector_version = serializers.CharField()
    gpus = GpuOut(many=True)
    unknown_gpu_models = serializers.ListField(
        child=serializers.CharField(),
        help_text="GPU model names no hardware profile matches: no embodied carbon for them until a profile "
        "(or the card's asset) names one",
    )
    parked_hours = ParkedHourOut(
        many=True, help_text="hours whose rollup or ledger failed: left aside with the error, retried with backoff"
    )


class GapOut(serializers.Serializer):
    hour_start = serializers.DateTimeField()
    measured_s = serializers.FloatField(help_text="seconds between samples at most the max gap apart")
    bridged_s = serializers.FloatField(help_text="seconds inside gaps a cumulative counter bridged (counted in full)")
    bridged_gap_s = serializers.FloatField(help_text="length of the longest bridged gap in the hour")
    missing_s = serializers.FloatField(help_text="seconds no counter or sample proves (not counted)")


class NodeDetailOut(NodeStatusOut):
    gaps_last_24h = GapOut(many=True)


def node_status_data(
    node: Node, *, now: Any, profiles: list[tuple[Gpu, HardwareProfile | None]] | None = None
) -> dict[str, Any]:
    """The node's status; ``profiles``: its GPUs with their hardware profiles (``gpu_profiles``), read here
    where not given."""
    if profiles is None:
        profiles = gpu_profiles(list(node.gpus.all()), organization_id=node.fleet.organization_id)
    status: CollectorStatus | None = getattr(node, "collector_status", None)
    newest = status.newest_sample_at if status else None
    return {
        "id": node.pk,
        "hostname": node.hostname,
        "fleet": node.fleet,
        "site": node.site,
        "last_report_at": status.last_report_at if status else None,
        "newest_sample_at": newest,
        "staleness_s": (now - newest).total_seconds() if newest else None,
        "lag_s": status.lag_s if status else None,
        "dropped_batches": status.dropped_batches if status else 0,
        "spool_bytes": status.spool_bytes if status else 0,
        "collector_version": status.collector_version if status else "",
        "gpus": [_gpu_data(gpu, profile) for gpu, profile in profiles],
        "unknown_gpu_models": unknown_gpu_models(profiles),
        "parked_hours": list(node.parked_hours.all()),
    }


def _gpu_data(gpu: Gpu, profile: HardwareProfile | None) -> dict[str, Any]:
    return {
        "uuid": gpu.uuid, "index": gpu.index, "name": gpu.name,
        "energy_counter_supported": gpu.energy_counter_supported, "hardware_profile": profile and profile.key,
    }  # fmt: skip


def nodes_with_gpu_profiles(nodes: list[Node]) -> list[tuple[Node, list[tuple[Gpu, HardwareProfile | None]]]]:
    """Each node with its GPUs' hardware profiles: the profiles read once per organization."""
    by_organization: dict[int, list[Node]] = {}
    for node in nodes:
        by_organization.setdefault(node.fleet.organization_id, []).append(node)
    paired: dict[int, list[tuple[Gpu, HardwareProfile | None]]] = {}
    for organization_id, own in by_organization.items():
        gpus = [gpu for node in own for gpu in node.gpus.all()]
        for gpu, profile in gpu_profiles(gpus, organization_id=organization_id):
            paired.setdefault(gpu.node_id, []).append((gpu, profile))
    return [(node, paired.get(node.pk, [])) for node in nodes]


class NodeStatusListView(APIView):
    @extend_schema(operation_id="nodes_status_list", responses=NodeStatusOut(many=True))
    def get(self, request: Request) -> Response:
        now = timezone.now()
        nodes = list(node_statuses(user=request.user))
        rows = [node_status_data(node, now=now, profiles=pairs) for node, pairs in nodes_with_gpu_profiles(nodes)]
        return Response(NodeStatusOut(rows, many=True).data)


class NodeStatusDetailView(APIView):
    @extend_schema(
        operation_id="nodes_status_detail",
        responses={200: NodeDetailOut, 404: OpenApiResponse(description="no such node in your organizations")},
    )
    def get(self, request: Request, node_id: int) -> Response:
        node = get_object_or_404(node_statuses(user=request.user), pk=node_id)
        now = timezone.now()
        gaps = node_gaps(node_id=node.pk, start=_hour(now - GAP_WINDOW), end=_hour(now))
        data = {**node_status_data(node, now=now), "gaps_last_24h": gaps}
        return Response(NodeDetailOut(data).data)


def _hour(at: Any) -> Any:
    return at.replace(minute=0, second=0, microsecond=0)
