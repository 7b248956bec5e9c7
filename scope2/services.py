"""Writes to the instrument register: create, update, attach evidence; each refused whole or done whole.

Every write locks the organization's row first, so that two concurrent claims
on one certificate or one site cannot both pass the over-allocation checks.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.db import transaction

from common.periods import hour_instant_problem
from fleets.models import Organization
from scope2.claims import Claim, certificate_check, profile_check, share_check
from scope2.models import ContractualInstrument, InstrumentHour
from scope2.quality import Technology, effective_factor_g_per_kwh

EVIDENCE_MAX_BYTES = 5 * 1024 * 1024

FIELDS = (
    "site", "kind", "name", "volume_mwh", "share_of_consumption", "delivery_start", "delivery_end", "vintage_year",
    "generation_zone", "technology", "emission_factor_gco2e_per_kwh", "certificate_ref", "certificate_mwh",
    "evidence_reference", "registry", "certificate_id_from", "certificate_id_to", "cancellation_date", "beneficiary",
    "consumption_period_start", "consumption_period_end", "purchase_type", "attributes_exclusive",
    "supplier_rate_delivered_basis", "biogenic_co2_g_per_kwh",
)  # fmt: skip


class InstrumentInvalid(ValueError):
    """An instrument that cannot be registered as given; the message says why."""


def _validate(instrument: ContractualInstrument, profile: Sequence[tuple[datetime, Decimal]] | None) -> None:
    if instrument.site.organization_id != instrument.organization_id:
        raise InstrumentInvalid(f"site {instrument.site_id} is not a site of this organization")
    if (instrument.volume_mwh is None) == (instrument.share_of_consumption is None):
        raise InstrumentInvalid("give exactly one of volume_mwh and share_of_consumption")
    for name in ("delivery_start", "delivery_end"):
        if problem := hour_instant_problem(getattr(instrument, name)):
            raise InstrumentInvalid(f"{name} {problem}")
    if instrument.delivery_end <= instrument.delivery_start:
        raise InstrumentInvalid("delivery_end must be after delivery_start")
    stated = instrument.emission_factor_gco2e_per_kwh
    if effective_factor_g_per_kwh(technology=instrument.technology, stated=stated) is None:
        raise InstrumentInvalid(f"state emission_factor_gco2e_per_kwh: {instrument.technology} is not zero-emission")
    if instrument.certificate_mwh is not None and not instrument.certificate_ref:
        raise InstrumentInvalid("certificate_mwh needs certificate_ref (the registry id of the batch)")
    _validate_evidence(instrument)
    if profile:
        _validate_profile(instrument, profile)


def _validate_evidence(instrument: ContractualInstrument) -> None:
    """What is stated must hang together; what is missing is not refused here but fails the evidence criterion."""
    if instrument.technology == Technology.BIOMASS and instrument.biogenic_co2_g_per_kwh is None:
        raise InstrumentInvalid(
            "biogenic_co2_g_per_kwh: a biomass instrument states the CO2 of its combustion (reported as a memo "
            "outside the scopes, GHG Protocol Scope 2 Guidance 6.12)"
        )
    if instrument.technology != Technology.BIOMASS and instrument.biogenic_co2_g_per_kwh is not None:
        raise InstrumentInvalid(
            f"biogenic_co2_g_per_kwh: only a biomass instrument has one, not {instrument.technology}"
        )
    start, end = instrument.consumption_period_start, instrument.consumption_period_end
    if start is not None and end is not None and end < start:
        raise InstrumentInvalid("consumption_period_end must not be before consumption_period_start")
    if instrument.certificate_id_to and not instrument.certificate_id_from:
        raise InstrumentInvalid("certificate_id_to needs certificate_id_from (the first id of the range)")


def _validate_profile(instrument: ContractualInstrument, profile: Sequence[tuple[datetime, Decimal]]) -> None:
    if instrument.volume_mwh is None:
        raise InstrumentInvalid("an hourly profile needs volume_mwh (a share has no profile)")
    hours = [hour for hour, _ in profile]
    if len(set(hours)) != len(hours):
        raise InstrumentInvalid("hourly_profile repeats an hour")
    for hour in hours:
        if hour.minute or hour.second or hour.microsecond:
            raise InstrumentInvalid(f"hourly_profile: {hour.isoformat()} is not on a whole hour")
        if not instrument.delivery_start <= hour < instrument.delivery_end:
            raise InstrumentInvalid(f"hourly_profile: {hour.isoformat()} is outside the delivery period")
    profile_check(name=instrument.name, volume_mwh=instrument.volume_mwh, profile_mwh=(mwh for _, mwh in profile))


def _claim(instrument: ContractualInstrument, amount: Decimal | None) -> Claim:
    return Claim(
        instrument.pk, instrument.name, instrument.delivery_start, instrument.delivery_end, amount or Decimal(0)
    )


def _check_claims(instrument: ContractualInstrument) -> None:
    others = ContractualInstrument.objects.filter(organization_id=instrument.organization_id).exclude(pk=instrument.pk)
    if instrument.certificate_ref and instrument.volume_mwh is not None:
        same = [
            _claim(other, other.volume_mwh)
            for other in others.filter(certificate_ref=instrument.certificate_ref, volume_mwh__isnull=False)
        ]
        # The batch's size may be stated on any of its rows (the first one entered, usually).
        held = instrument.certificate_mwh
        if held is None:
            held = (
                others.filter(certificate_ref=instrument.certificate_ref, certificate_mwh__isnull=False)
                .values_list("certificate_mwh", flat=True)
                .first()
            )
        if held is not None:
            certificate_check(
                ref=instrument.certificate_ref, certificate_mwh=held,
                claim=_claim(instrument, instrument.volume_mwh), others=same,
            )  # fmt: skip
    if instrument.share_of_consumption is not None:
        shares = others.filter(site_id=instrument.site_id, share_of_consumption__isnull=False)
        share_check(
            site=instrument.site.name,
            claim=_claim(instrument, instrument.share_of_consumption),
            others=[_claim(other, other.share_of_consumption) for other in shares],
        )


def _save(instrument: ContractualInstrument, profile: Sequence[tuple[datetime, Decimal]] | None) -> None:
    _validate(instrument, profile if profile is not None else _stored_profile(instrument))
    _check_claims(instrument)
    instrument.save()
    if profile is not None:
        InstrumentHour.objects.filter(instrument=instrument).delete()
        InstrumentHour.objects.bulk_create(
            [InstrumentHour(instrument=instrument, hour_start=hour, mwh=mwh) for hour, mwh in profile],
            batch_size=2000,  # a year of hours in five statements
        )


def _stored_profile(instrument: ContractualInstrument) -> list[tuple[datetime, Decimal]]:
    if instrument.pk is None:
        return []
    return list(InstrumentHour.objects.filter(instrument=instrument).values_list("hour_start", "mwh"))


def instrument_create(
    *, organization: Organization, data: Mapping[str, Any], profile: Sequence[tuple[datetime, Decimal]] | None = None
) -> ContractualInstrument:
    """Register an instrument; ``InstrumentInvalid`` or ``OverAllocationError`` refuses it and changes nothing."""
    with transaction.atomic():
        Organization.objects.select_for_update().filter(pk=organization.pk).first()
        instrument = ContractualInstrument(organization=organization, **{k: v for k, v in data.items() if k in FIELDS})
        _save(instrument, profile or [])
    return instrument


def instrument_update(
    *,
    instrument: ContractualInstrument,
    data: Mapping[str, Any],
    profile: Sequence[tuple[datetime, Decimal]] | None = None,
) -> ContractualInstrument:
    """Change the fields given (``profile=None`` keeps the hourly profile, ``[]`` removes it)."""
    with transaction.atomic():
        Organization.objects.select_for_update().filter(pk=instrument.organization_id).first()
        instrument = ContractualInstrument.objects.select_related("site").get(pk=instrument.pk)
        for name, value in data.items():
            if name in FIELDS:
                setattr(instrument, name, value)
        _save(instrument, profile)
    return instrument


def instrument_evidence_attach(*, instrument: ContractualInstrument, name: str, content: bytes) -> None:
    if len(content) > EVIDENCE_MAX_BYTES:
        raise InstrumentInvalid(f"evidence files are limited to {EVIDENCE_MAX_BYTES // (1024 * 1024)} MiB")
    if not content:
        raise InstrumentInvalid("the evidence file is empty")
    ContractualInstrument.objects.filter(pk=instrument.pk).update(
        evidence_file=content, evidence_file_name=name[:200], evidence_file_sha256=hashlib.sha256(content).hexdigest()
    )
