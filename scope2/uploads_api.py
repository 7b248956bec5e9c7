"""The Scope 2 register's CSV uploads (instruments, residual mixes) on the ledger's upload kit."""

from __future__ import annotations

from typing import Any

from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from accounting.inputs.services import InputChange
from accounting.inputs.uploads_api import CsvUploadView, upload_schema
from common.api import ERRORS, Conflict, InputInvalid, InputView, OrganizationRowSerializer
from fleets.models import Organization, Site
from fleets.permissions import Capability
from fleets.selectors import organizations_for_user
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


class InstrumentsUploadView(CsvUploadView):
    capability = Capability.SUSTAINABILITY
    required = {"site", "kind", "name", "delivery_start", "delivery_end", "vintage_year", "generation_zone",
                "technology"}  # fmt: skip
    serializer = InstrumentCsvSerializer

    def saver(self, organization: Organization, user: Any) -> Any:
        return _instrument_saver(organization, user)

    @upload_schema("instruments_upload", "Instruments", "Instrument")
    def post(self, request: Request) -> Response:
        return super().post(request)


def _residual_mix_saver(organization: Organization, user: Any) -> Any:
    now = timezone.now()

    def save(data: dict[str, Any]) -> InputChange:
        return residual_mix_save(row=ResidualMixFactor(organization=organization, **data), user=user, now=now)

    return save


class ResidualMixesUploadView(CsvUploadView):
    """Residual mixes the organization holds (e.g. the AIB's, licensed): a zone and year held is replaced."""

    capability = Capability.SUSTAINABILITY
    required = RESIDUAL_MIX_COLUMNS
    serializer = ResidualMixCsvSerializer

    def saver(self, organization: Organization, user: Any) -> Any:
        return _residual_mix_saver(organization, user)

    @upload_schema("residual_mixes_upload", "Residual-mix factors (zone, year, gco2e_per_kwh, source)", "ResidualMix")
    def post(self, request: Request) -> Response:
        return super().post(request)


class ResidualMixOutputSerializer(OrganizationRowSerializer):
    zone = serializers.CharField()
    year = serializers.IntegerField()
    gco2e_per_kwh = serializers.DecimalField(max_digits=9, decimal_places=3)
    source = serializers.CharField()  # type: ignore[assignment]


class ResidualMixesView(InputView):
    @extend_schema(
        operation_id="residual_mixes_list", responses={200: ResidualMixOutputSerializer(many=True), **ERRORS}
    )
    def get(self, request: Request) -> Response:
        rows = ResidualMixFactor.objects.filter(organization__in=organizations_for_user(user=request.user))
        return Response(ResidualMixOutputSerializer(rows.order_by("zone", "year"), many=True).data)
