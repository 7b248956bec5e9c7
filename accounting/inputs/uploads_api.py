"""``POST /api/v1/node-prices/upload/``, ``/api/v1/instruments/upload/``, ``/api/v1/residual-mixes/upload/``:
CSV files, checked row by row.

Columns: ``fleet`` (name), ``node`` (hostname; empty: the fleet default),
``kind``, ``rate_per_h``, ``rate_per``, ``includes_power``, ``capex``,
``lifetime_years``, ``opex_per_h``, ``valid_from``, ``valid_to`` (ISO 8601).
All rows are saved, or none: a refused file answers 400 with each refused
line, its cells and the reason. Instruments: the columns of the register's
API (``site`` by name; no hourly profile), each checked for over-allocation
against the register and the rows before it. Residual mixes:
``zone,year,gco2e_per_kwh,source`` (``scope2.residual_mixes``).
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

from accounting.inputs.api import NodePriceInputSerializer
from accounting.inputs.services import InputChange, node_price_save
from accounting.inputs.uploads import UPLOAD_MAX_BYTES, UploadInvalid, csv_rows, rows_save
from accounting.models import NodePrice
from common.api import ERRORS, InputView
from common.scope import report_organization
from fleets.models import Fleet, Node, Organization
from fleets.permissions import Capability, change_check


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
