"""The Scope 2 register's CSV uploads (instruments, residual mixes) on the ledger's upload kit: stored by the
POST (202), checked by a worker (``scope2.tasks``), followed at ``/api/v1/uploads/<id>/``."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from accounting.inputs.uploads_api import CsvUploadView, upload_schema
from common.api import ERRORS, InputView, OrganizationRowSerializer
from fleets.permissions import Capability
from fleets.selectors import organizations_for_user
from scope2.models import ResidualMixFactor
from scope2.tasks import instruments_upload_task, residual_mixes_upload_task
from scope2.uploads import INSTRUMENTS_UPLOAD, RESIDUAL_MIXES_UPLOAD


@upload_schema("instruments_upload", "Instruments", "Instrument")
class InstrumentsUploadView(CsvUploadView):
    capability = Capability.SUSTAINABILITY
    spec = INSTRUMENTS_UPLOAD
    task = instruments_upload_task


@upload_schema("residual_mixes_upload", "Residual-mix factors (zone, year, gco2e_per_kwh, source)", "ResidualMix")
class ResidualMixesUploadView(CsvUploadView):
    """Residual mixes the organization holds (e.g. the AIB's, licensed): a zone and year held is replaced."""

    capability = Capability.SUSTAINABILITY
    spec = RESIDUAL_MIXES_UPLOAD
    task = residual_mixes_upload_task


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
