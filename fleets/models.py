"""Who and what: organizations, the people in them, and the hardware they run.

Every row a user can reach hangs off an ``Organization``; selectors in
``fleets.selectors`` scope each query to the organizations of the user.
"""

from __future__ import annotations

import zoneinfo
from decimal import Decimal

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator, ProhibitNullCharactersValidator, RegexValidator
from django.db import models

# On the names people type (the admin's forms and the API's serializers refuse a NUL byte; PostgreSQL cannot
# store one), so that a row validated by ``full_clean`` alone (``manage.py enroll_node``) is refused as well.
NO_NUL = [ProhibitNullCharactersValidator()]


def validate_time_zone(value: str) -> None:
    if value not in zoneinfo.available_timezones():
        raise ValidationError(f"{value!r} is not an IANA time zone (e.g. Europe/Berlin)")


class Organization(models.Model):
    name = models.CharField(max_length=200, unique=True, validators=NO_NUL)
    slug = models.SlugField(max_length=200, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Role(models.TextChoices):
    ADMIN = "admin", "Admin"
    FINANCE = "finance", "Finance"
    SUSTAINABILITY = "sustainability", "Sustainability"
    ENGINEER = "engineer", "Engineer"
    VIEWER = "viewer", "Viewer"


class Membership(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=20, choices=Role.choices, default=Role.VIEWER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "organization"], name="membership_unique_user_org")]

    def __str__(self) -> str:
        return f"{self.user} in {self.organization} ({self.role})"


class Site(models.Model):
    """Where nodes draw power: the grid zone sets carbon intensity, the PUE the facility overhead."""

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="sites")
    name = models.CharField(max_length=200, validators=NO_NUL)
    grid_zone = models.CharField(
        max_length=64,
        blank=True,
        help_text="Electricity Maps zone, e.g. US-CAL-CISO, DE, SE-SE3. Empty: carbon cannot be computed.",
        validators=[RegexValidator(r"^[A-Za-z]{2}(-[A-Za-z0-9]+)*$", "a zone looks like DE, SE-SE3 or US-CAL-CISO")],
    )
    country = models.CharField(
        max_length=2,
        blank=True,
        help_text="ISO 3166-1 alpha-2 country code",
        validators=[RegexValidator(r"^[A-Z]{2}$", "a two-letter upper-case country code, e.g. DE")],
    )
    pue = models.DecimalField(
        "PUE",
        max_digits=4,
        decimal_places=2,
        default=Decimal("1.00"),
        validators=[MinValueValidator(Decimal("1.00"))],
        help_text="Power usage effectiveness: facility energy / IT energy (1.0 or more)",
    )
    currency = models.CharField(
        max_length=3, default="USD", validators=[RegexValidator(r"^[A-Z]{3}$", "an ISO 4217 code, e.g. USD")]
    )
    time_zone = models.CharField(max_length=64, default="UTC", validators=[validate_time_zone])
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["organization", "name"], name="site_unique_org_name"),
            models.CheckConstraint(condition=models.Q(pue__gte=1), name="site_pue_at_least_one"),
        ]

    def __str__(self) -> str:
        return self.name


class Fleet(models.Model):
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="fleets")
    name = models.CharField(max_length=200, validators=NO_NUL)
    description = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["organization", "name"], name="fleet_unique_org_name")]

    def __str__(self) -> str:
        return self.name


class Tenure(models.TextChoices):
    RENTED = "rented", "Rented"
    OWNED = "owned", "Owned"


class Node(models.Model):
    """One GPU host. Its organization is its fleet's; its site must belong to the same one."""

    fleet = models.ForeignKey(Fleet, on_delete=models.PROTECT, related_name="nodes")
    site = models.ForeignKey(Site, on_delete=models.PROTECT, related_name="nodes")
    hostname = models.CharField(max_length=253, validators=NO_NUL)
    tenure = models.CharField(max_length=10, choices=Tenure.choices, default=Tenure.RENTED)
    commissioned_at = models.DateTimeField(null=True, blank=True)
    decommissioned_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["hostname"]
        constraints = [
            models.UniqueConstraint(fields=["fleet", "hostname"], name="node_unique_fleet_hostname"),
            models.CheckConstraint(
                condition=models.Q(decommissioned_at__isnull=True)
                | models.Q(commissioned_at__isnull=True)
                | models.Q(decommissioned_at__gte=models.F("commissioned_at")),
                name="node_decommissioned_after_commissioned",
            ),
        ]

    def __str__(self) -> str:
        return self.hostname

    def clean(self) -> None:
        if self.fleet_id and self.site_id and self.fleet.organization_id != self.site.organization_id:
            raise ValidationError({"site": "The site must belong to the fleet's organization."})


class Gpu(models.Model):
    """A GPU as NVML reports it, keyed by its UUID; appears in the inventory on first report."""

    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="gpus")
    uuid = models.CharField("NVML UUID", max_length=96, unique=True)
    index = models.PositiveSmallIntegerField(help_text="NVML device index on the node")
    name = models.CharField("NVML name", max_length=128, help_text="e.g. NVIDIA H100 80GB HBM3")
    energy_counter_supported = models.BooleanField(
        null=True, help_text="Whether NVML's total-energy counter works on this GPU, as its collector last reported"
    )
    first_seen_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["node", "index"]
        verbose_name = "GPU"

    def __str__(self) -> str:
        return f"{self.node}#{self.index} {self.name}"


class GpuEnded(models.TextChoices):
    MISSING = "missing", "not reported for longer than the grace period"
    REPLACED = "replaced", "the node reported a different set of GPUs"


class GpuInstallation(models.Model):
    """A stretch of time a GPU was installed in its node: a hardware change on the node's record.

    Opened at the GPU's first sample (again at the first after an end: a card
    that comes back is the same GPU and the same asset); ended at the time it
    was last seen, once it is known to be gone. The ledger charges rent,
    embodied carbon and idle time only for GPUs installed in an hour.
    """

    gpu = models.ForeignKey(Gpu, on_delete=models.CASCADE, related_name="installations")
    installed_at = models.DateTimeField(help_text="its first sample of this stretch")
    ended_at = models.DateTimeField(null=True, blank=True, help_text="its last sample before it went missing")
    ended_reason = models.CharField(max_length=10, choices=GpuEnded.choices, blank=True)

    class Meta:
        ordering = ["gpu", "installed_at"]
        constraints = [
            models.UniqueConstraint(fields=["gpu", "installed_at"], name="gpuinstallation_unique_gpu_start"),
            models.CheckConstraint(
                condition=models.Q(ended_at__isnull=True) | models.Q(ended_at__gte=models.F("installed_at")),
                name="gpuinstallation_ended_after_installed",
            ),
        ]

    def __str__(self) -> str:
        until = self.ended_at.isoformat() if self.ended_at else "now"
        return f"{self.gpu} installed {self.installed_at.isoformat()} to {until}"


class NodeCredential(models.Model):
    """A node's bearer token. Only its SHA-256 is stored; the token is shown once at issue."""

    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="credentials")
    token_sha256 = models.CharField(max_length=64, unique=True, editable=False)
    prefix = models.CharField(max_length=16, editable=False, help_text="First characters, to tell tokens apart")
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        state = "revoked" if self.revoked_at else "active"
        return f"{self.prefix}… for {self.node} ({state})"


class TokenScope(models.TextChoices):
    """What a personal token may read: the reports API, or only ``/metrics`` (a Prometheus scraper's)."""

    REPORTS = "reports", "reports API"
    METRICS = "metrics", "/metrics only (read-only, for Prometheus)"


class PersonalToken(models.Model):
    """A person's bearer token for report clients (``wlp_...``), shown once; only its SHA-256 is stored.

    It speaks for its user with the user's own memberships, on the reports API
    only, or (``scope`` metrics) on ``/metrics`` only; it cannot mint other tokens
    (that needs a browser session).
    """

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="personal_tokens")
    name = models.CharField(max_length=100, help_text="what the token is for, e.g. 'carbon reporting tool'")
    token_sha256 = models.CharField(max_length=64, unique=True, editable=False)
    prefix = models.CharField(max_length=16, editable=False, help_text="First characters, to tell tokens apart")
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True, help_text="empty: until revoked")
    scope = models.CharField(max_length=16, choices=TokenScope.choices, default=TokenScope.REPORTS)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        state = "revoked" if self.revoked_at else "active"
        return f"{self.prefix}… {self.name} of {self.user} ({state})"
