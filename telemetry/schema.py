"""OpenAPI description of the ingest wire format (documentation only: parsing is ``wire.batch_decode``)."""

from __future__ import annotations

from rest_framework import serializers

from telemetry.collector import wire


class CollectorInfoSchema(serializers.Serializer):
    version = serializers.CharField(max_length=32)
    hostname = serializers.CharField(max_length=253)
    dropped_batches = serializers.IntegerField(min_value=0, help_text="batches dropped by a full spool, cumulative")
    spool_bytes = serializers.IntegerField(min_value=0)
    sample_interval_s = serializers.FloatField(min_value=0)


class GpuRefSchema(serializers.Serializer):
    uuid = serializers.CharField(max_length=96, help_text="NVML UUID")
    index = serializers.IntegerField(min_value=0, max_value=255)
    name = serializers.CharField(max_length=128, help_text="NVML name, e.g. 'NVIDIA H100 80GB HBM3'")
    energy_counter_supported = serializers.BooleanField()
    epoch = serializers.CharField(max_length=128, help_text="one life of the counters: boot id and driver load")


class GpuSamplesSchema(serializers.Serializer):
    gpu = serializers.ListField(child=serializers.IntegerField(), help_text="index into `gpus`")
    ts = serializers.ListField(child=serializers.FloatField(), help_text="Unix seconds, UTC")
    power_w = serializers.ListField(
        child=serializers.FloatField(allow_null=True, min_value=0, max_value=wire.MAX_POWER_W),
        help_text="W; at most the board limit",
    )
    energy_j = serializers.ListField(
        child=serializers.FloatField(allow_null=True), help_text="NVML total-energy counter, cumulative, J"
    )
    util_pct = serializers.ListField(child=serializers.IntegerField(allow_null=True, min_value=0, max_value=100))
    mem_util_pct = serializers.ListField(child=serializers.IntegerField(allow_null=True, min_value=0, max_value=100))
    mem_used_bytes = serializers.ListField(child=serializers.IntegerField(allow_null=True, min_value=0))
    temp_c = serializers.ListField(
        child=serializers.IntegerField(allow_null=True, min_value=-40, max_value=wire.MAX_TEMP_C)
    )


class EndpointRefSchema(serializers.Serializer):
    url = serializers.CharField(max_length=512)
    kind = serializers.ChoiceField(choices=wire.ENDPOINT_KINDS)
    model = serializers.CharField(allow_blank=True, required=False)
    gpu_uuids = serializers.ListField(
        child=serializers.CharField(),
        help_text="the GPUs the endpoint serves from, each once (its counters' bounds scale with how many)",
    )
    epoch = serializers.CharField(max_length=128, help_text="one life of the server's counters")
    ttft_bucket_bounds_s = serializers.ListField(child=serializers.FloatField(), help_text="+Inf implicit")


def _counter() -> serializers.IntegerField:
    return serializers.IntegerField(allow_null=True, min_value=0, max_value=wire.MAX_COUNTER)


class ServingSamplesSchema(serializers.Serializer):
    endpoint = serializers.ListField(child=serializers.IntegerField(), help_text="index into `endpoints`")
    ts = serializers.ListField(child=serializers.FloatField())
    prompt_tokens = serializers.ListField(child=_counter())
    generation_tokens = serializers.ListField(child=_counter())
    requests = serializers.ListField(child=_counter())
    cached_prompt_tokens = serializers.ListField(
        child=_counter(),
        required=False,
        help_text="optional: prompt tokens served from the prefix cache (within prompt_tokens); absent: all null",
    )
    ttft_bucket_counts = serializers.ListField(
        child=serializers.ListField(child=serializers.IntegerField(min_value=0), allow_null=True),
        help_text="cumulative counts per bound, +Inf last",
    )
    ttft_sum_s = serializers.ListField(child=serializers.FloatField(allow_null=True))


class BatchSchema(serializers.Serializer):
    version = serializers.ChoiceField(
        choices=[wire.WIRE_VERSION], help_text=f"wire format version; this server speaks {wire.WIRE_VERSION} only"
    )
    batch_id = serializers.CharField(max_length=64)
    sent_at = serializers.FloatField(help_text="Unix seconds")
    collector = CollectorInfoSchema()
    gpus = GpuRefSchema(many=True)
    gpu_samples = GpuSamplesSchema()
    endpoints = EndpointRefSchema(many=True, required=False)
    serving_samples = ServingSamplesSchema(required=False)


class CountsSchema(serializers.Serializer):
    gpu_samples = serializers.IntegerField()
    serving_samples = serializers.IntegerField()
    node_meter = serializers.IntegerField(required=False, help_text="node meter readings; only when the batch has any")


class RejectedSchema(serializers.Serializer):
    kind = serializers.CharField()
    rows = serializers.IntegerField()
    reason = serializers.CharField()


class IngestAnswerSchema(serializers.Serializer):
    batch_id = serializers.CharField()
    stored = CountsSchema(help_text="rows newly stored")
    duplicates = CountsSchema(help_text="rows already stored earlier (a re-sent batch)")
    rejected = RejectedSchema(many=True)


class ErrorSchema(serializers.Serializer):
    error = serializers.CharField(help_text="what is wrong, and where")
