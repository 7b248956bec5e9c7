"""Grid carbon intensity per zone-hour, and the bookkeeping of the hourly fetch.

Rows are written by ``grid.stored_intensity`` (services) and read there too
(selectors); the arithmetic and the provider clients live in the pure submodules
of ``grid``. The app label stays ``accounting`` (tables ``accounting_*``).
"""

from __future__ import annotations

from django.db import models

from fleets.models import Organization

__all__ = ["GridFetchState", "GridIntensity", "IntensityBasis", "IntensityKind"]


class IntensityKind(models.TextChoices):
    AVERAGE = "average", "Average"  # for inventories
    MARGINAL = "marginal", "Marginal"  # for placement advice only


class IntensityBasis(models.TextChoices):
    LIFECYCLE = "lifecycle", "Lifecycle"  # with upstream: SCI and per-token figures
    DIRECT = "direct", "Direct"  # combustion only: Scope 2


class GridIntensity(models.Model):
    """Intensity of ``zone`` for the hour starting at ``hour_start`` (UTC), from one source.

    ``organization`` is null for public provider data and set for an
    organization's CSV upload: supplier-specific figures are private to it.
    """

    zone = models.CharField(max_length=64, help_text="Zone key, upper-case (e.g. DE, US-CAL-CISO)")
    hour_start = models.DateTimeField()
    kind = models.CharField(max_length=10, choices=IntensityKind.choices)
    source = models.CharField(max_length=100, help_text='e.g. "electricitymaps", "watttime", "csv:<name>"')
    gco2e_per_kwh = models.DecimalField("gCO2e/kWh", max_digits=9, decimal_places=3)
    # One row per hour and source, both bases on it: the figure above is on ``basis``; the direct
    # figure of the same hour beside it where the source gives one (equal to it on the direct basis).
    basis = models.CharField(
        max_length=10, choices=IntensityBasis.choices, default=IntensityBasis.LIFECYCLE,
        help_text="what gco2e_per_kwh counts: lifecycle (with upstream) or direct (combustion only)",
    )  # fmt: skip
    direct_gco2e_per_kwh = models.DecimalField(
        "direct gCO2e/kWh", max_digits=9, decimal_places=3, null=True, blank=True,
        help_text="the hour's direct (combustion) figure; empty when the source gives none",
    )  # fmt: skip
    is_estimated = models.BooleanField(default=False, help_text="Modelled, forecast or partly covered by the source")
    is_forecast = models.BooleanField(default=False, help_text="The hour had not happened when it was fetched")
    fetched_at = models.DateTimeField()
    organization = models.ForeignKey(
        Organization, null=True, blank=True, on_delete=models.CASCADE, related_name="grid_intensities"
    )

    class Meta:
        db_table = "accounting_gridintensity"  # kept from before the app had its own label
        verbose_name_plural = "grid intensities"
        constraints = [
            # NULLs are distinct in a plain unique constraint, and nulls_distinct=False
            # is PostgreSQL 15+ only (Django skips it on SQLite), so public rows get
            # their own partial constraint; both engines enforce partial unique indexes.
            models.UniqueConstraint(
                fields=["zone", "hour_start", "kind", "source"],
                condition=models.Q(organization__isnull=True),
                name="gridintensity_unique_public_hour",
            ),
            models.UniqueConstraint(
                fields=["organization", "zone", "hour_start", "kind", "source"],
                condition=models.Q(organization__isnull=False),
                name="gridintensity_unique_org_hour",
            ),
            models.CheckConstraint(condition=models.Q(gco2e_per_kwh__gte=0), name="gridintensity_not_negative"),
            models.CheckConstraint(
                condition=models.Q(direct_gco2e_per_kwh__isnull=True) | models.Q(direct_gco2e_per_kwh__gte=0),
                name="gridintensity_direct_not_negative",
            ),
        ]
        indexes = [
            # intensity_for_hours (one zone, a set of hours, public and one org's rows
            # together) and the fetch's "which hours are stored" query.
            models.Index(fields=["zone", "hour_start"], name="gridintensity_zone_hour"),
        ]

    def __str__(self) -> str:
        return f"{self.zone} {self.hour_start:%Y-%m-%d %H:%M} {self.kind} {self.gco2e_per_kwh} ({self.source})"


class GridFetchState(models.Model):
    """Per (provider, zone): when the hourly fetch may ask again, and why it last failed.

    ``next_attempt_at`` doubles as a claim: a fetch sets it ahead before asking
    the provider, so two workers never fetch the same pair at once.
    ``auth_failed_config`` holds the fingerprint of the configuration whose
    credentials were refused; that configuration is not tried again.
    """

    provider = models.CharField(max_length=64)
    zone = models.CharField(max_length=64)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    failures = models.PositiveIntegerField(default=0, help_text="Consecutive failures since the last success")
    last_error = models.TextField(blank=True)
    last_success_at = models.DateTimeField(null=True, blank=True)
    # Null when not blocked: "" is a valid fingerprint (a caller that names no configuration).
    auth_failed_config = models.CharField(max_length=64, null=True, blank=True, editable=False)  # noqa: DJ001

    class Meta:
        db_table = "accounting_gridfetchstate"  # kept from before the app had its own label
        constraints = [models.UniqueConstraint(fields=["provider", "zone"], name="gridfetchstate_unique_pair")]

    def __str__(self) -> str:
        return f"{self.provider} {self.zone}"
