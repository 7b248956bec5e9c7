"""The Scope 2 register's CSV uploads (instruments, residual mixes): columns, row serializers and savers,
run by a worker on the ledger's upload kit (``accounting.inputs.upload_runs``)."""

from __future__ import annotations

from typing import Any

from django.utils import timezone
from rest_framework import serializers

from accounting.inputs.services import InputChange
from accounting.inputs.upload_runs import UploadSpec
from accounting.models import InputUpload
from common.api import Conflict, InputInvalid
from fleets.models import Organization, Site
from governance.audited_write import audited_write
from scope2.api import InstrumentInputSerializer
from scope2.claims import OverAllocationError
from scope2.models import ResidualMixFactor
from scope2.residual_mixes import RESIDUAL_MIX_COLUMNS, ResidualMixCsvSerializer, residual_mix_save
from scope2.services import InstrumentInvalid, instrument_create


class InstrumentCsvSerializer(InstrumentInputSerializer):
    site = serializers.CharField(max_length=200, help_text="the site's name")  # type: ignore[assignment]


def _instrument_saver(organization: Organization, user: Any) -> Any:
    def save(data: dict[str, Any]) -> InputChange:
        data.pop("organization", None)
        data.pop("hourly_profile", None)
        data["site"] = Site.objects.filter(organization=organization, name=data["site"]).first()
        if data["site"] is None:
            raise LookupError("site: no site of that name in this organization")
        try:
            instrument = audited_write(
                organization_id=organization.pk, user=user, subject="instrument", before=None,
                write=lambda: instrument_create(organization=organization, data=data),
                period=lambda row: (row.delivery_start, row.delivery_end),
            )  # fmt: skip
        except (InstrumentInvalid, OverAllocationError) as error:
            raise InputInvalid(str(error)) from error
        except Conflict as error:
            raise InputInvalid(str(error.detail)) from error
        return InputChange(instrument, 0)

    return save


def _residual_mix_saver(organization: Organization, user: Any) -> Any:
    now = timezone.now()

    def save(data: dict[str, Any]) -> InputChange:
        return residual_mix_save(row=ResidualMixFactor(organization=organization, **data), user=user, now=now)

    return save


INSTRUMENTS_UPLOAD = UploadSpec(
    kind=InputUpload.Kind.INSTRUMENTS,
    required=frozenset({"site", "kind", "name", "delivery_start", "delivery_end", "vintage_year", "generation_zone",
                        "technology"}),
    serializer=InstrumentCsvSerializer,
    saver=_instrument_saver,
)  # fmt: skip
RESIDUAL_MIXES_UPLOAD = UploadSpec(
    kind=InputUpload.Kind.RESIDUAL_MIXES,
    required=frozenset(RESIDUAL_MIX_COLUMNS),
    serializer=ResidualMixCsvSerializer,
    saver=_residual_mix_saver,
)
