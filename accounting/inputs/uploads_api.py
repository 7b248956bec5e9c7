"""``POST /api/v1/node-prices/upload/``, ``/api/v1/instruments/upload/``, ``/api/v1/residual-mixes/upload/``:
CSV files, checked row by row.

Columns: ``fleet`` (name), ``node`` (hostname; empty: the fleet default),
``kind``, ``rate_per_h``, ``rate_per``, ``includes_power``, ``capex``,
``lifetime_years``, ``opex_per_h``, ``valid_from``, ``valid_to`` (ISO 8601).
All rows are saved, or none: a refused file answers 400 with each refused
line, its cells and the reason. Instruments: the columns of the register's
API (``site`` by name; no hourly profile), each checked for over-allocation
against the register and the rows before it. Residual mixes:
``zone,year,gco2e_per_kwh,source`` (``accounting.inputs.residual_mixes``).
"""

from __future__ import annotations

from typing import Any

from django.utils import timezone
from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from accounting.inputs.api import ERRORS, InputView, NodePriceInputSerializer
from accounting.inputs.hooks import Conflict, audited_write
from accounting.inputs.residual_mixes import RESIDUAL_MIX_COLUMNS, ResidualMixCsvSerializer, residual_mix_save
from accounting.inputs.services import InputChange, InputInvalid, node_price_save
from accounting.inputs.uploads import UPLOAD_MAX_BYTES, UploadInvalid, csv_rows, rows_save
from accounting.instruments.api import InstrumentInputSerializer
from accounting.instruments.claims import OverAllocationError
from accounting.instruments.models import ResidualMixFactor
from accounting.instruments.services import InstrumentInvalid, instrument_create
from accounting.models import NodePrice
from accounting.reports.scope import report_organization
from fleets.models import Fleet, Node, Organization, Site
from fleets.permissions import Capability, change_check
from fleets.selectors import organizations_for_user


class NodePriceCsvSerializer(NodePriceInputSerializer):
    fleet = serializers.CharField(max_length=200, help_text="the fleet's name")  # type: ignore[assignment]
    node = serializers.CharField(max_length=253, required=False, help_text="hostname; empty: fleet default")  # type: ignore[assignment]


def _price_saver(organization: Organization, user: Any) -> Any:
    now = timezone.now()

    def save(data: dict[str, Any]) -> InputChange:
        fleet = Fleet.objects.filter(organization=organization, name=data.pop("fleet")).first()
        if fleet is None:
            raise LookupError("fleet: no fleet of that name in this organization")
        hostname = data.pop("node", None)
        node = None if hostname is None else Node.objects.filter(fleet=fleet, hostname=hostname).first()
        if hostname is not None and node is None:
            raise LookupError(f"node: no node {hostname} in fleet {fleet.name}")
        return node_price_save(price=NodePrice(fleet=fleet, node=node), data=data, user=user, now=now)

    return save


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


def upload_schema(operation_id: str, what: str, component: str) -> Any:
    return extend_schema(
        operation_id=operation_id,
        summary=f"{what} from a CSV file (multipart field 'file'); all rows saved, or none with the reasons",
        request={"multipart/form-data": inline_serializer(
            f"{component}Upload",
            {"file": serializers.FileField(), "organization": serializers.CharField(required=False)},
        )},
        responses={
            201: inline_serializer(f"{component}UploadSaved", {
                "saved": serializers.IntegerField(), "ledger_hours_reopened": serializers.IntegerField(),
            }),
            400: OpenApiResponse(description="unreadable file, or refused rows: {detail, refused: [{line, row, "
                                             "reason}]}; nothing was saved"),
            **{code: response for code, response in ERRORS.items() if code != 400},
        },
    )  # fmt: skip


class CsvUploadView(InputView):
    """Shared by the uploads: organization and role, the file, the answer (201, or 400 with refused rows)."""

    parser_classes = [MultiPartParser, FormParser]
    capability = Capability.PRICES
    required: set[str] = set()
    serializer: type[serializers.Serializer] = serializers.Serializer

    def saver(self, organization: Organization, user: Any) -> Any:
        raise NotImplementedError

    def post(self, request: Request) -> Response:
        organization = report_organization(user=request.user, ref=request.POST.get("organization"))
        change_check(user=request.user, organization=organization, capability=self.capability)
        upload = request.FILES.get("file")
        if upload is None:
            raise ValidationError({"detail": "send the CSV as the multipart field 'file'"})
        if upload.size is not None and upload.size > UPLOAD_MAX_BYTES:  # refused before it is read into memory
            raise ValidationError({"detail": f"files are limited to {UPLOAD_MAX_BYTES} bytes"})
        try:
            rows = csv_rows(upload.read(), required=self.required)
            result = rows_save(rows, serializer=self.serializer, save=self.saver(organization, request.user))
        except UploadInvalid as error:
            raise ValidationError({"detail": str(error)}) from error
        if result.refused:
            detail = f"{len(result.refused)} row(s) refused; nothing was saved"
            return Response({"detail": detail, "refused": result.refused}, status=status.HTTP_400_BAD_REQUEST)
        body = {"saved": result.saved, "ledger_hours_reopened": result.ledger_hours_reopened}
        return Response(body, status=status.HTTP_201_CREATED)


class NodePricesUploadView(CsvUploadView):
    required = {"fleet", "kind", "valid_from"}
    serializer = NodePriceCsvSerializer

    def saver(self, organization: Organization, user: Any) -> Any:
        return _price_saver(organization, user)

    @upload_schema("node_prices_upload", "Node prices", "NodePrice")
    def post(self, request: Request) -> Response:
        return super().post(request)


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


class ResidualMixOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    organization_id = serializers.IntegerField()
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
