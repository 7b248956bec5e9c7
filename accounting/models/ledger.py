"""The stored ledger: one line per node-hour, recomputed when its inputs change.

Reports and dashboards read these lines (and hourly usage), never raw samples.
Money and carbon are stored unrounded (rounded once, when shown). The
organization, fleet, site and GPU model are copied onto each line so that
reports group and filter on one table with its indexes.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models

from common.currencies import currency_problem
from fleets.models import Fleet, Node, Organization, Site
from telemetry.models import NodeHourMark, ServingEndpoint

__all__ = [
    "LedgerNodeDay",
    "LedgerPending",
    "LedgerServedHour",
    "LedgerServingDay",
    "LedgerSettings",
    "LedgerSiteHour",
    "LedgerSiteHourPending",
    "NodeHourLedger",
]


def _amount(*, null: bool = False) -> models.DecimalField:
    """An unrounded quantity: money, kWh, gCO2e or hours (rounded once, when shown)."""
    return models.DecimalField(max_digits=28, decimal_places=12, null=null)


class NodeHourLedger(models.Model):
    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="ledger_lines")
    hour_start = models.DateTimeField()
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    fleet = models.ForeignKey(Fleet, on_delete=models.CASCADE, related_name="+")
    site = models.ForeignKey(Site, on_delete=models.CASCADE, related_name="+")
    gpu_model = models.CharField(max_length=64, help_text="profile key of the node's GPUs; 'unknown' or 'mixed'")
    currency = models.CharField(max_length=3)

    held_h = _amount()
    observed_s = _amount()
    bridged_s = models.DecimalField(
        max_digits=28, decimal_places=12, default=0, help_text="held seconds a counter bridged across a telemetry gap"
    )
    gpu_count = models.PositiveIntegerField(help_text="GPUs installed (or measured) at some time in the hour")
    gpu_h = models.DecimalField(
        max_digits=28,
        decimal_places=12,
        default=0,
        help_text="GPU-hours installed while held: what rent per GPU-hour counts",
    )
    it_kwh = _amount()
    gpu_kwh = models.DecimalField(
        max_digits=28, decimal_places=12, default=0, help_text="GPU boundary: the boards' energy, as NVML measures it"
    )
    facility_kwh = _amount()
    pue = models.DecimalField(max_digits=4, decimal_places=2)
    electricity_cost = _amount(null=True)
    hardware_cost = _amount()  # rent_cost + depreciation_cost + opex_cost
    rent_cost = models.DecimalField(max_digits=28, decimal_places=12, default=0, help_text="rent (rented nodes)")
    depreciation_cost = models.DecimalField(
        max_digits=28, decimal_places=12, default=0,
        help_text="depreciation by the book, and the loss on disposal in the disposal hour (owned nodes)",
    )  # fmt: skip
    opex_cost = models.DecimalField(
        max_digits=28, decimal_places=12, default=0, help_text="other running cost (owned nodes)"
    )
    cost = _amount()
    # A price in another currency than the line's (IAS 21: at the month's average rate), traced.
    price_currency = models.CharField(
        max_length=3, blank=True, help_text="the price's currency where it is not the line's; blank: the line's"
    )
    price_fx_rate = models.DecimalField(
        max_digits=30, decimal_places=16, null=True, help_text="line currency per one price_currency unit, as used"
    )
    price_fx_month = models.DateField(null=True, help_text="the month of the average rate used")
    price_fx_source = models.CharField(max_length=200, blank=True, help_text="where the rate used comes from")
    hardware_cost_unconverted = models.DecimalField(
        max_digits=28, decimal_places=12, null=True,
        help_text="no rate held: the hardware cost in price_currency, left out of cost (unconverted, not zero)",
    )  # fmt: skip
    # The site's taxes (accounting.ledger.tax): energy tax and non-recoverable VAT are in cost; recoverable
    # VAT (vat_amount - vat_cost) is a receivable.
    energy_tax_cost = models.DecimalField(
        max_digits=28, decimal_places=12, default=0, help_text="facility kWh x the site's energy tax per kWh"
    )
    vat_amount = models.DecimalField(
        max_digits=28, decimal_places=12, default=0, help_text="VAT on the net rent, running cost and electricity"
    )
    vat_cost = models.DecimalField(
        max_digits=28, decimal_places=12, default=0, help_text="of vat_amount, the part not recoverable: in cost"
    )
    tax_id = models.CharField(max_length=64, blank=True, help_text="the site tax in force (tax-<id>); blank: none")
    vat_unknown = models.BooleanField(
        default=False, help_text="a gross price with no site tax in force: kept as it is, VAT not taken out"
    )
    location_co2e_g = _amount(null=True)
    market_co2e_g = _amount(null=True)
    # Scope 2 takes this one: the facility kWh at the hour's direct (combustion) factor; null where the grid
    # source gives no direct figure (Scope 2 then stands on location_co2e_g, lifecycle, flagged).
    location_direct_co2e_g = _amount(null=True)
    embodied_co2e_g_low = _amount()
    embodied_co2e_g_central = _amount()
    embodied_co2e_g_high = _amount()
    embodied_unknown_gpu_h = _amount()
    prompt_tokens = models.BigIntegerField()
    generation_tokens = models.BigIntegerField()
    cached_prompt_tokens = models.BigIntegerField(
        null=True,
        help_text="of prompt_tokens, those served from the prefix cache; null when no endpoint of the node-hour "
        "exposed the counter (TGI)",
    )
    requests = models.BigIntegerField(
        default=0, help_text="requests the node's serving endpoints answered in the hour (SCI's functional unit)"
    )
    # Which endpoint holds all of the line, where one does: reports per LLM model sum such lines as they are,
    # and weigh by output-token share only the node-hours several endpoint-hours share
    # (``reports.selectors.comparison``). Computed with the tokens, from the same endpoint-hours.
    sole_endpoint = models.ForeignKey(
        "telemetry.ServingEndpoint",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        db_index=False,
        related_name="+",
        help_text="the endpoint whose hour is the node-hour's only endpoint-hour, where it served output tokens "
        "(its share of the line is all of it); null otherwise",
    )
    idle_gpu_h = _amount()
    idle_cost = _amount()
    idle_facility_kwh = _amount()
    # GPU utilization of the hour, so that reports need not read every GPU-hour: over the
    # node's GPU-hours with a known mean utilization, sum(mean_util_pct x observed_s) and
    # sum(observed_s). Their ratio is the node-hour's time-weighted mean utilization (%).
    util_pct_s = models.FloatField(default=0.0, help_text="sum of mean_util_pct x observed_s over the GPU-hours")
    util_observed_s = models.FloatField(default=0.0, help_text="observed seconds of GPU-hours with a utilization")

    # Trace: where each number came from.
    energy_method = models.CharField(
        max_length=16,
        help_text="node_meter (node boundary, metered), modelled (GPUs metered, host from its profile) "
        "or gpu_sum (GPU boundary)",
    )
    energy_counter_j = models.FloatField(help_text="part of the GPUs' energy measured by the NVML counter")
    energy_integrated_j = models.FloatField(help_text="part of the GPUs' energy integrated from power samples")
    electricity_status = models.CharField(max_length=10, help_text="priced, included (in rent) or unpriced")
    tariff_price_per_kwh = models.DecimalField(null=True, max_digits=14, decimal_places=6)
    tariff_price_id = models.CharField(max_length=64, blank=True)
    pricing_price_id = models.CharField(max_length=64, blank=True)
    location_gco2e_per_kwh = models.DecimalField(null=True, max_digits=9, decimal_places=3)
    location_source = models.CharField(max_length=64, blank=True)
    location_basis = models.CharField(
        max_length=10, blank=True, help_text="what location_gco2e_per_kwh counts: lifecycle or direct"
    )
    location_direct_gco2e_per_kwh = models.DecimalField(null=True, max_digits=9, decimal_places=3)
    location_is_fallback = models.BooleanField(help_text="the annual average stood in for a missing live hour")
    market_source = models.CharField(max_length=128, blank=True)
    amortization = models.CharField(max_length=12)
    computed_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["node", "hour_start"], name="ledger_unique_node_hour")]
        indexes = [
            # Reports: an organization's lines over a period, grouped by fleet/site/model.
            models.Index(fields=["organization", "hour_start"], name="ledger_org_hour"),
            # Node pages: one node's recent lines (the unique constraint serves node + hour too).
        ]

    def __str__(self) -> str:
        return f"{self.node_id} {self.hour_start:%Y-%m-%d %H:00}"


class LedgerSiteHour(models.Model):
    """The node-hour lines of one site-hour summed per what reports group and filter by (``accounting.site_hours``).

    Written with the lines, in their transaction (never a cache that can serve stale figures): a site-hour's
    rows are recomputed from its lines whenever one of them is stored. The columns are the lines' own, under
    the lines' names: a group key holds the value its lines share, a sum the lines' exact sum (``numeric``),
    ``location_gco2e_per_kwh`` and ``location_direct_gco2e_per_kwh`` the largest; ``lines`` counts them and
    ``unpriced_hours`` those unpriced with telemetry. The lines of one row also agree on which of their
    nullable sums are null, so a condition on a sum being null holds for the row as for each of its lines.
    ``pricing_price_id`` holds only whether the lines were unpriced (``NO_PRICE_ID``) or not (blank).
    ``sole_llm_model`` and ``no_output`` are not the lines' columns but keys the comparison per LLM model reads:
    the model name of the lines' ``sole_endpoint`` (null: none) and whether they served no output token.
    """

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    site = models.ForeignKey(Site, on_delete=models.CASCADE, related_name="+")
    fleet = models.ForeignKey(Fleet, on_delete=models.CASCADE, related_name="+")
    hour_start = models.DateTimeField()
    gpu_model = models.CharField(max_length=64)
    currency = models.CharField(max_length=3)
    electricity_status = models.CharField(max_length=10)
    pricing_price_id = models.CharField(max_length=64, blank=True)
    energy_method = models.CharField(max_length=16)
    vat_unknown = models.BooleanField()
    location_source = models.CharField(max_length=64, blank=True)
    location_is_fallback = models.BooleanField()
    location_basis = models.CharField(max_length=10, blank=True)
    market_source = models.CharField(max_length=128, blank=True)
    amortization = models.CharField(max_length=12)
    # Null, not "": lines with no sole endpoint (an endpoint's model name may itself be blank).
    sole_llm_model = models.CharField(  # noqa: DJ001
        max_length=256, null=True, help_text="the model name of the lines' sole endpoint (null: none)"
    )
    no_output = models.BooleanField(default=False, help_text="the lines served no output token")

    lines = models.PositiveIntegerField(help_text="node-hour lines summed in this row")
    unpriced_hours = models.PositiveIntegerField(help_text="of them, unpriced with telemetry")
    held_h = _amount()
    observed_s = _amount()
    bridged_s = _amount()
    gpu_h = _amount()
    it_kwh = _amount()
    gpu_kwh = _amount()
    facility_kwh = _amount()
    electricity_cost = _amount(null=True)
    hardware_cost = _amount()
    rent_cost = _amount()
    depreciation_cost = _amount()
    opex_cost = _amount()
    cost = _amount()
    hardware_cost_unconverted = _amount(null=True)
    energy_tax_cost = _amount()
    vat_amount = _amount()
    vat_cost = _amount()
    location_co2e_g = _amount(null=True)
    market_co2e_g = _amount(null=True)
    location_direct_co2e_g = _amount(null=True)
    embodied_co2e_g_low = _amount()
    embodied_co2e_g_central = _amount()
    embodied_co2e_g_high = _amount()
    embodied_unknown_gpu_h = _amount()
    prompt_tokens = models.BigIntegerField()
    generation_tokens = models.BigIntegerField()
    cached_prompt_tokens = models.BigIntegerField(null=True)
    requests = models.BigIntegerField(default=0)
    idle_gpu_h = _amount()
    idle_cost = _amount()
    idle_facility_kwh = _amount()
    util_pct_s = models.FloatField()
    util_observed_s = models.FloatField()
    energy_counter_j = models.FloatField()
    energy_integrated_j = models.FloatField()
    location_gco2e_per_kwh = models.DecimalField(null=True, max_digits=9, decimal_places=3)
    location_direct_gco2e_per_kwh = models.DecimalField(null=True, max_digits=9, decimal_places=3)
    location_gco2e_per_kwh_sum = models.DecimalField(
        null=True, max_digits=20, decimal_places=3, help_text="the lines' location_gco2e_per_kwh added (a mean's)"
    )
    location_gco2e_per_kwh_n = models.PositiveIntegerField(help_text="lines with a location_gco2e_per_kwh")

    class Meta:
        indexes = [
            models.Index(fields=["organization", "hour_start"], name="ledger_site_hour_org_hour"),
            models.Index(fields=["site", "hour_start"], name="ledger_site_hour_site_hour"),
        ]

    def __str__(self) -> str:
        return f"site {self.site_id} {self.hour_start:%Y-%m-%d %H:00} ({self.lines} lines)"


class LedgerServedHour(models.Model):
    """The lines of one site-hour that one endpoint served whole, summed per LLM model (``accounting.served_hours``).

    A node-hour whose only endpoint-hour with output tokens is one endpoint's (the endpoint its line's
    ``sole_endpoint`` names) is all that endpoint's LLM model's: these rows hold such lines summed per
    site-hour, fleet, GPU model, currency, LLM model, server kind and TTFT bucket layout, beside the sums of
    their endpoint-hours (requests, output tokens, TTFT histogram), for the load curves (``reports.curves``).
    Written with the lines and the site-hours, in their transaction, from the lines as stored: never a cache
    that can serve stale figures.

    ``llm_model`` and ``endpoint_kind`` are the endpoint's ``model_name`` and ``kind``;
    ``ttft_bucket_bounds_s`` the endpoint-hours' layout, ``ttft_bucket_counts`` the bucket-wise sum of their
    histograms that fit it (null: none). ``location_co2e_g`` sums the lines with a known intensity (null:
    none known); ``unknown_intensity_kwh`` is the facility kWh of those without; ``embodied_unknown_gpu_h``
    the lines' GPU-hours of models without an embodied figure; ``unpriced_hours`` counts the lines unpriced
    with telemetry.
    """

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    site = models.ForeignKey(Site, on_delete=models.CASCADE, related_name="+")
    fleet = models.ForeignKey(Fleet, on_delete=models.CASCADE, related_name="+")
    hour_start = models.DateTimeField()
    gpu_model = models.CharField(max_length=64)
    currency = models.CharField(max_length=3)
    llm_model = models.CharField(max_length=256, blank=True)
    endpoint_kind = models.CharField(max_length=10)
    ttft_bucket_bounds_s = models.JSONField(null=True)

    lines = models.PositiveIntegerField(help_text="node-hour lines summed in this row")
    unpriced_hours = models.PositiveIntegerField(help_text="of them, unpriced with telemetry")
    requests = models.BigIntegerField(help_text="the endpoint-hours' requests")
    generation_tokens = models.BigIntegerField(help_text="the endpoint-hours' output tokens")
    gpu_h = _amount()
    cost = _amount()
    it_kwh = _amount()
    facility_kwh = _amount()
    location_co2e_g = _amount(null=True)
    unknown_intensity_kwh = _amount()
    embodied_co2e_g_central = _amount()
    embodied_unknown_gpu_h = _amount()
    ttft_bucket_counts = models.JSONField(null=True)

    class Meta:
        indexes = [
            models.Index(fields=["organization", "hour_start"], name="ledger_served_hour_org_hour"),
            models.Index(fields=["site", "hour_start"], name="ledger_served_hour_site_hour"),
        ]

    def __str__(self) -> str:
        return f"site {self.site_id} {self.hour_start:%Y-%m-%d %H:00} {self.llm_model} ({self.lines} lines)"


class LedgerServingDay(models.Model):
    """One endpoint's hourly serving usage over one UTC day, summed per the GPU model on its node-hours' lines
    (``accounting.serving_days``).

    The fleet comparison sums every endpoint-hour of its period per endpoint (and per GPU model on the
    node-hour's line): these rows hold those sums a day at a time, keyed as that query groups the hours (the
    GPU model, null where the node-hour has no line; the TTFT and inter-token latency bucket layouts; whether
    the hours' latency sums are known). Written in the ledger's transaction for the node's hours of that day,
    from the endpoint-hours and lines as they then stand: a rewritten endpoint-hour marks its node-hour
    (``telemetry.UsageChanged``), whose node-day is read from the hours until the ledger has summed it again.

    ``serving_s`` and ``requests`` sum the hours that served a token (as the comparison counts them);
    ``cached_prompt_tokens`` is null where no hour counted prefix-cache hits, and ``prompt_tokens_cache_known``
    sums the prompt tokens of those that did; ``*_histograms`` count the hours with a histogram, ``*_sum_s``
    sums their latency sums (null: none), ``*_bucket_counts`` their counts bucket by bucket (null: none).
    """

    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="+")
    endpoint = models.ForeignKey(ServingEndpoint, on_delete=models.CASCADE, related_name="+")
    day_start = models.DateTimeField(help_text="start of the UTC day")
    # Null, not "": the hours without a line (no GPU model at all), as the comparison's join leaves them.
    gpu_model = models.CharField(max_length=64, null=True, help_text="the lines' GPU model")  # noqa: DJ001
    ttft_bucket_bounds_s = models.JSONField(default=list)
    itl_bucket_bounds_s = models.JSONField(default=list)
    ttft_sum_known = models.BooleanField()
    itl_sum_known = models.BooleanField()

    endpoint_hours = models.PositiveIntegerField(help_text="endpoint-hours summed in this row")
    serving_s = models.FloatField()
    prompt_tokens = models.BigIntegerField()
    generation_tokens = models.BigIntegerField()
    requests = models.BigIntegerField()
    cached_prompt_tokens = models.BigIntegerField(null=True)
    prompt_tokens_cache_known = models.BigIntegerField()
    ttft_histograms = models.PositiveIntegerField()
    ttft_sum_s = models.FloatField(null=True)
    ttft_bucket_counts = models.JSONField(null=True)
    itl_histograms = models.PositiveIntegerField()
    itl_sum_s = models.FloatField(null=True)
    itl_bucket_counts = models.JSONField(null=True)

    class Meta:
        indexes = [models.Index(fields=["node", "day_start"], name="ledger_serving_day_node_day")]

    def __str__(self) -> str:
        return f"endpoint {self.endpoint_id} {self.day_start:%Y-%m-%d} ({self.endpoint_hours} hours)"


class LedgerNodeDay(models.Model):
    """One node's ledger lines of one UTC day, counted per organization and electricity status
    (``accounting.node_days``).

    The Scope 2 boundary (``scope2.inventory.electricity_filters_since``) classifies a year's lines by their node
    and whether their power is in the rent (the status ``included``): the distinct (node, status) of 140k lines
    for 90 days x 500 GPUs. These rows hold them a day at a time, 24 times fewer; the query reads the whole
    days of its range from them and the rest from the lines. Written in the ledger's transaction with the
    node's lines of that day (and where lines are deleted in the admin), from the lines as they then stand: a
    line's status changes only when the line is stored again.
    """

    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="+")
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    day_start = models.DateTimeField(help_text="start of the UTC day")
    electricity_status = models.CharField(max_length=10, help_text="the lines' electricity status")
    lines = models.PositiveIntegerField(help_text="the node's lines of that day, organization and status")

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["node", "day_start", "organization", "electricity_status"], name="ledger_node_day_key"
            )
        ]
        indexes = [models.Index(fields=["organization", "day_start"], name="ledger_node_day_org_day")]

    def __str__(self) -> str:
        return f"node {self.node_id} {self.day_start:%Y-%m-%d} {self.electricity_status} ({self.lines} lines)"


class LedgerSiteHourPending(models.Model):
    """A site-hour whose site-hours and served rows are to be summed again from its lines, marked by a node whose
    lines of the hour changed (``accounting.site_hours``).

    Written only on a Citus coordinator, in the node's ledger transaction (on the node's shard: the site's other
    nodes' lines lie on other shards), and settled after it commits; reports read the lines of a marked
    site-hour, never its rows. On one server the rows are summed in the node's transaction and nothing is marked.
    """

    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="+")
    site = models.ForeignKey(Site, on_delete=models.CASCADE, related_name="+")
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    hour_start = models.DateTimeField()
    marked_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["node", "site", "hour_start"], name="ledger_site_hour_pending_key")
        ]
        indexes = [models.Index(fields=["organization", "hour_start"], name="ledger_site_hour_pending_org")]

    def __str__(self) -> str:
        return f"site {self.site_id} {self.hour_start:%Y-%m-%d %H:00} (node {self.node_id})"


class LedgerPending(NodeHourMark):
    """Node-hours whose ledger lines must be (re)computed: new usage, or a changed price or intensity."""

    marked_at = models.DateTimeField()


# An interactive chat turn's first token within half a second; the organization sets its own.
DEFAULT_GOODPUT_TTFT_TARGET_MS = 500
MAX_GOODPUT_TTFT_TARGET_MS = 600_000  # ten minutes: past any interactive or batch target


class LedgerSettings(models.Model):
    """An organization's ledger choices; without a row the defaults apply (time-based, 5 %, 500 ms goodput)."""

    class Amortization(models.TextChoices):
        TIME = "time", "Time-based (SCI: embodied x time held / life)"
        UTILIZATION = "utilization", "Utilization-weighted (workload comparisons only)"

    organization = models.OneToOneField(Organization, on_delete=models.CASCADE, related_name="ledger_settings")
    amortization = models.CharField(max_length=12, choices=Amortization.choices, default=Amortization.TIME)
    model_host_power = models.BooleanField(
        "Model host power where no meter",
        default=True,
        help_text="for a node without a host meter, add its host's energy (CPUs, memory, fans, power supplies) "
        "modelled from the hardware profile's cited idle and per-GPU power, labelled modelled; off, such a node's "
        "energy is its GPU boards' alone (the GPU boundary)",
    )
    idle_util_threshold_pct = models.DecimalField(
        "Idle below utilization (%)",
        max_digits=5,
        decimal_places=2,
        default=5,
        validators=[MinValueValidator(0), MaxValueValidator(100)],
        help_text="a GPU-hour that served no tokens and averaged below this is idle",
    )
    goodput_ttft_target_ms = models.PositiveIntegerField(
        "Goodput TTFT target (ms)",
        default=DEFAULT_GOODPUT_TTFT_TARGET_MS,
        validators=[MinValueValidator(1), MaxValueValidator(MAX_GOODPUT_TTFT_TARGET_MS)],
        help_text="goodput is the share of requests whose time to first token is at or below this",
    )

    reporting_currency = models.CharField(
        "Reporting currency", max_length=3, blank=True, default="",
        help_text="ISO 4217 code the reports also total in, at the rates of the organization's table; blank: none",
    )  # fmt: skip

    class Meta:
        verbose_name_plural = "ledger settings"

    def __str__(self) -> str:
        return f"ledger settings of {self.organization}"

    def clean(self) -> None:
        if self.reporting_currency and (problem := currency_problem(self.reporting_currency)):
            raise ValidationError({"reporting_currency": problem})
