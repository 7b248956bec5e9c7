"""An organization's hardware profiles (overriding the shipped catalog) and GPUs as assets."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import models

from common.periods import day_start, instant_problem
from fleets.models import Gpu, Organization

__all__ = ["GpuAsset", "HardwareProfile"]


def _kg(verbose_name: str) -> models.DecimalField:
    return models.DecimalField(
        verbose_name, max_digits=10, decimal_places=3, validators=[MinValueValidator(Decimal(0))]
    )


class HardwareProfile(models.Model):
    """An organization's own figures for a GPU model; it wins over the shipped catalog entry.

    Matched to GPUs by NVML name like the catalog (``accounting.hardware``). Each
    figure keeps its sources, so a report can say where a number came from.
    """

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="hardware_profiles")
    key = models.SlugField(max_length=64, help_text="e.g. h100-sxm; the same key as a catalog entry overrides it")
    display_name = models.CharField(max_length=128)
    nvml_names = models.JSONField(default=list, help_text='NVML device names, e.g. ["NVIDIA H100 80GB HBM3"]')
    gpu_class = models.CharField(max_length=16, choices=[("enterprise", "Enterprise"), ("consumer", "Consumer")])
    tdp_w = models.PositiveIntegerField("TDP (W)")
    idle_w = models.PositiveIntegerField("Idle power (W)")
    memory_gb = models.PositiveIntegerField("Memory (GB)")
    embodied_low_kgco2e = _kg("Embodied, low (kgCO2e)")
    embodied_central_kgco2e = _kg("Embodied, central (kgCO2e)")
    embodied_high_kgco2e = _kg("Embodied, high (kgCO2e)")
    host_embodied_kgco2e_per_gpu = _kg("Host embodied share per GPU (kgCO2e)")
    lifetime_years = models.DecimalField(
        max_digits=5, decimal_places=2, default=Decimal(4), validators=[MinValueValidator(Decimal("0.1"))]
    )
    sources = models.JSONField(default=list, help_text='[{"what": ..., "title": ..., "url": ..., "year": ...}]')
    host_idle_w = models.DecimalField(
        "Host idle power (W)", max_digits=8, decimal_places=2, null=True, blank=True,
        help_text="the host's power beyond its GPUs at idle; with the per-GPU figure, models host energy where "
        "the node has no meter (cite it in sources as host_power_w)",
    )  # fmt: skip
    host_per_gpu_w = models.DecimalField(
        "Host power per GPU (W)", max_digits=8, decimal_places=2, null=True, blank=True,
        help_text="the host's power per GPU it carries (CPUs, NVSwitch, fans, power-supply losses)",
    )  # fmt: skip

    class Meta:
        ordering = ["key"]
        constraints = [models.UniqueConstraint(fields=["organization", "key"], name="hardwareprofile_unique_key")]

    def __str__(self) -> str:
        return self.display_name

    def clean(self) -> None:
        low, central, high = self.embodied_low_kgco2e, self.embodied_central_kgco2e, self.embodied_high_kgco2e
        if None not in (low, central, high) and not low <= central <= high:
            raise ValidationError("embodied carbon must satisfy low <= central <= high")
        if not isinstance(self.nvml_names, list) or not all(isinstance(n, str) and n for n in self.nvml_names):
            raise ValidationError({"nvml_names": "a list of NVML device names"})


class GpuAsset(models.Model):
    """A GPU as an asset: when and how it was acquired, so embodied carbon follows its own life.

    ``node_price``: the owned price the card was bought under (optional), so that the node's book value and
    the card's embodied carbon are one asset record; without ``acquired_on`` the card goes into service when
    that price (else the node's first owned price) puts the node in service (``accounting.ledger.in_service``).
    """

    class Condition(models.TextChoices):
        NEW = "new", "New"
        SECOND_HAND = "second_hand", "Second-hand"

    gpu = models.OneToOneField(Gpu, on_delete=models.CASCADE, related_name="asset")
    acquired_on = models.DateField(null=True, blank=True)
    condition = models.CharField(max_length=12, choices=Condition.choices, default=Condition.NEW)
    prior_use_years = models.DecimalField(
        max_digits=5, decimal_places=2, default=Decimal(0), validators=[MinValueValidator(Decimal(0))]
    )
    expected_own_years = models.DecimalField(
        max_digits=5,
        decimal_places=2,
        null=True,
        blank=True,
        validators=[MinValueValidator(Decimal("0.1"))],
        help_text="years we expect to use it; empty: the rest of its expected life",
    )
    profile_key = models.SlugField(
        max_length=64, blank=True, help_text="a catalog or organization profile key, when its NVML name does not match"
    )
    node_price = models.ForeignKey(
        "accounting.NodePrice", on_delete=models.SET_NULL, null=True, blank=True, related_name="gpu_assets",
        help_text="the owned price (the node's, or its fleet's default) the card was bought under; empty: the "
        "node's first owned price, if any",
    )  # fmt: skip

    class Meta:
        verbose_name = "GPU asset"

    def __str__(self) -> str:
        return f"asset of {self.gpu}"

    def clean(self) -> None:
        # Its embodied life runs from midnight UTC of that day: in the dated inputs' range, so its end is too.
        if self.acquired_on is not None and (problem := instant_problem(day_start(self.acquired_on))):
            raise ValidationError({"acquired_on": problem})
        if self.condition == self.Condition.NEW and self.prior_use_years:
            raise ValidationError({"prior_use_years": "a new GPU has no prior use"})
        if self.node_price is not None:
            self._node_price_clean(self.node_price)

    def _node_price_clean(self, price: Any) -> None:
        node = self.gpu.node
        if price.kind != "owned":
            raise ValidationError({"node_price": "only an owned price buys a card"})
        if price.fleet_id != node.fleet_id or price.node_id not in (None, node.pk):
            raise ValidationError({"node_price": "the price must be the card's node's, or its fleet's default"})
