"""Raw telemetry as collectors report it, what the server knows about each collector, and hourly usage.

Raw sample tables are keyed by their natural key, (GPU, timestamp) and
(endpoint, timestamp), so a re-sent batch stores nothing twice. On PostgreSQL
they are partitioned by day (see ``telemetry.partitions``); the migration
creates them by hand there, with the same columns Django expects.

Hourly usage (``GpuHourUsage``, ``EndpointHourUsage``) is computed from raw
samples by ``telemetry.rollup`` and replaced whole, never incremented.
``RollupPending`` is its work queue (filled by ingest); ``UsageChanged`` tells
the accounting app which node-hours to recompute (it reads and deletes them).
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db import models

from common.http import validate_base_url
from common.outbound import outbound_url_validate
from common.stages import NodeHourStage
from fleets.models import Gpu, Node, Organization
from telemetry.energy import EnergyMethod
from telemetry.fields import Float32Field


class Int4ForeignKey(models.ForeignKey):
    """A foreign key stored as a 4-byte ``integer`` whatever the target's key type.

    For raw sample rows, where every byte is paid once per sample: GPU and epoch
    ids stay far below 2**31, and 4 bytes less per id is ~8 % of a GPU sample on disk.
    """

    def db_type(self, connection: Any) -> str | None:
        return str(connection.data_types["IntegerField"])


class NodeOwnedManager(models.Manager[Any]):
    """``bulk_create`` fills a row's ``node_id`` from its GPU or endpoint where the caller left it unset.

    The product's writers (ingest, the rollup) set it themselves; this serves the rest (seeding, fixtures).
    """

    def bulk_create(self, objs: Any, *args: Any, **kwargs: Any) -> list[Any]:
        objs = list(objs)
        node_ids_fill(self.model, objs)
        return super().bulk_create(objs, *args, **kwargs)


def node_ids_fill(model: type[models.Model], rows: list[Any]) -> None:
    """Set ``node_id`` on ``rows`` (of ``model``: one of the tables keyed by node, then GPU or endpoint)
    where it is unset, from the node of each row's GPU or endpoint: one read."""
    owner = model.OWNER  # type: ignore[attr-defined]
    missing = [row for row in rows if row.node_id is None]
    if not missing:
        return
    owners = {getattr(row, f"{owner}_id") for row in missing}
    table = Gpu if owner == "gpu" else ServingEndpoint
    nodes = dict(table.objects.filter(pk__in=owners).values_list("pk", "node_id"))
    for row in missing:
        row.node_id = nodes.get(getattr(row, f"{owner}_id"))


class NodeOwned(models.Model):
    """A row keyed by node first, then by its GPU or endpoint (``OWNER``): on Citus, distributed by node.

    ``node_id`` is the GPU's or endpoint's node, stored so that every statement on one node's rows names
    the node (docs/scaling.md, "Citus"); saved without one, it is filled from the owner. An update of a
    stored row leaves the node out (it is the owner's, and Citus refuses to set a distribution column).
    """

    OWNER = ""
    objects = NodeOwnedManager()

    class Meta:
        abstract = True

    def save(self, *args: Any, **kwargs: Any) -> None:
        node_ids_fill(type(self), [self])
        if not self._state.adding and kwargs.get("update_fields") is None:
            kwargs["update_fields"] = [
                field.name for field in self._meta.concrete_fields if not field.primary_key and field.name != "node"
            ]
        super().save(*args, **kwargs)


class GpuEpoch(models.Model):
    """One life of a GPU's counters (a boot and driver load): a new epoch means the counter restarted."""

    gpu = models.ForeignKey(Gpu, on_delete=models.CASCADE, related_name="epochs")
    epoch = models.CharField(max_length=128)
    first_seen_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["gpu", "epoch"], name="gpuepoch_unique")]

    def __str__(self) -> str:
        return f"{self.gpu_id}@{self.epoch}"


class ServingEndpoint(models.Model):
    """One LLM model served at an inference server's metrics endpoint on a node, and the GPUs it serves from.

    A server serving several models (vLLM's ``model_name`` label sets) is one endpoint per model:
    its identity is (node, url, model_name), ``model_name`` one model's name, never several joined.
    """

    class Kind(models.TextChoices):
        VLLM = "vllm", "vLLM"
        TGI = "tgi", "TGI"
        SGLANG = "sglang", "SGLang"

    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="serving_endpoints")
    url = models.CharField(max_length=512)
    kind = models.CharField(max_length=10, choices=Kind.choices)
    model_name = models.CharField(max_length=256, blank=True)
    gpus = models.ManyToManyField(Gpu, related_name="serving_endpoints", blank=True)
    first_seen_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["node", "url", "model_name"], name="servingendpoint_unique_node_url_model")
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.url} ({self.model_name})" if self.model_name else f"{self.kind} {self.url}"


class EndpointEpoch(models.Model):
    """One life of an inference server's counters, with its TTFT and inter-token latency histograms' bounds
    and the GPUs it served from (``gpu_count``: its counters' bounds scale with them, as the batches declared
    them; the endpoint's ``gpus`` are its latest declaration, which a redeployment changes)."""

    endpoint = models.ForeignKey(ServingEndpoint, on_delete=models.CASCADE, related_name="epochs")
    epoch = models.CharField(max_length=128)
    ttft_bucket_bounds_s = models.JSONField(default=list)
    itl_bucket_bounds_s = models.JSONField(default=list, help_text="inter-token latency bounds, s; +Inf implicit")
    gpu_count = models.PositiveSmallIntegerField(
        default=0, help_text="the most GPUs a batch declared the endpoint on in this epoch (0: none, bounded as one)"
    )
    first_seen_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["endpoint", "epoch"], name="endpointepoch_unique")]

    def __str__(self) -> str:
        return f"{self.endpoint_id}@{self.epoch}"


class GpuSample(NodeOwned):
    """One reading of one GPU. ``None`` means not measured, never zero.

    No foreign-key constraints: rows are loaded by COPY at high rate, and the
    ingest service has already resolved ``gpu_id`` and ``epoch_id`` itself.
    Column types are the narrowest that hold the values (4-byte ids, ``real``
    power, memory in whole MiB, ``smallint`` percentages), in an order that
    leaves no alignment padding (8-byte columns first): bytes per row are paid
    billions of times. On PostgreSQL the table is laid out by migration 0004
    (``telemetry.migration_ops.RAW_GPU_COLUMNS``), with the GPU's node (8 bytes, the node tables'
    key type: Citus colocates tables by columns of one type) added by 0012: 48 bytes of data per row.
    The database's key is ``(node_id, gpu_id, ts)`` on Citus and SQLite, ``(gpu_id, ts)`` on one
    PostgreSQL server (0015: half the index there; docs/scaling.md).
    """

    OWNER = "gpu"
    pk = models.CompositePrimaryKey("node_id", "gpu_id", "ts")
    ts = models.DateTimeField()
    energy_j = models.FloatField(null=True, help_text="NVML total-energy counter, cumulative, J")
    node = models.ForeignKey(Node, on_delete=models.DO_NOTHING, db_constraint=False, db_index=False, related_name="+")
    gpu = Int4ForeignKey(Gpu, on_delete=models.DO_NOTHING, db_constraint=False, db_index=False, related_name="+")
    epoch = Int4ForeignKey(GpuEpoch, on_delete=models.DO_NOTHING, db_constraint=False, db_index=False, related_name="+")
    mem_used_mib = models.IntegerField(null=True, help_text="memory used, MiB (the collector's bytes, rounded)")
    power_w = Float32Field(null=True)
    util_pct = models.SmallIntegerField(null=True)
    mem_util_pct = models.SmallIntegerField(null=True)
    temp_c = models.SmallIntegerField(null=True)

    def __str__(self) -> str:
        return f"GPU {self.gpu_id} at {self.ts.isoformat()}"


class ServingSample(NodeOwned):
    """One scrape of an inference server's cumulative counters and TTFT and inter-token latency histograms."""

    OWNER = "endpoint"
    pk = models.CompositePrimaryKey("node_id", "endpoint_id", "ts")
    ts = models.DateTimeField()
    node = models.ForeignKey(Node, on_delete=models.DO_NOTHING, db_constraint=False, db_index=False, related_name="+")
    endpoint = models.ForeignKey(
        ServingEndpoint, on_delete=models.DO_NOTHING, db_constraint=False, db_index=False, related_name="+"
    )
    epoch = models.ForeignKey(
        EndpointEpoch, on_delete=models.DO_NOTHING, db_constraint=False, db_index=False, related_name="+"
    )
    prompt_tokens = models.BigIntegerField(null=True)
    generation_tokens = models.BigIntegerField(null=True)
    requests = models.BigIntegerField(null=True)
    ttft_bucket_counts = models.JSONField(null=True, help_text="cumulative counts, one per bound, then +Inf")
    ttft_sum_s = models.FloatField(null=True)
    cached_prompt_tokens = models.BigIntegerField(
        null=True, help_text="prompt tokens served from the prefix cache (within prompt_tokens); null: not exposed"
    )
    itl_bucket_counts = models.JSONField(
        null=True, help_text="inter-token latency: cumulative counts, one per bound, then +Inf; null: not exposed"
    )
    itl_sum_s = models.FloatField(null=True, help_text="inter-token latency histogram's sum, s; null: not exposed")

    def __str__(self) -> str:
        return f"endpoint {self.endpoint_id} at {self.ts.isoformat()}"


class NodeMeterSample(models.Model):
    """One reading of a node's own power meter (``telemetry.collector.hostmeter``): the node boundary.

    ``method``: ``ipmi_dcmi`` or ``redfish`` (the whole node at its supplies) or
    ``rapl`` (its CPU packages only). ``power_w`` instantaneous; ``energy_j`` a
    cumulative counter (RAPL), restarted with ``epoch``. ``None``: not measured.
    """

    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="+")
    ts = models.DateTimeField()
    method = models.CharField(max_length=16)
    epoch = models.CharField(max_length=128)
    power_w = models.FloatField(null=True)
    energy_j = models.FloatField(null=True)

    class Meta:
        # The (node, ts) index serves the rollup's reads of one node's window.
        constraints = [models.UniqueConstraint(fields=["node", "ts"], name="nodemetersample_unique_node_ts")]

    def __str__(self) -> str:
        return f"node {self.node_id} meter at {self.ts.isoformat()}"


class NodeHourUsage(models.Model):
    """A node's metered energy over one UTC hour (``telemetry.energy.gpu_usage_by_hour`` on its meter's samples).

    ``boundary``: ``node`` (IPMI DCMI, Redfish) or ``cpu_packages`` (RAPL).
    """

    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="hour_usage")
    hour_start = models.DateTimeField()
    method = models.CharField(max_length=16)
    boundary = models.CharField(max_length=16)
    energy_j = models.FloatField()
    energy_covered_s = models.FloatField(help_text="seconds of the hour with a known energy (measured or bridged)")
    mean_power_w = models.FloatField(null=True)
    computed_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["node", "hour_start"], name="nodehourusage_unique_node_hour")]

    def __str__(self) -> str:
        return f"node {self.node_id} {self.hour_start:%Y-%m-%d %H:00} metered"


class CollectorStatus(models.Model):
    """What the last batch said about its collector: freshness and losses, for engineers."""

    node = models.OneToOneField(Node, on_delete=models.CASCADE, related_name="collector_status")
    last_report_at = models.DateTimeField(help_text="when the server last accepted a batch")
    newest_sample_at = models.DateTimeField(null=True)
    lag_s = models.FloatField(null=True, help_text="seconds from the newest sample to its arrival")
    collector_version = models.CharField(max_length=32, blank=True)
    reported_hostname = models.CharField(max_length=253, blank=True)
    dropped_batches = models.BigIntegerField(default=0, help_text="batches the collector's full spool dropped")
    spool_bytes = models.BigIntegerField(default=0)
    sample_interval_s = models.FloatField(default=1.0)
    batches_accepted = models.BigIntegerField(default=0)

    class Meta:
        verbose_name_plural = "collector statuses"

    def __str__(self) -> str:
        return f"collector of {self.node_id}, last report {self.last_report_at.isoformat()}"


class GpuHourUsage(NodeOwned):
    """One GPU's usage over one UTC hour, as ``telemetry.energy.gpu_usage_by_hour`` computes it.

    A row exists for an hour with at least one sample or observed second; an
    hour without a row had no data at all. Units are in the names (J, s, W, %, degC).
    """

    OWNER = "gpu"
    node = models.ForeignKey(Node, on_delete=models.CASCADE, db_index=False, related_name="+")
    gpu = models.ForeignKey(Gpu, on_delete=models.CASCADE, related_name="hour_usage")
    hour_start = models.DateTimeField(help_text="start of the UTC hour")
    energy_j = models.FloatField(help_text="energy_counter_j + energy_integrated_j + energy_bridged_j")
    energy_counter_j = models.FloatField()
    energy_integrated_j = models.FloatField()
    energy_bridged_j = models.FloatField(default=0.0, help_text="the counter's increase across bridged gaps")
    energy_method = models.CharField(max_length=10, choices=[(m.value, m.value) for m in EnergyMethod])
    observed_s = models.FloatField(help_text="seconds of the hour between samples at most the max gap apart")
    bridged_s = models.FloatField(default=0.0, help_text="seconds of the hour inside gaps the counter bridged")
    bridged_gap_s = models.FloatField(default=0.0, help_text="length of the longest bridged gap in the hour")
    energy_covered_s = models.FloatField(help_text="observed seconds with a known energy, plus bridged_s")
    busy_s = models.FloatField()
    mean_power_w = models.FloatField(null=True)
    max_power_w = models.FloatField(null=True)
    mean_util_pct = models.FloatField(null=True)
    mean_mem_util_pct = models.FloatField(null=True)
    mean_temp_c = models.FloatField(null=True)
    max_temp_c = models.SmallIntegerField(null=True)
    max_mem_used_bytes = models.BigIntegerField(null=True)
    reset_count = models.IntegerField(help_text="energy counter restarts seen in the hour")
    computed_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["node", "gpu", "hour_start"], name="gpuhourusage_unique_node_gpu_hour")
        ]
        indexes = [
            # Fleet-wide reports and dashboards: every GPU's usage over a period. Per-node ranges
            # use the unique constraint's (node, gpu, hour_start) index, per-GPU ones the gpu index.
            models.Index(fields=["hour_start"], name="gpuhourusage_hour"),
        ]

    def __str__(self) -> str:
        return f"GPU {self.gpu_id} {self.hour_start:%Y-%m-%d %H:00}"


class EndpointHourUsage(NodeOwned):
    """One serving endpoint's tokens, requests, TTFT and inter-token latency histograms over one UTC hour.

    ``ttft_bucket_counts``: the hour's per-bucket (not cumulative) counts, one per
    bound in ``ttft_bucket_bounds_s`` then +Inf; ``None`` when the hour had no histogram.
    ``ttft_sum_s``: the hour's TTFTs summed (mean TTFT = ttft_sum_s / sum(ttft_bucket_counts)).
    ``itl_*``: the same for inter-token latency (time per output token), where the server exposes it.
    The LLM model of the row is ``endpoint.model_name``.
    """

    OWNER = "endpoint"
    node = models.ForeignKey(Node, on_delete=models.CASCADE, db_index=False, related_name="+")
    endpoint = models.ForeignKey(ServingEndpoint, on_delete=models.CASCADE, related_name="hour_usage")
    hour_start = models.DateTimeField(help_text="start of the UTC hour")
    prompt_tokens = models.BigIntegerField()
    generation_tokens = models.BigIntegerField()
    requests = models.BigIntegerField()
    cached_prompt_tokens = models.BigIntegerField(
        null=True, help_text="of prompt_tokens, served from the prefix cache; null: the server does not say"
    )
    ttft_bucket_bounds_s = models.JSONField(default=list)
    ttft_bucket_counts = models.JSONField(null=True)
    ttft_sum_s = models.FloatField(null=True, help_text="the hour's TTFTs summed, s; null: no histogram")
    itl_bucket_bounds_s = models.JSONField(default=list)
    itl_bucket_counts = models.JSONField(null=True, help_text="per bucket (not cumulative), then +Inf")
    itl_sum_s = models.FloatField(null=True, help_text="the hour's inter-token latencies summed, s")
    observed_s = models.FloatField(help_text="seconds of the hour between samples at most the max gap apart")
    bridged_s = models.FloatField(default=0.0, help_text="seconds of the hour inside gaps the counters bridged")
    bridged_gap_s = models.FloatField(default=0.0, help_text="length of the longest bridged gap in the hour")
    reset_count = models.IntegerField(help_text="server restarts seen in the hour")
    computed_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["node", "endpoint", "hour_start"], name="endpointhourusage_unique_node_endpoint_hour"
            )
        ]
        indexes = [
            # Token reports over a period across fleets (cost and CO2e per 1M tokens).
            models.Index(fields=["hour_start"], name="endpointhourusage_hour"),
        ]

    def __str__(self) -> str:
        return f"endpoint {self.endpoint_id} {self.hour_start:%Y-%m-%d %H:00}"


class NodeHourMark(models.Model):
    """A node-hour queued for work (a rollup, a ledger recomputation): one row per node and hour at most."""

    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="+")
    hour_start = models.DateTimeField()

    class Meta:
        abstract = True
        constraints = [models.UniqueConstraint(fields=["node", "hour_start"], name="%(class)s_unique")]

    def __str__(self) -> str:
        return f"{self.node_id} {self.hour_start:%Y-%m-%d %H:00}"


class RollupPending(NodeHourMark):
    """A node-hour whose raw samples changed and whose usage must be (re)computed.

    Ingest upserts ``marked_at``; the rollup deletes a row only if it was not
    marked again after the rollup claimed it.
    """

    marked_at = models.DateTimeField()


class UsageChanged(NodeHourMark):
    """A node-hour whose usage rows were (re)written; the accounting app consumes and deletes these."""

    changed_at = models.DateTimeField()


class ParkedHour(models.Model):
    """A node-hour whose computation at one stage (``common.stages``) failed, kept aside with its error until
    ``retry_at``.

    The hour stays in its queue (``RollupPending`` or the ledger's); the queue
    skips it until ``retry_at``, so it never holds back another node's hours.
    Each failure doubles the wait (``telemetry.parking``); a success deletes the row.
    The organization's members see it on the node page and in ``/api/v1/nodes/``.
    """

    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="parked_hours")
    hour_start = models.DateTimeField()
    stage = models.CharField(max_length=8, choices=NodeHourStage.choices)
    error = models.TextField(help_text="the failure, as the last attempt raised it")
    attempts = models.PositiveIntegerField(help_text="failed attempts in a row")
    failed_at = models.DateTimeField(help_text="when the last attempt failed")
    retry_at = models.DateTimeField(help_text="the queue skips the hour until then")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["node", "hour_start", "stage"], name="parkedhour_unique_node_hour_stage")
        ]

    def __str__(self) -> str:
        return f"{self.node_id} {self.hour_start:%Y-%m-%d %H:00} {self.stage} parked"


def base_url_validate(value: str) -> None:
    """A URL the API's paths are appended to (``common.http.validate_base_url``): no query string or fragment."""
    try:
        validate_base_url(value)
    except ValueError as error:
        raise ValidationError(str(error), code="base_url") from None


class PrometheusSource(models.Model):
    """An organization's existing Prometheus, read through its HTTP API by ``manage.py prometheus_import``.

    ``url`` is named by the organization's admins and read by the server: it follows the rule for such
    addresses (``common.outbound``), when saved and again at each request: public addresses only, unless the
    operator allows an internal one in ``OUTBOUND_ALLOWED_HOSTS``.

    ``bearer_token`` and ``basic_password`` are secrets, stored as given: whoever can read this row (the
    organization's admins, the database) can read the Prometheus. ``host_label`` names the label that carries
    a series' host (dcgm-exporter's ``Hostname``; ``hostname`` is accepted too), matched to the organization's
    node hostnames; ``selector`` is extra PromQL label matchers for the DCGM series (``job="dcgm"``), and
    ``serving_selector`` the same for the inference servers' series.
    """

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="prometheus_sources")
    name = models.SlugField(max_length=100)
    url = models.URLField(
        max_length=500, validators=[outbound_url_validate, base_url_validate],
        help_text="the Prometheus base URL, e.g. https://prometheus.example.com (no query string or fragment); "
        "an internal address only where the operator allows it in OUTBOUND_ALLOWED_HOSTS",
    )  # fmt: skip
    bearer_token = models.CharField(max_length=2000, blank=True, help_text="secret: stored as given")
    basic_username = models.CharField(max_length=200, blank=True)
    basic_password = models.CharField(max_length=500, blank=True, help_text="secret: stored as given")
    host_label = models.CharField(max_length=100, default="Hostname")
    selector = models.CharField(
        max_length=500, blank=True, help_text='extra label matchers for the DCGM series, e.g. job="dcgm"'
    )
    serving_selector = models.CharField(
        max_length=500, blank=True, default="",
        help_text='extra label matchers for the inference servers\' series (vLLM, SGLang, TGI), e.g. job="vllm"',
    )  # fmt: skip
    scrape_interval_s = models.PositiveIntegerField(default=15, help_text="the query step (s)")
    created_at = models.DateTimeField(auto_now_add=True)
    # Read continuously (telemetry.prometheus_sync) while enabled: progress and health, written by the import.
    enabled = models.BooleanField(default=True, help_text="read every minute by the beat task")
    imported_until = models.DateTimeField(null=True, blank=True, help_text="imported up to (excluded)")
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    last_success_at = models.DateTimeField(null=True, blank=True)
    failures = models.PositiveIntegerField(default=0, help_text="failed attempts in a row")
    next_attempt_at = models.DateTimeField(null=True, blank=True, help_text="after a failure: retried from then")
    last_error = models.TextField(blank=True, help_text="shown to every member: the status and a short reason")
    # What Prometheus answered with the last error (a query's parse error, say): whatever the URL reached
    # said it, so it is for the organization's admins alone (the admin), never on the members' pages.
    last_error_detail = models.TextField(blank=True, help_text="the last error answer's text, for admins")
    last_summary = models.TextField(blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["organization", "name"], name="prometheussource_unique_org_name")
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.url})"
