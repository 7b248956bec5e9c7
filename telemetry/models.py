"""Raw telemetry as collectors report it, and what the server knows about each collector.

Raw sample tables are keyed by their natural key, (GPU, timestamp) and
(endpoint, timestamp), so a re-sent batch stores nothing twice. On PostgreSQL
they are partitioned by day (see ``telemetry.partitions``); the migration
creates them by hand there, with the same columns Django expects.
"""

from __future__ import annotations

from django.db import models

from fleets.models import Gpu, Node
from telemetry.fields import Float32Field


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
    """An inference server's metrics endpoint on a node, and the GPUs it serves from."""

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
        constraints = [models.UniqueConstraint(fields=["node", "url"], name="servingendpoint_unique_node_url")]

    def __str__(self) -> str:
        return f"{self.kind} {self.url}"


class EndpointEpoch(models.Model):
    """One life of an inference server's counters, with its TTFT histogram's bucket bounds."""

    endpoint = models.ForeignKey(ServingEndpoint, on_delete=models.CASCADE, related_name="epochs")
    epoch = models.CharField(max_length=128)
    ttft_bucket_bounds_s = models.JSONField(default=list)
    first_seen_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["endpoint", "epoch"], name="endpointepoch_unique")]

    def __str__(self) -> str:
        return f"{self.endpoint_id}@{self.epoch}"


class GpuSample(models.Model):
    """One reading of one GPU. ``None`` means not measured, never zero.

    No foreign-key constraints: rows are loaded by COPY at high rate, and the
    ingest service has already resolved ``gpu_id`` and ``epoch_id`` itself.
    """

    pk = models.CompositePrimaryKey("gpu_id", "ts")
    ts = models.DateTimeField()
    gpu = models.ForeignKey(Gpu, on_delete=models.DO_NOTHING, db_constraint=False, db_index=False, related_name="+")
    energy_j = models.FloatField(null=True, help_text="NVML total-energy counter, cumulative, J")
    mem_used_bytes = models.BigIntegerField(null=True)
    epoch = models.ForeignKey(
        GpuEpoch, on_delete=models.DO_NOTHING, db_constraint=False, db_index=False, related_name="+"
    )
    power_w = Float32Field(null=True)
    util_pct = models.SmallIntegerField(null=True)
    mem_util_pct = models.SmallIntegerField(null=True)
    temp_c = models.SmallIntegerField(null=True)

    def __str__(self) -> str:
        return f"GPU {self.gpu_id} at {self.ts.isoformat()}"


class ServingSample(models.Model):
    """One scrape of an inference server's cumulative counters and TTFT histogram."""

    pk = models.CompositePrimaryKey("endpoint_id", "ts")
    ts = models.DateTimeField()
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

    def __str__(self) -> str:
        return f"endpoint {self.endpoint_id} at {self.ts.isoformat()}"


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

    def __str__(self) -> str:
        return f"collector of {self.node_id}, last report {self.last_report_at.isoformat()}"
