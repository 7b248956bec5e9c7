"""The register of contractual instruments, per organization.

An instrument is claimed for one site: a certificate batch split between two
sites is two rows carrying the same ``certificate_ref`` (their MWh together
may not exceed ``certificate_mwh``). Energy is stored in MWh as contracts and
registries state it; the allocation works in kWh.
"""

from __future__ import annotations

from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models

from common.timestamps import Timestamped
from fleets.models import Node, Organization, Site
from scope2.boundary import Consolidation, ElectricityChoice
from scope2.quality import PurchaseType, Technology

__all__ = [
    "ContractualInstrument", "InstrumentHour", "InventoryBoundary", "NodeScope", "ResidualMixFactor", "Scope1Emission",
    "Scope2Disclosure",
]  # fmt: skip


def _stated(
    digits: int, places: int, label: str | None = None, *, help_text: str, at_most: int | None = None
) -> models.DecimalField:
    """A non-negative figure an instrument may state or leave empty (a volume, a share, a factor)."""
    bounds = [MinValueValidator(0)] if at_most is None else [MinValueValidator(0), MaxValueValidator(at_most)]
    return models.DecimalField(
        label, max_digits=digits, decimal_places=places, null=True, blank=True, validators=bounds, help_text=help_text
    )


# The technologies as the admin and the API list them: each by its name, a supplier's mix said so.
TECHNOLOGY_CHOICES = [
    (t.value, "Mixed (a supplier's mix)" if t is Technology.MIXED else t.value.capitalize()) for t in Technology
]


class ContractualInstrument(Timestamped):
    class Kind(models.TextChoices):
        PPA = "ppa", "Power purchase agreement"
        GUARANTEE_OF_ORIGIN = "go", "Guarantee of origin"
        REC = "rec", "Renewable energy certificate"
        SUPPLIER_RATE = "supplier_rate", "Supplier-specific emission rate"

    Technology = Technology  # scope2.quality's, which the Quality Criteria and the disclosures read

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="instruments")
    site = models.ForeignKey(Site, on_delete=models.CASCADE, related_name="instruments")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    name = models.CharField(max_length=200, help_text="e.g. 'Solar PPA Brandenburg 2025'")
    volume_mwh = _stated(
        16, 6, help_text="MWh delivered over the delivery period; empty when the instrument covers a share"
    )
    share_of_consumption = _stated(
        7,
        6,
        at_most=1,
        help_text="share (0-1) of the site's consumption covered; empty when the instrument has a volume",
    )
    delivery_start = models.DateTimeField(help_text="UTC, inclusive")
    delivery_end = models.DateTimeField(help_text="UTC, exclusive")
    vintage_year = models.PositiveIntegerField(help_text="year the energy was generated")
    generation_zone = models.CharField(max_length=64, help_text="zone or country of the generator, e.g. DE, SE-SE3")
    technology = models.CharField(max_length=16, choices=TECHNOLOGY_CHOICES)
    emission_factor_gco2e_per_kwh = _stated(
        9, 3, "gCO2e/kWh", help_text="as stated by the instrument; empty means 0 for renewable and nuclear technologies"
    )
    certificate_ref = models.CharField(max_length=200, blank=True, help_text="registry id of the certificates")
    certificate_mwh = _stated(16, 6, help_text="MWh the certificate batch holds, across every row that claims it")
    evidence_reference = models.TextField(blank=True, help_text="contract or cancellation statement reference")
    evidence_file_name = models.CharField(max_length=200, blank=True)
    evidence_file_sha256 = models.CharField(max_length=64, blank=True)
    # Kept in the database so that every web host serves it and a backup keeps it with the claim.
    evidence_file = models.BinaryField(null=True, blank=True, editable=False)
    # What an auditor checks against the registry (Quality Criteria 2 and 3); an instrument without them fails
    # the evidence criterion (scope2.quality).
    registry = models.CharField(max_length=200, blank=True, help_text="tracking system, e.g. 'Grexel CMO.grexel'")
    certificate_id_from = models.CharField(max_length=200, blank=True, help_text="first certificate id cancelled")
    certificate_id_to = models.CharField(max_length=200, blank=True, help_text="last certificate id cancelled")
    cancellation_date = models.DateField(null=True, blank=True, help_text="date of cancellation or retirement")
    beneficiary = models.CharField(max_length=200, blank=True, help_text="on whose behalf it was cancelled")
    consumption_period_start = models.DateField(null=True, blank=True, help_text="as the cancellation states")
    consumption_period_end = models.DateField(null=True, blank=True, help_text="inclusive, as the cancellation states")
    purchase_type = models.CharField(
        max_length=12, blank=True, choices=[(p.value, p.value.replace("_", " ")) for p in PurchaseType],
        help_text="unbundled or bundled certificates, a direct line (PPA) or on-site generation",
    )  # fmt: skip
    attributes_exclusive = models.BooleanField(
        null=True, blank=True, help_text="criterion 7: every instrument conveying the claim goes to us only"
    )
    supplier_rate_delivered_basis = models.BooleanField(
        null=True, blank=True,
        help_text="criterion 6: the rate is on delivered electricity, net of certificates sold and retired",
    )  # fmt: skip
    biogenic_co2_g_per_kwh = _stated(
        9, 3, "biogenic gCO2/kWh", help_text="biomass: CO2 of combustion, a memo outside the scopes"
    )

    class Meta:
        db_table = "accounting_contractualinstrument"  # kept from before the app had its own label
        ordering = ["delivery_start", "id"]
        constraints = [
            models.CheckConstraint(
                condition=(models.Q(volume_mwh__isnull=True) ^ models.Q(share_of_consumption__isnull=True)),
                name="instrument_volume_xor_share",
            ),
            models.CheckConstraint(
                condition=models.Q(delivery_end__gt=models.F("delivery_start")), name="instrument_period_positive"
            ),
        ]
        indexes = [
            # The report: an organization's instruments delivering in a period.
            models.Index(fields=["organization", "delivery_start"], name="instrument_org_start"),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} {self.name}"


class InstrumentHour(models.Model):
    """An instrument's hourly profile: the MWh it delivered in one hour (enables hourly matching)."""

    instrument = models.ForeignKey(ContractualInstrument, on_delete=models.CASCADE, related_name="hours")
    hour_start = models.DateTimeField()
    mwh = models.DecimalField(max_digits=16, decimal_places=6, validators=[MinValueValidator(0)])

    class Meta:
        db_table = "accounting_instrumenthour"  # kept from before the app had its own label
        constraints = [
            models.UniqueConstraint(fields=["instrument", "hour_start"], name="instrumenthour_unique"),
            models.CheckConstraint(condition=models.Q(mwh__gte=0), name="instrumenthour_not_negative"),
        ]

    def __str__(self) -> str:
        return f"{self.instrument_id} {self.hour_start:%Y-%m-%d %H:00} {self.mwh} MWh"


class ResidualMixFactor(models.Model):
    """A residual-mix factor an organization holds (e.g. from the AIB report it licensed), per zone and year.

    It takes precedence over the shipped table (``scope2/data``).
    """

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="residual_mixes")
    zone = models.CharField(max_length=64, help_text="zone or country, upper-case, e.g. DE")
    year = models.PositiveIntegerField()
    gco2e_per_kwh = models.DecimalField("gCO2e/kWh", max_digits=9, decimal_places=3, validators=[MinValueValidator(0)])
    source = models.CharField(max_length=200, help_text="publication, version and table, e.g. 'AIB ERM 2024 v1.0'")

    class Meta:
        db_table = "accounting_residualmixfactor"  # kept from before the app had its own label
        constraints = [
            models.UniqueConstraint(fields=["organization", "zone", "year"], name="residualmix_unique_org_zone_year")
        ]

    def __str__(self) -> str:
        return f"residual mix {self.zone} {self.year}: {self.gco2e_per_kwh} g/kWh"


class InventoryBoundary(Timestamped):
    """An organization's consolidation approach (GHG Protocol Corporate Standard, ch. 3); without a row,
    operational control. The rule it feeds is ``scope2.boundary``'s."""

    organization = models.OneToOneField(Organization, on_delete=models.CASCADE, related_name="inventory_boundary")
    consolidation_approach = models.CharField(
        max_length=20,
        choices=[(c.value, c.value.replace("_", " ")) for c in Consolidation],
        default=Consolidation.OPERATIONAL_CONTROL.value,
    )
    equity_share_pct = models.DecimalField(
        "Equity share (%)", max_digits=7, decimal_places=4, null=True, blank=True,
        validators=[MinValueValidator(0), MaxValueValidator(100)],
        help_text="equity share approach only: the organization's share of the operation's equity",
    )  # fmt: skip

    def __str__(self) -> str:
        return f"boundary of {self.organization}: {self.consolidation_approach}"


class NodeScope(Timestamped):
    """Where one node's electricity lands, as the organization chose it (``auto``: the default rule)."""

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="node_scopes")
    node = models.OneToOneField(Node, on_delete=models.CASCADE, related_name="inventory_scope")
    electricity = models.CharField(
        max_length=12, choices=[(c.value, c.value.replace("_", " ")) for c in ElectricityChoice],
        default=ElectricityChoice.AUTO.value,
    )  # fmt: skip
    reason = models.TextField(blank=True, help_text="why, e.g. 'operating lease of a dedicated server we operate'")

    def __str__(self) -> str:
        return f"{self.node}: electricity {self.electricity}"


class Scope1Emission(Timestamped):
    """Direct emissions at a site over a period: a generator's fuel, refrigerant leaks (entered, not metered)."""

    class Activity(models.TextChoices):
        GENERATOR = "generator", "Stationary combustion (generators)"
        REFRIGERANT = "refrigerant", "Fugitive (refrigerant)"
        OTHER = "other", "Other direct emissions"

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="scope1_emissions")
    site = models.ForeignKey(Site, on_delete=models.CASCADE, related_name="scope1_emissions")
    activity = models.CharField(max_length=12, choices=Activity.choices)
    start = models.DateTimeField(help_text="UTC, inclusive, on the hour")
    end = models.DateTimeField(help_text="UTC, exclusive, on the hour")
    co2e_kg = models.DecimalField("kgCO2e", max_digits=16, decimal_places=6, validators=[MinValueValidator(0)])
    description = models.TextField(help_text="what and how, e.g. 'diesel genset tests, 120 l x 2.68 kg/l'")

    class Meta:
        ordering = ["start", "id"]
        constraints = [
            models.CheckConstraint(condition=models.Q(end__gt=models.F("start")), name="scope1_period_positive"),
            models.CheckConstraint(condition=models.Q(co2e_kg__gte=0), name="scope1_not_negative"),
        ]

    def __str__(self) -> str:
        return f"Scope 1 {self.activity} at {self.site}: {self.co2e_kg} kg"


class Scope2Disclosure(Timestamped):
    """Which market-based figure the organization discloses; without a row, annual matching (2015 Guidance)."""

    class Matching(models.TextChoices):
        ANNUAL = "annual", "Annual matching (GHG Protocol Scope 2 Guidance, 2015)"
        HOURLY = "hourly", "Hourly matching where a profile exists (the 2025 revision's proposal)"

    organization = models.OneToOneField(Organization, on_delete=models.CASCADE, related_name="scope2_disclosure")
    market_matching = models.CharField(max_length=8, choices=Matching.choices, default=Matching.ANNUAL)

    def __str__(self) -> str:
        return f"{self.organization}: market-based {self.market_matching}"
