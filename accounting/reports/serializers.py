"""Serializers shared by the report views: query parameters in, report rows out. Declarations only.

Values arrive already rounded (``accounting.reports.output``); these fields pass
them through. Money is a decimal string in the row's ``currency``; other
quantities are numbers; ``null`` means unknown or undefined, never zero.
"""

from __future__ import annotations

from rest_framework import serializers


def money_field(help_text: str) -> serializers.DecimalField:
    """Money as a decimal string, already rounded to the currency's minor unit."""
    return serializers.DecimalField(max_digits=None, decimal_places=None, allow_null=True, help_text=help_text)


def number(help_text: str) -> serializers.FloatField:
    return serializers.FloatField(allow_null=True, help_text=help_text)


class PeriodInputSerializer(serializers.Serializer):
    period = serializers.CharField(
        required=False, help_text="a UTC calendar period: 2026, 2026-Q3 or 2026-11; or give start and end"
    )
    start = serializers.DateTimeField(required=False, help_text="ISO 8601 instant on a whole hour (UTC); inclusive")
    end = serializers.DateTimeField(required=False, help_text="ISO 8601 instant on a whole hour (UTC); exclusive")


class ScopeInputSerializer(PeriodInputSerializer):
    organization = serializers.ListField(
        child=serializers.CharField(max_length=200),
        required=False,
        help_text="organization id or slug, repeatable; default: every organization you belong to",
    )
    fleet = serializers.ListField(
        child=serializers.IntegerField(min_value=1), required=False, help_text="fleet id, repeatable"
    )


class UsageRowSerializer(serializers.Serializer):
    period_start = serializers.DateTimeField(help_text="bucket start (UTC), cut to the period asked for")
    period_end = serializers.DateTimeField(help_text="bucket end (UTC, exclusive), cut to the period asked for")
    group_key = serializers.CharField(
        allow_null=True, help_text="id, GPU model key or currency code; null: no grouping"
    )
    group_label = serializers.CharField(allow_null=True, help_text="name, hostname or GPU model name")
    currency = serializers.CharField(help_text="ISO 4217 code of every money field of the row")
    held_h = number("node-hours held")
    gpu_h = number("GPU-hours held")
    coverage = number("observed seconds / held seconds (0-1): how much of the held time was measured")
    it_kwh = number(
        "IT energy before PUE, kWh: at the node boundary (GPUs, CPUs, memory, fans, power supplies) for the hours "
        "the node's own meter measured (node_metered_kwh of it) or its host was modelled (node_modelled_kwh), at the "
        "GPU boundary for the others"
    )
    gpu_kwh = number("GPU-boundary energy, kWh: the GPU boards alone, as NVML's energy counter measures them")
    node_metered_kwh = number(
        "the part of it_kwh measured at the node boundary by the node's meter (IPMI DCMI or Redfish)"
    )
    node_modelled_kwh = number(
        "the part of it_kwh at the node boundary with the host modelled (labelled modelled): the GPUs measured, "
        "the host's idle + per-GPU power taken from the hardware profile"
    )
    facility_kwh = number("facility energy (IT x PUE), kWh")
    electricity_cost = money_field(
        "facility kWh x tariff; 0 when power is in the rent; null when no tariff was in force"
    )
    hardware_cost = money_field("rent, or capex amortized plus running cost")
    cost = money_field("electricity + hardware")
    hardware_unpriced_h = number("node-hours held with no price in force: their hardware cost is missing, not zero")
    electricity_unpriced_h = number("node-hours with no tariff in force: their electricity cost is missing")
    unpriced_hours = serializers.IntegerField(
        help_text="node-hours with telemetry but no price, asset or tariff in force (e.g. before the node's "
        "commissioning): unpriced, never free; the totals leave them out"
    )
    prompt_tokens = serializers.IntegerField()
    generation_tokens = serializers.IntegerField()
    tokens = serializers.IntegerField(help_text="prompt + generation")
    cost_per_1m_tokens = money_field("cost / tokens x 1e6; null without tokens")
    it_j_per_token = number(
        "it_kwh per token (input + output), J: the node boundary where metered; null without tokens"
    )
    gpu_j_per_token = number("GPU-boundary energy per token (input + output), J (the study's boundary)")
    facility_j_per_token = number("facility energy (it_kwh x PUE) per token, J; null without tokens")
    location_kgco2e = number("location-based operational kgCO2e; null when no hour had a grid intensity")
    market_kgco2e = number("market-based operational kgCO2e; null when no hour had a market factor")
    location_unknown_facility_kwh = number("facility kWh without a grid intensity (not in location_kgco2e)")
    market_unknown_facility_kwh = number("facility kWh without a market factor (not in market_kgco2e)")
    embodied_kgco2e_central = number("embodied kgCO2e amortized over the hours held, central estimate")
    embodied_kgco2e_low = number("embodied kgCO2e, low estimate")
    embodied_kgco2e_high = number("embodied kgCO2e, high estimate")
    embodied_unknown_gpu_h = number("GPU-hours of models without embodied data (not in embodied_*)")
    gco2e_per_1k_tokens = number("SCI: (location kgCO2e + embodied central) in g / tokens x 1000; null without tokens")
    idle_gpu_h = number("GPU-hours that served no tokens below the utilization threshold")
    idle_cost = money_field("the share of cost paid by idle GPUs")
    idle_share = number("idle GPU-hours / GPU-hours (0-1)")


class ComparisonRowSerializer(serializers.Serializer):
    fleet_id = serializers.IntegerField()
    fleet_name = serializers.CharField()
    gpu_model = serializers.CharField(
        allow_null=True, help_text='hardware profile key; "mixed" for a fleet of several models'
    )
    gpu_class = serializers.CharField(allow_null=True, help_text="enterprise or consumer")
    currency = serializers.CharField(allow_null=True)
    gpu_h = number("GPU-hours held")
    tokens = serializers.IntegerField(help_text="prompt + generation tokens on the ledger")
    serving_h = number("hours of endpoint-hours that served tokens (observed time)")
    tokens_per_s = number("tokens / seconds of endpoint-hours that served tokens")
    generation_tokens_per_s = number("generation tokens / seconds of endpoint-hours that served tokens")
    ttft_requests = serializers.IntegerField(allow_null=True, help_text="requests in the merged TTFT histogram")
    ttft_p50_ms = number("time to first token, median, from the merged histograms, ms")
    ttft_p99_ms = number("time to first token, 99th percentile, from the merged histograms, ms")
    cost = money_field("electricity + hardware")
    cost_per_1m_tokens = money_field("cost / tokens x 1e6")
    it_kwh = number(
        "IT energy before PUE, kWh: the node boundary for hours the node's meter measured, else the GPU boundary"
    )
    it_j_per_token = number(
        "it_kwh per token (input + output), J (see the usage report's gpu_j_per_token for the GPU boundary)"
    )
    gco2e_per_1m_tokens = number("(location-based operational + embodied central) gCO2e / tokens x 1e6")
    mean_util_pct = number("GPU utilization, mean weighted by observed time, %")
    idle_share = number("idle GPU-hours / GPU-hours (0-1)")
    unpriced_hours = serializers.IntegerField(
        help_text="node-hours with telemetry but no price, asset or tariff in force: its cost figures leave them out"
    )
    tokens_per_s_vs_baseline = number("ratio to the baseline fleet; null where undefined")
    generation_tokens_per_s_vs_baseline = number("ratio to the baseline fleet")
    ttft_p50_vs_baseline = number("ratio to the baseline fleet")
    ttft_p99_vs_baseline = number("ratio to the baseline fleet")
    cost_per_1m_tokens_vs_baseline = number("ratio to the baseline fleet; null across currencies")
    it_j_per_token_vs_baseline = number("ratio to the baseline fleet")
    gco2e_per_1m_tokens_vs_baseline = number("ratio to the baseline fleet")
    mean_util_vs_baseline = number("ratio to the baseline fleet")
    idle_share_vs_baseline = number("ratio to the baseline fleet")


class FactorSerializer(serializers.Serializer):
    scope = serializers.ChoiceField(choices=["location", "market"])
    # A field named like Field.source: DRF's metaclass takes it out of the class attributes.
    source = serializers.CharField(help_text="as recorded on the ledger lines")  # type: ignore[assignment]
    origin = serializers.ChoiceField(choices=["annual", "live", "upload", "market", "unknown"])
    licence = serializers.CharField(allow_blank=True)
    attribution = serializers.CharField(allow_blank=True)
    facility_kwh = number("facility kWh weighed with this source")
    held_h = number("node-hours weighed with this source")
