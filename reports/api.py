"""``/api/v1/reports/...``: usage, fleet comparison and sustainability, as JSON or CSV.

Authentication: a browser session, or a personal token (``Authorization: Bearer
wlp_...``); a node token is refused (403). Any member of an organization may read
its reports, viewers included. Scoping: ``common.scope``. Errors are
answered in JSON whatever format was asked for.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from drf_spectacular.utils import extend_schema_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.utils.urls import remove_query_param, replace_query_param

from accounting.reporting import ReportingSerializer, reporting_output
from common.periods import Granularity
from common.query import organization_ref_field
from common.renderers import csv_cell
from common.scope import (
    period_described,
    report_filters,
    report_fleet_ids,
)
from fleets.models import Organization
from governance.report_audit import AUDIT_SECTION, ReportAuditSerializer, audit_metric_rows, report_audit
from reports.closing import (
    ReportPeriodSerializer,
    closing_output,
    corrections_field,
    corrections_output,
    restated_metric_rows,
)
from reports.display import (
    MARKET_BASIS,
    MARKET_BASIS_NOTE,
    comparison_row_output,
    embodied_factors_output,
    load_band_output,
    usage_row_output,
)
from reports.metrics import ALLOCATION_NOTE
from reports.report_view import ReportView, report_operation
from reports.selectors import (
    GroupBy,
    UsageSpec,
    fleet_comparison,
    report_page,
    report_rows_iter,
    sustainability_report,
)
from reports.selectors.load import comparison_load_bands
from reports.selectors.reporting import REPORTING_COLUMNS, RowConverter, row_converter, usage_reporting_total
from reports.selectors.sustainability import SustainabilityReport
from reports.selectors.trace import embodied_factors_used
from reports.serializers import (
    CACHED_PROMPT_TOKENS,
    IDLE_TREATMENT,
    IT_KWH,
    PER_TOKEN_FIGURES,
    WITHHELD_CARBON_SENTENCE,
    ComparisonRowSerializer,
    EmbodiedFactorSerializer,
    FactorSerializer,
    GridHourSerializer,
    LoadBandSerializer,
    PeriodInputSerializer,
    QualityHourSerializer,
    ScopeInputSerializer,
    UsageRowSerializer,
    id_field,
    idle_treatment_field,
    number,
    per_unit_field,
)
from reports.sharing import IdleTreatment
from reports.site_charges import SiteChargesSerializer, site_charges_of

# Usage rows per page: a month of daily rows for 16 groups; CSV is never paged.
DEFAULT_PAGE_ROWS = 500
MAX_PAGE_ROWS = 5000
MAX_OFFSET = 10**9  # past any report's rows: an offset beyond them answers an empty page


def _page_links(request: Request, *, count: int, offset: int, limit: int) -> tuple[str | None, str | None]:
    url = request.build_absolute_uri()
    following = replace_query_param(url, "offset", offset + limit) if offset + limit < count else None
    if offset <= 0:
        return following, None
    earlier = max(offset - limit, 0)
    return following, remove_query_param(url, "offset") if earlier == 0 else replace_query_param(url, "offset", earlier)


# The usage report's period as asked for, before the period every report states. (Comments, not docstrings:
# the schema would take them as each subclass's description.)
class _PeriodAskedSerializer(serializers.Serializer):
    period = serializers.CharField(
        help_text="the period asked for (2026-11, start/end), or 'last 7 days' (the dashboards' default)"
    )


# The one organization a sustainability report is of, before its period.
class _OrganizationAskedSerializer(serializers.Serializer):
    organization_id = serializers.IntegerField()
    organization = serializers.SlugField()


def _usage_csv_row(row: Any, converter: RowConverter | None) -> dict[str, Any]:
    output = usage_row_output(row)
    if converter is None:
        return output
    totals = row.sums.totals
    return output | converter.columns(
        row_currency=totals.currency, cost=totals.cost, start=row.period_start, end=row.period_end
    )


@report_operation(
    operation_id="reports_usage",
    summary="Cost, energy, carbon and tokens per period bucket and group",
    description=(
        "Rows are period buckets (UTC) x group, ordered by bucket then group key, paged with limit/offset. "
        "Per-token figures come in two kinds: `*_per_1m_output_tokens` / `*_per_output_token` divide by "
        "output (generation) tokens only, as LLM price lists do; the same names without `output` divide by "
        "input + output tokens (prompt tokens served from a prefix cache included). Unit figures keep 4 "
        'significant digits (money ones as decimal strings, e.g. "0.09820"). '
        f"{WITHHELD_CARBON_SENTENCE}"
        "Money amounts are rounded once, to the currency's minor unit; a row whose lines are in two currencies is "
        "refused (400): filter by currency or group by site or currency. With `Accept: text/csv` or "
        "`?format=csv`, every row is streamed as CSV (no paging), the columns named as the JSON fields. "
        f"With `group_by=llm_model`, {ALLOCATION_NOTE}; their rows' group_key is null."
    ),
)
class UsageReportView(ReportView):
    class InputSerializer(ScopeInputSerializer):
        granularity = serializers.ChoiceField(
            choices=[g.value for g in Granularity],
            default=Granularity.DAY.value,
            help_text="UTC buckets: hour, day, month, or total (one row per group for the whole period)",
        )
        group_by = serializers.ChoiceField(
            choices=[g.value for g in GroupBy],
            default=GroupBy.NONE.value,
            help_text="one row per bucket and organization, fleet, site, node, GPU model, currency or LLM model "
            "(llm_model: the ledger allocated by output-token share; node-hours without output tokens are the "
            "row whose group_key is null)",
        )
        site = serializers.ListField(child=id_field("site id"), required=False, help_text="site id, repeatable")
        node = serializers.ListField(child=id_field("node id"), required=False, help_text="node id, repeatable")
        gpu_model = serializers.ListField(
            child=serializers.SlugField(max_length=64), required=False, help_text="GPU model key, e.g. h100-sxm"
        )
        currency = serializers.ListField(
            child=serializers.RegexField(r"^[A-Z]{3}$"), required=False, help_text="ISO 4217 code, e.g. USD"
        )
        limit = serializers.IntegerField(min_value=1, max_value=MAX_PAGE_ROWS, default=DEFAULT_PAGE_ROWS)
        offset = serializers.IntegerField(min_value=0, max_value=MAX_OFFSET, default=0)

    @extend_schema_serializer(component_name="UsageReport")
    class OutputSerializer(_PeriodAskedSerializer, ReportPeriodSerializer):
        corrections = corrections_field()
        granularity = serializers.CharField()
        group_by = serializers.CharField()
        count = serializers.IntegerField(help_text="rows in all pages")
        next = serializers.URLField(allow_null=True)
        previous = serializers.URLField(allow_null=True)
        results = UsageRowSerializer(many=True)
        reporting = ReportingSerializer(
            allow_null=True,
            help_text="with a reporting currency set (/api/v1/ledger-settings/): the period's cost month by month "
            "at each month's average rate, every rate named, and the total; null without one",
        )
        site_charges = SiteChargesSerializer(
            help_text="each site's fixed and demand (kW) tariff charges per UTC month of the period (the site's, "
            "not in any row's cost), and their totals per currency"
        )

    def get(self, request: Request) -> Any:
        params, start, end, organization_ids = self.scope(request)
        spec = UsageSpec(
            organization_ids=organization_ids,
            start=start,
            end=end,
            granularity=Granularity(params["granularity"]),
            group_by=GroupBy(params["group_by"]),
            filters=report_filters(organization_ids=organization_ids, params=params),
            now=self.now,
        )
        if self.wants_csv(request):
            converter = row_converter(organization_ids=organization_ids)
            # With a reporting currency, its columns come after the JSON fields, which stay as they are.
            columns = list(UsageRowSerializer().fields) + (list(REPORTING_COLUMNS) if converter else [])
            rows: Iterator[Any] = (_usage_csv_row(row, converter) for row in report_rows_iter(spec=spec))
            return self.csv_answer(columns, rows, report="usage", start=start, end=end)
        offset, limit = params["offset"], params["limit"]
        page = report_page(spec=spec, offset=offset, limit=limit)
        following, previous = _page_links(request, count=page.count, offset=offset, limit=limit)
        answer = {
            "period": period_described(params),
            "start": start,
            "end": end,
            **self.completeness(end),
            **closing_output(organization_ids=organization_ids, start=start, end=end),
            "corrections": corrections_output(organization_ids=organization_ids, start=start, end=end),
            "granularity": params["granularity"],
            "group_by": params["group_by"],
            "count": page.count,
            "next": following,
            "previous": previous,
            "results": [usage_row_output(row) for row in page.rows],
            "reporting": reporting_output(
                usage_reporting_total(organization_ids=organization_ids, start=start, end=end, filters=spec.filters)
            ),
            "site_charges": site_charges_of(
                organization_ids=organization_ids,
                start=start,
                end=end,
                now=self.now,
                site_ids=spec.filters.site_ids or (),
            ),
        }
        return Response(self.OutputSerializer(answer).data)


@report_operation(
    operation_id="reports_comparison",
    summary="Fleets side by side: throughput, TTFT, cost, energy and carbon per token, utilization",
    description=(
        "Leads with figures per output token: `cost_per_1m_output_tokens`, `it_j_per_output_token`, "
        "`gco2e_per_1m_output_tokens` and `generation_tokens_per_s` divide by output (generation) tokens "
        "only, as LLM price lists do; the same names without `output` divide by input + output tokens. "
        "Unit figures keep 4 significant digits (money ones as decimal strings). "
        f"{WITHHELD_CARBON_SENTENCE}"
        "Throughput is per second "
        "of endpoint-hours that served tokens. TTFT P50/P90/P99 are interpolated within their histogram "
        "bucket as Prometheus's histogram_quantile does, each with that bucket's bounds "
        "(`ttft_p99_bucket_low_ms`, `ttft_p99_bucket_high_ms`), from the period's histograms merged "
        "(bucket layouts coarsened onto their shared bounds); TGI's queue-based figure is a lower bound, "
        "used only where no endpoint measured TTFT and then labelled `ttft_basis: lower_bound`. Mean TTFT is the "
        "histograms' sum over their count. Goodput is the share of requests whose TTFT is at or below the "
        "organization's target (`goodput_ttft_target_ms`, a ledger setting), interpolated within the bucket "
        "holding the target, with its exact bounds (`goodput_share_certain`, `goodput_share_possible`). "
        "Inter-token latency (time per output token) comes where the server exposes its histogram (vLLM, "
        "SGLang), else it is null and `itl_note` says why. With `by=llm_model`, rows are per fleet x GPU model "
        f"x LLM model, and {ALLOCATION_NOTE} (`idle=apart`, the default), or shared across each fleet x GPU "
        "model's LLM models by their output tokens over the period (`idle=shared`, Kubecost's share idle); "
        "the answer's `idle_treatment` says which. With `baseline`, each figure is also given as a ratio "
        "(`*_vs_baseline`; null where undefined, and for money in another currency): per fleet and per GPU "
        "model to the baseline fleet as a whole; per LLM model to the baseline fleet's rows of the same LLM "
        "model (any GPU model), null where it has none (`baseline_basis: no_baseline_row`). Only final "
        "node-hours are compared (the hour in progress and hours still to be rolled up or priced wait), so "
        "the rows add up and a figure changes only with its data or inputs; `complete_through` says through "
        "when every hour is final. With `by_load=true`, each row also gives its figures per load band "
        "(`by_load`), so that fleets are compared at like load: the row's fleet-hours binned by requests/s per "
        "GPU (bands doubling from 0.25, the last open-ended; the advisor's measured load curves, each LLM "
        "model's hours apart, a node-hour shared among its models by output tokens), with output tokens/s per "
        "GPU, TTFT P50/P99 with bucket bounds, cost, J and gCO2e per output token, and their ratios to the "
        "baseline fleet's band of the same range. CSV: `Accept: text/csv` or `?format=csv`."
    ),
)
class FleetComparisonView(ReportView):
    class InputSerializer(ScopeInputSerializer):
        by = serializers.ChoiceField(
            choices=["fleet", "gpu_model", "llm_model"],
            default="fleet",
            help_text="one row per fleet, per fleet and GPU model, or per fleet, GPU model and LLM model "
            "(llm_model: ledger figures allocated by output-token share; see ledger_allocation)",
        )
        baseline = id_field("fleet id whose figures the ratios (*_vs_baseline) divide by", required=False)
        idle = idle_treatment_field(
            default=IdleTreatment.APART.value,
            error_messages={"invalid_choice": 'idle must be "apart" or "shared", not "{input}"'},
        )
        by_load = serializers.BooleanField(
            default=False,
            help_text="also each row's figures per load band (requests/s per GPU), the advisor's measured load "
            "curves: by_load in JSON; in CSV a line per row x band, its columns prefixed load_",
        )

    @extend_schema_serializer(component_name="FleetComparison")
    class OutputSerializer(ReportPeriodSerializer):
        by = serializers.CharField()
        baseline_fleet_id = serializers.IntegerField(allow_null=True)
        idle_treatment = idle_treatment_field(help_text=f"the idle treatment used (by=llm_model): {IDLE_TREATMENT}")
        results = ComparisonRowSerializer(many=True)

    def get(self, request: Request) -> Any:
        params, start, end, organization_ids = self.scope(request)
        fleet_ids = report_fleet_ids(organization_ids=organization_ids, ids=params.get("fleet", []))
        baseline = params.get("baseline")
        if baseline is not None:
            report_fleet_ids(organization_ids=organization_ids, ids=[baseline])
        comparison = fleet_comparison(
            organization_ids=organization_ids,
            start=start,
            end=end,
            baseline_fleet_id=baseline,
            by_model=params["by"] == "gpu_model",
            by_llm_model=params["by"] == "llm_model",
            fleet_ids=fleet_ids,
            idle=IdleTreatment(params["idle"]),
            now=self.now,
        )
        rows = [comparison_row_output(row) for row in comparison]
        bands: list[list[dict[str, Any]]] | None = None
        if params["by_load"]:
            found = comparison_load_bands(
                comparison,
                organization_ids=organization_ids,
                start=start,
                end=end,
                by=params["by"],
                baseline_fleet_id=baseline,
                fleet_ids=fleet_ids,
            )
            bands = [[load_band_output(band) for band in row_bands] for row_bands in found]
        if self.wants_csv(request):
            columns: list[str] = [str(name) for name in ComparisonRowSerializer().fields if name != "by_load"]
            if bands is not None:
                band_columns = [f"load_{name}" for name in LoadBandSerializer().fields]
                lines = list(_rows_by_band(rows, bands))
                return self.csv_answer(columns + band_columns, lines, report="comparison", start=start, end=end)
            return self.csv_answer(columns, rows, report="comparison", start=start, end=end)
        for index, row in enumerate(rows):
            row["by_load"] = None if bands is None else bands[index]
        answer = {
            "start": start,
            "end": end,
            **self.completeness(end),
            **closing_output(organization_ids=organization_ids, start=start, end=end),
            "by": params["by"],
            "baseline_fleet_id": baseline,
            "idle_treatment": params["idle"],
            "results": rows,
        }
        return Response(self.OutputSerializer(answer).data)


def _rows_by_band(rows: list[dict[str, Any]], bands: list[list[dict[str, Any]]]) -> Iterator[dict[str, Any]]:
    """A CSV line per row x load band (its figures prefixed ``load_``); a row without bands once, blank there."""
    for row, row_bands in zip(rows, bands, strict=True):
        for band in row_bands or [{}]:
            yield row | {f"load_{name}": value for name, value in band.items()}


def _sustainability_metrics(shown: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The report as ``metric,value`` lines: each figure, then each factor's fields."""
    for name, value in shown.items():
        if name not in ("factors", "grid_hours", "quality_hours", "embodied_factors", "audit", "restated"):
            yield from ({"metric": metric, "value": figure} for metric, figure in _flat_metrics(name, value))
    for factor in shown["factors"]:
        prefix = f"factor:{factor['scope']}:{factor['source']}"
        for name in ("origin", "licence", "attribution", "facility_kwh", "held_h"):
            yield {"metric": f"{prefix}:{name}", "value": factor[name]}
    for hour in shown["grid_hours"]:
        prefix = f"grid:{hour['zone']}:{csv_cell(hour['hour_start'])}:{hour['source'] or '-'}"
        for name in ("gco2e_per_kwh", "kind", "facility_kwh"):
            yield {"metric": f"{prefix}:{name}", "value": hour[name]}
    for hour in shown["quality_hours"]:
        prefix = f"quality:{csv_cell(hour['hour_start'])}"
        for name in QUALITY_HOUR_FIELDS:
            yield {"metric": f"{prefix}:{name}", "value": hour[name]}
    for used in shown["embodied_factors"]:
        for name in ("embodied_kgco2e_central", "sources"):
            yield {"metric": f"embodied:{used['gpu_model']}:{name}", "value": used[name]}
    yield from ({"metric": metric, "value": value} for metric, value in audit_metric_rows(shown["audit"]))
    yield from ({"metric": metric, "value": value} for metric, value in restated_metric_rows(shown["restated"]))


def _flat_metrics(name: str, value: Any) -> Iterator[tuple[str, Any]]:
    """A figure as one ``metric,value`` line; a section (a dict, a list of dicts) as ``name.part`` lines."""
    if isinstance(value, dict):
        for part, figure in value.items():
            yield from _flat_metrics(f"{name}.{part}", figure)
    elif isinstance(value, list) and any(isinstance(item, dict) for item in value):
        for index, item in enumerate(value):
            yield from _flat_metrics(f"{name}.{index}", item)
    elif isinstance(value, list):
        yield name, "; ".join(str(item) for item in value)
    else:
        yield name, value


QUALITY_HOUR_FIELDS = ("held_h", "measured_h", "bridged_h", "missing_h", "unpriced_hours")


def _in_tco2e() -> serializers.FloatField:
    """A figure in tonnes beside the same in kilograms (``*_kgco2e``)."""
    return number("the same in tCO2e")


@report_operation(
    operation_id="reports_sustainability",
    summary="Scope 2 (location and market based), embodied carbon, energy, PUE, SCI and data quality",
    description=(
        "One organization over a period (`period=2026`, `2026-Q4`, `2026-11`, or start/end). Lists every "
        "emission factor source used with its licence and attribution. "
        f"{WITHHELD_CARBON_SENTENCE}"
        "CSV (`Accept: text/csv` or "
        "`?format=csv`): `metric,value` lines, factors as `factor:<scope>:<source>:<field>`, each zone-hour's "
        "grid intensity as `grid:<zone>:<hour>:<source>:<gco2e_per_kwh|kind|facility_kwh>`, each hour's data "
        "quality in node-hours as `quality:<hour>:<held_h|measured_h|bridged_h|missing_h|unpriced_hours>`, "
        "each GPU model's embodied carbon and its factors' sources as `embodied:<model>:<embodied_kgco2e_central"
        "|sources>`, then the audit section as `audit:<entries_count|sha256|href>` and each listed change as "
        "`audit:<id>:<at|username|action|subject|object_id|ledger_hours_reopened|before|after>`."
    ),
)
class SustainabilityReportView(ReportView):
    class InputSerializer(PeriodInputSerializer):
        organization = organization_ref_field(
            "organization id or slug; optional if you belong to one only", required=False
        )

    @extend_schema_serializer(component_name="SustainabilityReport")
    class OutputSerializer(_OrganizationAskedSerializer, ReportPeriodSerializer):
        location_kgco2e = number(
            "Scope 2, location-based: facility kWh x grid intensity of the nodes whose electricity is the "
            "organization's Scope 2 (rented capacity with power in the rent is Scope 3: see inventory); null when "
            "none known"
        )
        location_tco2e = _in_tco2e()
        location_basis = serializers.ChoiceField(
            choices=["direct", "lifecycle", "mixed"], allow_null=True,
            help_text="factor basis of location_*: direct (Scope 2 Guidance); mixed or lifecycle where hours had "
            "only a lifecycle factor (inventory.scope2.basis_coverage); null when no factor was known",
        )  # fmt: skip
        operational_location_basis = serializers.ChoiceField(
            choices=["direct", "lifecycle", "mixed"], allow_null=True,
            help_text="factor basis of operational_location_*, SCI and the per-token figures: the grid source's own "
            "(lifecycle for Electricity Maps and the annual averages, direct for UK Carbon Intensity)",
        )  # fmt: skip
        operational_location_kgco2e = number(
            "location-based carbon of every node's metered electricity, Scope 2 and Scope 3 alike: what SCI and the "
            "per-token figures weigh (location_kgco2e before the organizational boundary)"
        )
        operational_location_tco2e = _in_tco2e()
        operational_location_unknown_facility_kwh = number("facility kWh of every node without a grid intensity")
        market_kgco2e = number(
            "Scope 2, market-based, the figure to disclose (see market_basis): the Scope 2 report's allocation of "
            "contractual instruments, then the residual mix (/api/v1/reports/scope2/)"
        )
        market_tco2e = _in_tco2e()
        market_basis = serializers.CharField(help_text="what market_* are, e.g. 'scope2_instruments'")
        location_unknown_facility_kwh = number("Scope 2 facility kWh without a grid intensity (not in location_*)")
        market_unknown_facility_kwh = number("facility kWh with neither instrument, residual mix nor grid factor")
        market_site_factors_kgco2e = number(
            "internal, not for disclosure: facility kWh x the sites' market factors (per site and hour), as the "
            "ledger lines and per-token figures carry it; null when none"
        )
        market_site_factors_tco2e = _in_tco2e()
        market_site_factors_unknown_facility_kwh = number("facility kWh without a site market factor")
        market_site_factors_basis = serializers.CharField(help_text=f"always '{MARKET_BASIS}': {MARKET_BASIS_NOTE}")
        embodied_kgco2e_central = number(
            "embodied carbon amortized over the hours held (SCI, per-token figures), every node: not the inventory's "
            "Category 2 (inventory.scope3.category_2, whole in the acquisition period)"
        )
        embodied_kgco2e_low = number("embodied, low estimate")
        embodied_kgco2e_high = number("embodied, high estimate")
        embodied_tco2e_central = number("embodied central, tCO2e")
        unknown_model_gpu_h = number("GPU-hours of models without a hardware profile (no embodied figure)")
        it_kwh = number(IT_KWH)
        gpu_kwh = number("GPU-boundary energy, kWh: the GPU boards alone, as NVML's energy counter measures them")
        node_metered_kwh = number("the part of it_kwh measured at the node boundary by the node's own meter")
        node_modelled_kwh = number("the part of it_kwh at the node boundary with the host modelled from its profile")
        facility_kwh = number("facility energy, kWh")
        pue = number("PUE used, energy-weighted: facility kWh / IT kWh")
        tokens = serializers.IntegerField(help_text="input + output (prompt + generation) tokens")
        prompt_tokens = serializers.IntegerField(help_text="input tokens, prefix-cache hits included")
        generation_tokens = serializers.IntegerField(help_text="output tokens")
        cached_prompt_tokens = serializers.IntegerField(allow_null=True, help_text=CACHED_PROMPT_TOKENS)
        sci_gco2e_per_1k_output_tokens = per_unit_field(PER_TOKEN_FIGURES["gco2e_per_1k_output_tokens"])
        sci_gco2e_per_1k_tokens = per_unit_field(PER_TOKEN_FIGURES["gco2e_per_1k_tokens"])
        sci = serializers.DictField(
            help_text="Software Carbon Intensity (ISO/IEC 21031:2024), SCI = ((E x I) + M) per R: status and reason "
            "(null figures where some kWh have no grid intensity or some GPU-hours no embodied figure), "
            "gco2e_per_request / _per_1k_tokens / _per_1k_output_tokens, functional_units (R and the figure of "
            "each), terms (E, I, E x I, M), boundary (included, excluded, energy_boundary_shares), "
            "intensity_basis, intensity_method and amortization (the method in force and the lives used)"
        )
        energy_counter_share = number("share of GPU energy measured by the NVML energy counter (0-1)")
        energy_integrated_share = number("share of GPU energy integrated from power samples (0-1)")
        grid_hourly_energy_share = number("share of facility energy weighed with a live or uploaded hourly value")
        grid_annual_energy_share = number("share of facility energy weighed with the annual-average fallback")
        grid_unknown_energy_share = number("share of facility energy with no grid intensity at all")
        grid_hourly_h = number("node-hours with a live or uploaded hourly grid value")
        grid_annual_h = number("node-hours with the annual-average fallback")
        grid_unknown_h = number("node-hours with no grid intensity")
        idle_gpu_h = number("GPU-hours that served no tokens below the utilization threshold")
        idle_facility_kwh = number("facility kWh of idle GPUs (their own and their share of the host's)")
        held_h = number("node-hours held")
        observed_h = number("node-hours measured: samples at most the max gap apart")
        bridged_h = number(
            "node-hours inside telemetry gaps that a cumulative counter carried on across: "
            "their energy and tokens are counted in full, spread over the gap in proportion to time"
        )
        missing_h = number("held but neither measured nor bridged: what no counter proves, hours")
        coverage = number("observed / held (0-1)")
        hardware_unpriced_h = number("node-hours with no price in force")
        electricity_unpriced_h = number("node-hours with no tariff in force")
        unpriced_hours = serializers.IntegerField(
            help_text="node-hours with telemetry but no price, asset or tariff in force: unpriced, never free"
        )
        factors = FactorSerializer(many=True, help_text="every emission factor source used, with its licence")
        grid_hours = GridHourSerializer(
            many=True, help_text="each zone-hour's grid intensity with its source and kind, by zone and hour"
        )
        quality_hours = QualityHourSerializer(
            many=True,
            help_text="each UTC hour's data quality over the organization's nodes, in node-hours (not GPU-hours): "
            "held, measured, bridged and missing, and its unpriced node-hours; the hours add up to the totals",
        )
        embodied_factors = EmbodiedFactorSerializer(
            many=True, help_text="each GPU model whose lines carry embodied carbon, with the sources of its factors"
        )
        inventory = serializers.DictField(
            help_text="the inventory within the organizational boundary (the scope2 app's boundary rule): boundary "
            "(consolidation approach, the rule, node choices), scope1 (entered, or not_applicable), scope2 "
            "(location- and market-based), scope3 by category (category_1 / category_8: rented capacity's "
            "electricity with its kWh; category_2: capital goods whole in the acquisition period, with its basis; "
            "category_3: lifecycle minus direct factors of the Scope 2 hours with both, or excluded, stated), "
            "totals (location- and market-based: Scope 1 + 2 + 3), and "
            "embodied_amortized (the ledger's amortized view with the amortization method and lives in force)"
        )
        audit = ReportAuditSerializer(help_text=AUDIT_SECTION)

    def get(self, request: Request) -> Any:
        start, end, organization = self.organization_scope(request)
        report = sustainability_report(organization_id=organization.pk, start=start, end=end)
        shown = self.shown(report, organization)
        used = embodied_factors_used(
            organization_ids=[organization.pk], start=start, end=end, embodied_g_by_model=report.embodied_g_by_model
        )
        shown["embodied_factors"] = [embodied_factors_output(factors) for factors in used]
        shown["audit"] = report_audit(user=request.user, organization=organization, start=start, end=end)
        shown |= self.completeness(end)
        shown |= closing_output(organization_ids=[organization.pk], start=start, end=end)
        if self.wants_csv(request):
            metrics = _sustainability_metrics(shown)
            return self.csv_answer(["metric", "value"], metrics, report="sustainability", start=start, end=end)
        return Response(self.OutputSerializer(shown).data)

    def shown(self, report: SustainabilityReport, organization: Organization) -> dict[str, Any]:
        """The report as shown, led by the market-based figure to disclose. That figure is the Scope 2
        report's (an app above this one), so the view routed at ``reports/sustainability/`` is
        ``scope2.reports_api.SustainabilityReportView``, which says how; this one does not guess."""
        raise NotImplementedError
