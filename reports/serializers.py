"""Serializers shared by the report views: query parameters in, report rows out. Declarations only.

Values arrive already rounded (``reports.display``); these fields pass
them through. Money is a decimal string in the row's ``currency``: amounts to
its minor unit, unit figures (cost per 1M tokens) to 4 significant digits; other
quantities are numbers (unit figures to 4 significant digits); ``null`` means
unknown or undefined, never zero.

Two kinds of per-token figure, never mixed up: ``*_output_token(s)`` divide by
output (generation) tokens only, as LLM price lists do; ``*_token(s)`` without
``output`` divide by all tokens, input (prompt) + output. Prompt tokens served
from a prefix cache are counted in the input tokens (vLLM counts them in
``prompt_tokens``).
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

from rest_framework import serializers

from common.query import QueryInputSerializer, organization_ref_field
from common.scope import ID_MAX
from reports.metrics import ALLOCATION_NOTE
from reports.sharing import IDLE_NOTES, IdleTreatment

# Ids are at most bigint: a larger one names nothing, and would overflow the query that looks it up.


def id_field(help_text: str, **kwargs: object) -> serializers.IntegerField:
    return serializers.IntegerField(min_value=1, max_value=ID_MAX, help_text=help_text, **kwargs)  # type: ignore[arg-type]


def money_field(help_text: str) -> serializers.DecimalField:
    """Money as a decimal string, already rounded to the currency's minor unit."""
    return serializers.DecimalField(max_digits=None, decimal_places=None, allow_null=True, help_text=help_text)


def number(help_text: str) -> serializers.FloatField:
    return serializers.FloatField(allow_null=True, help_text=help_text)


def money_per_unit_field(help_text: str) -> serializers.DecimalField:
    """A unit figure in money (cost per 1M tokens) as a decimal string of 4 significant digits (0.09820)."""
    return serializers.DecimalField(
        max_digits=None, decimal_places=None, allow_null=True, help_text=f"{help_text}; 4 significant digits"
    )


def per_unit_field(help_text: str) -> serializers.FloatField:
    """A unit figure (J per token, gCO2e per 1k tokens ...) as a number of 4 significant digits."""
    return serializers.FloatField(allow_null=True, help_text=f"{help_text}; 4 significant digits")


COMPLETE_THROUGH = (
    "the end (UTC) of the last complete hour: every node-hour of the organizations up to it has its final ledger "
    "line and usage (nothing left to roll up or price), so its figures change only if data or inputs for it "
    "change. Without a period, the report ends here"
)
INCLUDES_OPEN_HOURS = (
    "the period asks for hours after complete_through: the hour in progress (charged for the time held up to now, "
    "its future minutes not counted as missing) or hours still to be rolled up or priced; their figures may "
    "still change. The comparison reads final node-hours only"
)


def complete_through_field() -> serializers.DateTimeField:
    return serializers.DateTimeField(help_text=COMPLETE_THROUGH)


def includes_open_hours_field() -> serializers.BooleanField:
    return serializers.BooleanField(help_text=INCLUDES_OPEN_HOURS)


IDLE_TREATMENT = "; ".join(f"{treatment.value}: {note}" for treatment, note in IDLE_NOTES.items())


def idle_treatment_field(help_text: str = IDLE_TREATMENT, **kwargs: Any) -> serializers.ChoiceField:
    """How the node-hours without output tokens are treated per LLM model (``reports.sharing.IdleTreatment``)."""
    return serializers.ChoiceField(choices=[t.value for t in IdleTreatment], help_text=help_text, **kwargs)


# The rule of every carbon figure per token (``accounting.ledger.totals.carbon_per_token_complete``), said once.
WITHHELD_CARBON_RULE = (
    "null without tokens, and withheld (null; empty in CSV) while any of its facility kWh has no grid intensity "
    "(location_unknown_facility_kwh above 0) or any GPU-hour no embodied figure (embodied_unknown_gpu_h above 0), "
    "as SCI is (never the known carbon over every token)"
)
# The rule in an operation's description (the OpenAPI schema's).
WITHHELD_CARBON_SENTENCE = (
    "Carbon per token (`gco2e_per_*`, SCI, a load band's) follows one rule, SCI's: null without tokens, and "
    "withheld (null; empty in CSV) while any of its facility kWh has no grid intensity or, where embodied carbon "
    "is part of it, any GPU-hour is of a model without an embodied figure, never the known carbon over every "
    "token nor an estimate; what is unknown is beside it (`location_unknown_facility_kwh`, "
    "`embodied_unknown_gpu_h`, and where a row has it `carbon_per_token_note`). Totals of gCO2e keep the known "
    "part. "
)
WITHHELD_CARBON_NOTE = (
    "why the row's carbon figures per token are withheld, as SCI's reason says it (the kWh without a grid "
    "intensity, the GPU-hours without an embodied figure); null where they are stated"
)

# One sentence per per-token figure, by field name (the README's "Per-token figures" says the same).
# "Output tokens" are generation tokens only; "tokens" are input (prompt) + output.
PER_TOKEN_FIGURES: dict[str, str] = {
    "cost_per_1m_output_tokens": "cost / output (generation) tokens x 1e6, in the row's currency",
    "cost_per_1m_tokens": "cost / (input + output) tokens x 1e6, in the row's currency",
    "it_j_per_output_token": "IT energy (node boundary where metered or the host modelled, else the GPU boards; "
    "before PUE) in J / output (generation) tokens",
    "it_j_per_token": "IT energy (node boundary where metered or the host modelled, else the GPU boards; "
    "before PUE) in J / (input + output) tokens",
    "gpu_j_per_output_token": "GPU-boundary energy (the boards, as NVML measures them: what the H100 vs RTX 4090 "
    "study measured) in J / output (generation) tokens",
    "gpu_j_per_token": "GPU-boundary energy (the boards, as NVML measures them) in J / (input + output) tokens",
    "facility_j_per_output_token": "facility energy (IT x PUE) in J / output (generation) tokens",
    "facility_j_per_token": "facility energy (IT x PUE) in J / (input + output) tokens",
    "gco2e_per_1k_output_tokens": "(location-based + embodied central) gCO2e / output (generation) tokens x 1000; "
    + WITHHELD_CARBON_RULE,
    "gco2e_per_1k_tokens": "SCI: (location-based + embodied central) gCO2e / (input + output) tokens x 1000; "
    + WITHHELD_CARBON_RULE,
    "gco2e_per_1m_output_tokens": "(location-based + embodied central) gCO2e / output (generation) tokens x 1e6; "
    + WITHHELD_CARBON_RULE,
    "gco2e_per_1m_tokens": "(location-based + embodied central) gCO2e / (input + output) tokens x 1e6; "
    + WITHHELD_CARBON_RULE,
    "generation_tokens_per_s": "output (generation) tokens / seconds of endpoint-hours that served tokens",
    "tokens_per_s": "(input + output) tokens / seconds of endpoint-hours that served tokens",
}


# Prompt tokens served from the prefix cache: said the same way wherever a report carries them.
CACHED_PROMPT_TOKENS = (
    "input tokens served from the prefix cache (vLLM prefix_cache_hits, SGLang cached_tokens), summed over the "
    "endpoint-hours whose server exposes the counter; counted within prompt_tokens and so in every per-token figure "
    "over input + output tokens (cost_per_1m_tokens, it_j_per_token, gco2e_per_1k_tokens ...), in none per output "
    "token; null where no endpoint exposes it (TGI)"
)
# IT energy and its boundary, said the same way by every report.
IT_KWH = (
    "IT energy before PUE, kWh: at the node boundary (GPUs, CPUs, memory, fans, power supplies) for the hours "
    "the node's own meter measured (node_metered_kwh of it, method node_meter) or its host was modelled from the "
    "hardware profile (node_modelled_kwh, method modelled, never measured), at the GPU boundary (the boards alone, "
    "method gpu_sum) for the others"
)
PREFIX_CACHE_HIT_SHARE = "cached_prompt_tokens / prompt tokens of the endpoints that expose the counter (0-1)"


class PlainRowSerializer(serializers.Serializer):
    """A row of a long list (a report's thousands of zone-hours): each declared field's own
    ``to_representation``, without ``Serializer.to_representation``'s per-field machinery (the attribute
    looked up by source, ``SkipField``), which cost more than the values' formatting. A row is a mapping
    keyed by field name with every field in it, as ``reports.display`` builds them; ``None`` stays ``None``.
    """

    def to_representation(self, instance: Any) -> dict[str, Any]:
        return {
            name: None if (value := instance[name]) is None else convert(value) for name, convert in self._converters
        }

    @cached_property
    def _converters(self) -> list[tuple[str, Any]]:
        fields = list(self._readable_fields)
        if any(field.source != field.field_name for field in fields):
            raise TypeError(f"{type(self).__name__}: a plain row's fields are read by their own name")
        for field in fields:
            if isinstance(field, serializers.DateTimeField):
                _zone_pinned(field)
        return [(str(field.field_name), field.to_representation) for field in fields]


def _zone_pinned(field: serializers.DateTimeField) -> None:
    """The zone DRF would look up for every value (the current one, constant while one answer is written), taken
    once: ``enforce_timezone`` reads the field's ``timezone`` where it has one."""
    if not hasattr(field, "timezone") and (zone := field.default_timezone()) is not None:
        field.timezone = zone


class TraceSerializer(serializers.Serializer):
    """Where a row's figures came from, as shares (0-1) of its energy."""

    energy_counter_share = number("share of GPU energy measured by the NVML energy counter")
    energy_integrated_share = number("share of GPU energy integrated from power samples (counter unsupported)")
    node_meter_energy_share = number("share of IT energy at the node boundary, measured by the node's meter")
    node_modelled_energy_share = number(
        "share of IT energy at the node boundary with the host modelled from the hardware profile (labelled "
        "modelled, never measured); the rest beyond the metered share is at the GPU boundary (GPU boards alone)"
    )
    location_gco2e_per_kwh = per_unit_field(
        "grid intensity the location-based carbon used, g/kWh, energy-weighted (one node-hour: that hour's value)"
    )
    grid_live_energy_share = number("share of facility energy weighed with a live provider's hourly value")
    grid_upload_energy_share = number("share weighed with the organization's uploaded hourly values")
    grid_annual_energy_share = number("share weighed with the annual average standing in for a missing hour")
    grid_simulated_energy_share = number("share weighed with simulated hourly values (demo)")
    grid_unknown_energy_share = number("share with no grid intensity (not in location_kgco2e)")
    location_sources = serializers.CharField(
        allow_null=True,
        help_text="each grid intensity source with its share (0-1, 4 significant digits) of the row's facility kWh, "
        '"source=share; ..." largest first; null when no kWh had an intensity',
    )
    embodied_sources = serializers.CharField(
        allow_null=True,
        help_text="sources of the embodied carbon factors (the card's and the host share's) of every GPU model whose "
        "lines in the row carry embodied carbon, each once; null when none does",
    )

    def get_fields(self) -> dict[str, serializers.Field]:
        # The trace after the row's own figures (in the JSON and the CSV's columns).
        fields = dict(super().get_fields())
        trace = {name: fields.pop(name) for name in TraceSerializer._declared_fields}
        return {**fields, **trace}


class PeriodInputSerializer(QueryInputSerializer):
    period = serializers.CharField(
        required=False,
        max_length=7,
        help_text=(
            "a UTC calendar period, 1970 to 2999: 2026, 2026-Q3 or 2026-11. Excludes start and end; "
            "without any of them, the last 7 days."
        ),
    )
    start = serializers.DateTimeField(
        required=False,
        help_text="ISO 8601 instant on a whole hour, 1970 or later; inclusive. With end; excludes period.",
    )
    end = serializers.DateTimeField(
        required=False,
        help_text="ISO 8601 instant on a whole hour, up to 3000-01-01; exclusive. With start; excludes period.",
    )


class OrganizationsInputSerializer(QueryInputSerializer):
    """The organizations and fleets a report is asked of, whatever its period."""

    organization = serializers.ListField(
        child=organization_ref_field("organization id or slug"),
        required=False,
        help_text="organization id or slug, repeatable; default: every organization you belong to",
    )
    fleet = serializers.ListField(child=id_field("fleet id"), required=False, help_text="fleet id, repeatable")


class ScopeInputSerializer(PeriodInputSerializer, OrganizationsInputSerializer):
    """A period (or the last 7 days), then the organizations and fleets asked of."""


# A report answer's period, as its figures' first fields: what PeriodInputSerializer asked for, resolved.
# (A comment, not a docstring: the schema would take it as each subclass's description.)
class PeriodOutputSerializer(serializers.Serializer):
    start = serializers.DateTimeField()
    end = serializers.DateTimeField()


class TaxRowSerializer(serializers.Serializer):
    """A row's taxes: the last columns of the usage report's CSV (appended after the trace, so none moves)."""

    energy_tax_cost = money_field("facility kWh x the site's energy tax per kWh: a cost, in cost")
    vat_amount = money_field("VAT on the net rent, running cost and electricity (not on depreciation)")
    vat_recoverable = money_field("of vat_amount, input VAT reclaimed: a receivable, not in cost")
    vat_cost = money_field("of vat_amount, the VAT not recoverable: in cost")
    vat_unknown_h = number(
        "node-hours priced gross (VAT included) with no site tax in force: kept as priced, VAT not taken out"
    )


class UsageRowSerializer(PlainRowSerializer, TraceSerializer, TaxRowSerializer):
    period_start = serializers.DateTimeField(help_text="bucket start (UTC), cut to the period asked for")
    period_end = serializers.DateTimeField(help_text="bucket end (UTC, exclusive), cut to the period asked for")
    group_key = serializers.CharField(
        allow_null=True,
        help_text="id, GPU model key, currency code or LLM model; null: no grouping, or (group_by=llm_model) the "
        "node-hours without output tokens, attributed to no LLM model",
    )
    group_label = serializers.CharField(allow_null=True, help_text="name, hostname or GPU model name")
    currency = serializers.CharField(help_text="ISO 4217 code of every money field of the row")
    held_h = number("node-hours held")
    gpu_h = number("GPU-hours held")
    coverage = number("observed seconds / held seconds (0-1): how much of the held time was measured")
    it_kwh = number(IT_KWH)
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
    hardware_cost = money_field("rent, or capex amortized plus running cost: rent_cost + depreciation_cost + opex_cost")
    rent_cost = money_field("rent of rented nodes (cash)")
    depreciation_cost = money_field(
        "depreciation of owned nodes by the book, with the loss on disposal in the disposal hour (non-cash)"
    )
    opex_cost = money_field("other running cost of owned nodes")
    cost = money_field("electricity + hardware + energy tax + non-recoverable VAT")
    hardware_unpriced_h = number("node-hours held with no price in force: their hardware cost is missing, not zero")
    electricity_unpriced_h = number("node-hours with no tariff in force: their electricity cost is missing")
    unpriced_hours = serializers.IntegerField(
        help_text="node-hours with telemetry but no price, asset or tariff in force (e.g. before the node's "
        "commissioning): unpriced, never free; the totals leave them out"
    )
    cost_per_gpu_h = money_per_unit_field("cost / GPU-hours held, in the row's currency")
    electricity_cost_per_kwh = money_per_unit_field(
        "electricity cost / facility kWh that had a tariff (0 when power is in the rent)"
    )
    prompt_tokens = serializers.IntegerField(help_text="input tokens, prefix-cache hits included")
    generation_tokens = serializers.IntegerField(help_text="output tokens")
    tokens = serializers.IntegerField(help_text="input + output (prompt + generation)")
    cached_prompt_tokens = serializers.IntegerField(allow_null=True, help_text=CACHED_PROMPT_TOKENS)
    prefix_cache_hit_share = number(PREFIX_CACHE_HIT_SHARE)
    cost_per_1m_output_tokens = money_per_unit_field(PER_TOKEN_FIGURES["cost_per_1m_output_tokens"])
    cost_per_1m_tokens = money_per_unit_field(PER_TOKEN_FIGURES["cost_per_1m_tokens"])
    it_j_per_output_token = per_unit_field(PER_TOKEN_FIGURES["it_j_per_output_token"])
    it_j_per_token = per_unit_field(PER_TOKEN_FIGURES["it_j_per_token"])
    gpu_j_per_output_token = per_unit_field(PER_TOKEN_FIGURES["gpu_j_per_output_token"])
    gpu_j_per_token = per_unit_field(PER_TOKEN_FIGURES["gpu_j_per_token"])
    facility_j_per_output_token = per_unit_field(PER_TOKEN_FIGURES["facility_j_per_output_token"])
    facility_j_per_token = per_unit_field(PER_TOKEN_FIGURES["facility_j_per_token"])
    location_kgco2e = number("location-based operational kgCO2e; null when no hour had a grid intensity")
    market_kgco2e = number("market-based operational kgCO2e; null when no hour had a market factor")
    location_unknown_facility_kwh = number(
        "facility kWh without a grid intensity (not in location_kgco2e); while above 0, gco2e_per_1k_tokens and "
        "gco2e_per_1k_output_tokens are withheld (null)"
    )
    market_unknown_facility_kwh = number("facility kWh without a market factor (not in market_kgco2e)")
    embodied_kgco2e_central = number("embodied kgCO2e amortized over the hours held, central estimate")
    embodied_kgco2e_low = number("embodied kgCO2e, low estimate")
    embodied_kgco2e_high = number("embodied kgCO2e, high estimate")
    embodied_unknown_gpu_h = number(
        "GPU-hours of models without embodied data (not in embodied_*); while above 0, gco2e_per_1k_tokens and "
        "gco2e_per_1k_output_tokens are withheld (null)"
    )
    gco2e_per_1k_output_tokens = per_unit_field(PER_TOKEN_FIGURES["gco2e_per_1k_output_tokens"])
    gco2e_per_1k_tokens = per_unit_field(PER_TOKEN_FIGURES["gco2e_per_1k_tokens"])
    idle_gpu_h = number("GPU-hours that served no tokens below the utilization threshold")
    idle_cost = money_field("the share of cost paid by idle GPUs")
    idle_facility_kwh = number("facility kWh of idle GPUs (their own and their share of the host's), beside idle_cost")
    idle_share = number("idle GPU-hours / GPU-hours (0-1)")
    hardware_unconverted_h = number(
        "node-hours whose price is in another currency with no exchange rate for its month: their hardware cost "
        "is not in cost (listed unconverted in the report's reporting block), never zero"
    )

    def get_fields(self) -> dict[str, serializers.Field]:
        # The taxes last, after the trace: the columns the CSV had keep their places.
        fields = dict(super().get_fields())
        taxes = {name: fields.pop(name) for name in TaxRowSerializer._declared_fields}
        return {**fields, **taxes}


def _ttft_ms(label: str) -> serializers.FloatField:
    return number(
        f"time to first token, {label}, ms: interpolated within its histogram bucket as Prometheus's "
        "histogram_quantile does; a lower bound when ttft_basis is lower_bound"
    )


def _bucket_low_ms(label: str) -> serializers.FloatField:
    return number(f"lower bound of the histogram bucket the {label} falls in, ms")


def _bucket_high_ms(label: str) -> serializers.FloatField:
    return number(f"upper bound of the histogram bucket the {label} falls in, ms; null for the +Inf bucket")


def _itl_ms(label: str) -> serializers.FloatField:
    return number(
        f"inter-token latency (time per output token), {label}, ms: interpolated within its histogram bucket; "
        "null where no endpoint exposes the histogram (itl_note says so)"
    )


WHILE_SERVING_NOTE = (
    "while serving: over the observed seconds of endpoint-hours that served at least one token; per GPU: over "
    "those seconds times the GPUs each endpoint serves from (inventory)"
)


# A load band's carbon, said the same way by the comparison's bands (``by_load``) and the advisor's load curves.
BAND_OPERATIONAL_PER_1M_OUTPUT_TOKENS = (
    "operational (location-based) gCO2e / output tokens x 1e6; null without output tokens, and withheld (null) "
    "while any of the band's facility kWh has no grid intensity (its intensity coverage below 1): never the "
    "known part over every token, nor scaled up by the coverage"
)
BAND_EMBODIED_PER_1M_OUTPUT_TOKENS = (
    "embodied gCO2e (central) / output tokens x 1e6; withheld (null) while any of the band's GPU-hours is of a "
    "model without an embodied figure (embodied_unknown_gpu_h > 0)"
)
BAND_CARBON_PER_1M_OUTPUT_TOKENS = (
    "(location-based + embodied central) gCO2e / output tokens x 1e6; withheld (null) where either part is: the "
    "comparison row's rule, so a row and its bands give one answer"
)
BAND_INTENSITY_COVERAGE = "share (0-1) of the band's facility kWh with a known grid intensity"
BAND_EMBODIED_UNKNOWN = "GPU-hours of the band of models without an embodied figure (not in its embodied carbon)"
BAND_CARBON_NOTE = (
    "why the band's carbon per output token is withheld (kWh without a grid intensity, GPU-hours without an "
    "embodied figure); null where it is stated"
)


class LoadBandSerializer(serializers.Serializer):
    """One load band of a comparison row: the row's fleet-hours whose load fell in the band."""

    band_low_rps_per_gpu = serializers.FloatField(help_text="lower edge of the band, requests/s per GPU (included)")
    band_high_rps_per_gpu = number("upper edge of the band, requests/s per GPU (excluded); null: open-ended")
    hours = serializers.IntegerField(
        help_text="fleet-hours in the band, counted per LLM model (a fleet serving two models in an hour counts it "
        "once per model)"
    )
    rps_per_gpu = per_unit_field("mean load of the band's hours: requests / GPU-seconds")
    max_rps_per_gpu = per_unit_field("the highest hourly load measured in the band")
    output_tokens_per_s_per_gpu = per_unit_field("output (generation) tokens / GPU-seconds")
    requests = serializers.IntegerField()
    generation_tokens = serializers.IntegerField()
    gpu_h = number("GPU-hours (a node-hour's shared among its LLM models by output tokens)")
    ttft_basis = serializers.CharField(allow_null=True, help_text="measured, lower_bound (TGI only) or null")
    ttft_p50_ms = _ttft_ms("median")
    ttft_p50_bucket_low_ms = _bucket_low_ms("median")
    ttft_p50_bucket_high_ms = _bucket_high_ms("median")
    ttft_p99_ms = _ttft_ms("99th percentile")
    ttft_p99_bucket_low_ms = _bucket_low_ms("99th percentile")
    ttft_p99_bucket_high_ms = _bucket_high_ms("99th percentile")
    cost_per_1m_output_tokens = money_per_unit_field(PER_TOKEN_FIGURES["cost_per_1m_output_tokens"])
    it_j_per_output_token = per_unit_field(PER_TOKEN_FIGURES["it_j_per_output_token"])
    gco2e_per_1m_output_tokens = per_unit_field(BAND_CARBON_PER_1M_OUTPUT_TOKENS)
    location_gco2e_per_1m_output_tokens = per_unit_field(BAND_OPERATIONAL_PER_1M_OUTPUT_TOKENS)
    location_intensity_coverage = number(BAND_INTENSITY_COVERAGE)
    embodied_gco2e_per_1m_output_tokens = per_unit_field(BAND_EMBODIED_PER_1M_OUTPUT_TOKENS)
    embodied_unknown_gpu_h = number(BAND_EMBODIED_UNKNOWN)
    carbon_per_token_note = serializers.CharField(allow_null=True, help_text=BAND_CARBON_NOTE)
    output_tokens_per_s_per_gpu_vs_baseline = number("ratio to the baseline fleet's band of the same range")
    ttft_p99_vs_baseline = number("ratio to the baseline fleet's band of the same range")
    cost_per_1m_output_tokens_vs_baseline = number(
        "ratio to the baseline fleet's band of the same range; null across currencies"
    )
    it_j_per_output_token_vs_baseline = number("ratio to the baseline fleet's band of the same range")
    gco2e_per_1m_output_tokens_vs_baseline = number("ratio to the baseline fleet's band of the same range")


class ComparisonRowSerializer(TraceSerializer):
    fleet_id = serializers.IntegerField()
    fleet_name = serializers.CharField()
    gpu_model = serializers.CharField(
        allow_null=True, help_text='hardware profile key; "mixed" for a fleet of several models'
    )
    gpu_class = serializers.CharField(allow_null=True, help_text="enterprise or consumer")
    llm_model = serializers.CharField(
        allow_null=True,
        help_text="the LLM model served (the endpoint's model name; 'unnamed' when it gave none), by=llm_model "
        "only; null on rows not split by LLM model and on a GPU model's node-hours without output tokens",
    )
    ledger_allocation = serializers.ChoiceField(
        choices=["whole", "output_token_share", "no_output_tokens"],
        help_text=f"whole: the row's node-hours in full; otherwise {ALLOCATION_NOTE}: output_token_share on an "
        "LLM model's row, no_output_tokens on the fleet x GPU model's idle row",
    )
    currency = serializers.CharField(allow_null=True)
    baseline_basis = serializers.ChoiceField(
        choices=["baseline_fleet", "same_llm_model", "no_baseline_row"],
        allow_null=True,
        help_text="what the row's *_vs_baseline ratios divide by: baseline_fleet, the baseline fleet as a whole "
        "(rows per fleet or GPU model); same_llm_model, by=llm_model, the baseline fleet's rows of the same LLM "
        "model added up (any GPU model; the idle row: its idle rows); no_baseline_row, by=llm_model, the baseline "
        "fleet has no row of that LLM model, so every ratio is null. Null without a baseline",
    )
    cost_per_1m_output_tokens = money_per_unit_field(PER_TOKEN_FIGURES["cost_per_1m_output_tokens"])
    it_j_per_output_token = per_unit_field(PER_TOKEN_FIGURES["it_j_per_output_token"])
    it_j_per_1m_output_tokens = per_unit_field("the same, in J per 1M output (generation) tokens")
    gco2e_per_1m_output_tokens = per_unit_field(PER_TOKEN_FIGURES["gco2e_per_1m_output_tokens"])
    location_gco2e_per_1m_output_tokens = per_unit_field(
        "operational (location-based) gCO2e / output (generation) tokens x 1e6; null without output tokens, and "
        "withheld (null) while any of the row's facility kWh has no grid intensity (location_unknown_facility_kwh "
        "> 0)"
    )
    embodied_gco2e_per_1m_output_tokens = per_unit_field(
        "embodied gCO2e (central estimate, amortized over the hours held) / output tokens x 1e6; withheld (null) "
        "while any GPU-hour is of a model without an embodied figure (embodied_unknown_gpu_h > 0)"
    )
    embodied_gco2e_per_1m_output_tokens_low = per_unit_field("the same, low estimate")
    embodied_gco2e_per_1m_output_tokens_high = per_unit_field("the same, high estimate")
    location_unknown_facility_kwh = number(
        "facility kWh without a grid intensity: not in location_kgco2e, and while above 0 the carbon figures per "
        "token are withheld"
    )
    embodied_unknown_gpu_h = number(
        "GPU-hours of models without an embodied figure: not in embodied_*, and while above 0 the carbon figures "
        "per token with embodied carbon in them are withheld"
    )
    carbon_per_token_note = serializers.CharField(allow_null=True, help_text=WITHHELD_CARBON_NOTE)
    gpu_h = number("GPU-hours held")
    prompt_tokens = serializers.IntegerField(help_text="input tokens on the ledger, prefix-cache hits included")
    generation_tokens = serializers.IntegerField(help_text="output tokens on the ledger")
    tokens = serializers.IntegerField(help_text="input + output (prompt + generation) tokens on the ledger")
    requests = serializers.IntegerField(help_text="requests of endpoint-hours that served tokens")
    serving_h = number("hours of endpoint-hours that served tokens (observed time)")
    cached_prompt_tokens = serializers.IntegerField(
        allow_null=True,
        help_text="input tokens served from the prefix cache (vLLM prefix_cache_hits, SGLang cached_tokens), "
        "counted within prompt_tokens and so in every per-token figure that divides by input + output tokens; "
        "null where no endpoint exposes the counter (TGI)",
    )
    prefix_cache_hit_share = number("cached_prompt_tokens / prompt tokens of the endpoints that expose it (0-1)")
    generation_tokens_per_s = per_unit_field(PER_TOKEN_FIGURES["generation_tokens_per_s"])
    generation_tokens_per_gpu_s = per_unit_field(f"output tokens per second per GPU ({WHILE_SERVING_NOTE})")
    requests_per_s = per_unit_field(f"requests per second ({WHILE_SERVING_NOTE})")
    requests_per_gpu_s = per_unit_field("requests per second per GPU, while serving")
    tokens_per_s = per_unit_field(PER_TOKEN_FIGURES["tokens_per_s"])
    ttft_mean_ms = number(
        "mean time to first token, ms: the histograms' sum / their count, over hours whose server gave the sum; "
        "a lower bound when ttft_basis is lower_bound"
    )
    ttft_basis = serializers.ChoiceField(
        choices=["measured", "lower_bound"],
        allow_null=True,
        help_text="measured: vLLM/SGLang TTFT histograms; lower_bound: only TGI endpoints, whose queue-duration "
        "histogram leaves out the prefill (never merged with measured TTFT)",
    )
    ttft_requests = serializers.IntegerField(allow_null=True, help_text="requests in the TTFT histograms used")
    ttft_lower_bound_requests_left_out = serializers.IntegerField(
        help_text="requests of TGI endpoints left out of the TTFT figures because measured TTFT was available"
    )
    ttft_p50_ms = _ttft_ms("median")
    ttft_p50_bucket_low_ms = _bucket_low_ms("median")
    ttft_p50_bucket_high_ms = _bucket_high_ms("median")
    ttft_p90_ms = _ttft_ms("90th percentile")
    ttft_p90_bucket_low_ms = _bucket_low_ms("90th percentile")
    ttft_p90_bucket_high_ms = _bucket_high_ms("90th percentile")
    ttft_p99_ms = _ttft_ms("99th percentile")
    ttft_p99_bucket_low_ms = _bucket_low_ms("99th percentile")
    ttft_p99_bucket_high_ms = _bucket_high_ms("99th percentile")
    goodput_ttft_target_ms = number("the TTFT target goodput counts against: the organization's ledger setting")
    goodput_share = number(
        "goodput: share of requests (0-1) whose TTFT is at or below the target, interpolated within the histogram "
        "bucket holding the target; on the TTFT basis (with lower_bound, an upper bound of goodput)"
    )
    goodput_share_certain = number(
        "exact lower bound: requests in buckets wholly within the target (0-1); 0 on a lower_bound TTFT basis "
        "(a queue time within the target proves no TTFT is)"
    )
    goodput_share_possible = number("exact upper bound: those plus the bucket holding the target (0-1)")
    goodput_bucket_low_ms = number("lower bound of the bucket holding the target, ms; null when it is on a bound")
    goodput_bucket_high_ms = number("upper bound of that bucket, ms; null for the +Inf bucket or on a bound")
    itl_tokens = serializers.IntegerField(
        allow_null=True, help_text="observations (output tokens after the first) in the inter-token latency histograms"
    )
    itl_note = serializers.CharField(allow_null=True, help_text="why the inter-token latency figures are null")
    itl_mean_ms = _itl_ms("mean (histogram sum / count)")
    itl_p50_ms = _itl_ms("median")
    itl_p50_bucket_low_ms = _bucket_low_ms("inter-token latency median")
    itl_p50_bucket_high_ms = _bucket_high_ms("inter-token latency median")
    itl_p99_ms = _itl_ms("99th percentile")
    itl_p99_bucket_low_ms = _bucket_low_ms("inter-token latency 99th percentile")
    itl_p99_bucket_high_ms = _bucket_high_ms("inter-token latency 99th percentile")
    cost = money_field("electricity + hardware + energy tax + non-recoverable VAT")
    cost_per_1m_tokens = money_per_unit_field(PER_TOKEN_FIGURES["cost_per_1m_tokens"])
    it_kwh = number(IT_KWH)
    it_j_per_token = per_unit_field(PER_TOKEN_FIGURES["it_j_per_token"])
    gpu_kwh = number("GPU-boundary energy, kWh: the GPU boards alone, as NVML's energy counter measures them")
    gpu_j_per_output_token = per_unit_field(PER_TOKEN_FIGURES["gpu_j_per_output_token"])
    gpu_j_per_token = per_unit_field(PER_TOKEN_FIGURES["gpu_j_per_token"])
    gco2e_per_1m_tokens = per_unit_field(PER_TOKEN_FIGURES["gco2e_per_1m_tokens"])
    location_kgco2e = number("location-based operational kgCO2e; null when no hour had a grid intensity")
    embodied_kgco2e_central = number("embodied kgCO2e amortized over the hours held, central estimate")
    mean_util_pct = number("GPU utilization, mean weighted by observed time, %")
    idle_gpu_h = number("GPU-hours that served no tokens below the utilization threshold")
    idle_cost = money_field("the share of cost paid by idle GPUs")
    idle_share = number("idle GPU-hours / GPU-hours (0-1)")
    unpriced_hours = serializers.IntegerField(
        help_text="node-hours with telemetry but no price, asset or tariff in force: its cost figures leave them out "
        "(per LLM model: the node-hours the model had a share of)"
    )
    generation_tokens_per_s_vs_baseline = number("ratio to the baseline fleet; null where undefined")
    tokens_per_s_vs_baseline = number("ratio to the baseline fleet; null where undefined")
    ttft_mean_vs_baseline = number("ratio to the baseline fleet")
    ttft_p50_vs_baseline = number("ratio to the baseline fleet")
    ttft_p90_vs_baseline = number("ratio to the baseline fleet")
    ttft_p99_vs_baseline = number("ratio to the baseline fleet")
    cost_per_1m_output_tokens_vs_baseline = number("ratio to the baseline fleet; null across currencies")
    cost_per_1m_tokens_vs_baseline = number("ratio to the baseline fleet; null across currencies")
    it_j_per_output_token_vs_baseline = number("ratio to the baseline fleet")
    it_j_per_token_vs_baseline = number("ratio to the baseline fleet")
    gco2e_per_1m_output_tokens_vs_baseline = number("ratio to the baseline fleet")
    location_gco2e_per_1m_output_tokens_vs_baseline = number("ratio to the baseline fleet")
    embodied_gco2e_per_1m_output_tokens_vs_baseline = number("ratio to the baseline fleet (central estimates)")
    gco2e_per_1m_tokens_vs_baseline = number("ratio to the baseline fleet")
    mean_util_vs_baseline = number("ratio to the baseline fleet")
    idle_share_vs_baseline = number("ratio to the baseline fleet")
    by_load = LoadBandSerializer(
        many=True,
        allow_null=True,
        required=False,
        help_text="with by_load=true: the row's figures per load band (requests/s per GPU), ascending; "
        "null otherwise (and in CSV, where each band is a line of its own)",
    )


class FactorSerializer(serializers.Serializer):
    scope = serializers.ChoiceField(choices=["location", "market"])
    # A field named like Field.source: DRF's metaclass takes it out of the class attributes.
    source = serializers.CharField(help_text="as recorded on the ledger lines")  # type: ignore[assignment]
    origin = serializers.ChoiceField(choices=["annual", "live", "upload", "market", "simulated", "unknown"])
    licence = serializers.CharField(allow_blank=True)
    attribution = serializers.CharField(allow_blank=True)
    facility_kwh = number("facility kWh weighed with this source")
    held_h = number("node-hours weighed with this source")


class GridHourSerializer(PlainRowSerializer):
    zone = serializers.CharField()
    hour_start = serializers.DateTimeField(help_text="UTC")
    gco2e_per_kwh = per_unit_field("the grid intensity the zone-hour's lines were weighed with, g/kWh")
    # A field named like Field.source: DRF's metaclass takes it out of the class attributes.
    source = serializers.CharField(allow_blank=True, help_text="the intensity's source, as on the ledger lines")  # type: ignore[assignment]
    kind = serializers.ChoiceField(
        choices=["live", "upload", "annual", "simulated", "unknown"],
        help_text="live provider, the organization's upload, annual average standing in, simulated (demo), none",
    )
    facility_kwh = number("facility kWh weighed with it")


class EmbodiedFactorSerializer(serializers.Serializer):
    gpu_model = serializers.CharField(help_text='hardware profile key; "mixed" for nodes of several models')
    display_name = serializers.CharField()
    embodied_kgco2e_central = number("embodied kgCO2e of the model's lines amortized over the period, central")
    # A field named like Field.source: DRF's metaclass takes it out of the class attributes.
    sources = serializers.CharField(
        allow_null=True,
        help_text="sources of the model's embodied factors (the card's and the host share's), '; '-separated",
    )


class QualityHourSerializer(PlainRowSerializer):
    hour_start = serializers.DateTimeField(help_text="UTC")
    held_h = number("node-hours held in the hour, over the organization's nodes")
    measured_h = number("node-hours the samples measured (at most the max gap apart)")
    bridged_h = number("node-hours inside telemetry gaps a cumulative counter carried on across (counted in full)")
    missing_h = number("node-hours held but neither measured nor bridged: what no counter proves")
    unpriced_hours = serializers.IntegerField(
        help_text="node-hours of the hour with telemetry but no price, asset or tariff in force"
    )
