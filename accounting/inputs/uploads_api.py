"""``POST /api/v1/node-prices/upload/``, ``/api/v1/exchange-rates/upload/``, ``/api/v1/instruments/upload/``,
``/api/v1/residual-mixes/upload/``: CSV files, checked row by row.

Columns: ``fleet`` (name), ``node`` (hostname; empty: the fleet default),
``kind``, ``rate_per_h``, ``rate_per``, ``includes_power``, ``capex``,
``lifetime_years``, ``opex_per_h``, ``valid_from``, ``valid_to`` (ISO 8601).
All rows are saved, or none. The POST checks the file's size and header,
counts its rows, stores it and answers 202 with the upload's status
(``GET /api/v1/uploads/<id>/``, also the ``Location``); a worker checks and
saves the rows (``accounting.inputs.upload_runs``). Once ``done``, the status
holds the answer the upload gives: ``result_status`` 201 and
``result`` ``{saved, ledger_hours_reopened}``, or 400 and ``{detail, refused}``
with each refused line, its cells and the reason. One upload per organization
at a time: another POST meanwhile is 409. Instruments: the columns of the register's
API (``site`` by name; no hourly profile), each checked for over-allocation
against the register and the rows before it. Residual mixes:
``zone,year,gco2e_per_kwh,source`` (``scope2.residual_mixes``). Exchange rates
(``/api/v1/exchange-rates/upload/``): ``currency,quote_currency,month,kind,rate,source``
(``kind`` and ``source`` may be left out: average, no source).
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone
from drf_spectacular.utils import OpenApiRequest, OpenApiResponse, extend_schema, extend_schema_view, inline_serializer
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from accounting.inputs.upload_kinds import EXCHANGE_RATES_UPLOAD, NODE_PRICES_UPLOAD
from accounting.inputs.upload_runs import UploadBusy, UploadSpec, upload_store, uploads_lapse
from accounting.inputs.uploads import UPLOAD_MAX_BYTES, UploadInvalid
from accounting.models import InputUpload
from accounting.tasks import exchange_rates_upload_task, node_prices_upload_task
from common.api import ERRORS, Conflict, InputView, OrganizationRowSerializer, owned
from common.scope import report_organization
from fleets.permissions import Capability, change_check
from fleets.selectors import organizations_for_user


class UploadProgressSerializer(serializers.Serializer):
    rows_done = serializers.IntegerField()
    rows_total = serializers.IntegerField()


class UploadStatusSerializer(OrganizationRowSerializer):
    kind = serializers.ChoiceField(choices=InputUpload.Kind.choices)
    file_name = serializers.CharField()
    state = serializers.ChoiceField(choices=InputUpload.State.choices, help_text="queued, running, done or failed")
    progress = UploadProgressSerializer(source="*")
    result_status = serializers.IntegerField(
        allow_null=True, help_text="once done: 201 (every row saved) or 400 (refused rows; nothing saved)"
    )
    result = serializers.JSONField(
        allow_null=True,
        help_text="once done, what the upload answers: {saved, ledger_hours_reopened}, or {detail, refused: "
        "[{line, row, reason}]}",
    )
    error = serializers.CharField(help_text="why the run failed (its worker stopped, an unexpected error)")
    status_url = serializers.SerializerMethodField()
    created_by = serializers.CharField(source="created_by.username", allow_null=True, default=None)
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)

    def get_status_url(self, upload: InputUpload) -> str:
        return upload_status_url(upload.pk)


def upload_status_url(upload_id: int) -> str:
    return f"/api/v1/uploads/{upload_id}/"


BUSY = {409: OpenApiResponse(description="another upload of the organization is queued or running; nothing stored")}


def upload_schema(operation_id: str, what: str, component: str) -> Any:
    """The upload view's POST in the schema, as a class decorator: ``CsvUploadView.post`` serves every kind."""
    return extend_schema_view(post=extend_schema(
        operation_id=operation_id,
        summary=f"{what} from a CSV file (multipart field 'file'), checked by a worker: follow the status URL; "
        "all rows saved, or none with the reasons",
        # The file part is a CSV (UTF-8, the kind's header, at most UPLOAD_MAX_ROWS rows): its media type is stated;
        # what is inside a file no schema of a part can state, so a file the API cannot read is a 400 saying why.
        request={"multipart/form-data": OpenApiRequest(
            inline_serializer(
                f"{component}Upload",
                {"file": serializers.FileField(help_text="the CSV, UTF-8"),
                 "organization": serializers.CharField(required=False)},
            ),
            encoding={"file": {"contentType": "text/csv"}},
        )},
        responses={
            202: UploadStatusSerializer,
            400: OpenApiResponse(description="a file too large, not UTF-8, without the needed columns or past the "
                                             "row limit; nothing was stored"),
            **{code: response for code, response in ERRORS.items() if code != 400},
            **BUSY,
        },
    ))  # fmt: skip


class CsvUploadView(InputView):
    """Shared by the uploads: organization and role, the file stored, the answer (202 with the status URL)."""

    parser_classes = [MultiPartParser, FormParser]
    capability = Capability.PRICES
    spec: UploadSpec
    task: Any  # the kind's Celery task, taking the upload's id

    def post(self, request: Request) -> Response:
        organization = report_organization(user=request.user, ref=request.POST.get("organization"))
        change_check(user=request.user, organization=organization, capability=self.capability)
        upload = request.FILES.get("file")
        if upload is None:
            raise ValidationError({"detail": "send the CSV as the multipart field 'file'"})
        if upload.size is not None and upload.size > UPLOAD_MAX_BYTES:  # refused before it is read into memory
            raise ValidationError({"detail": f"files are limited to {UPLOAD_MAX_BYTES} bytes"})
        try:
            stored = upload_store(organization=organization, user=request.user, spec=self.spec,
                                  file_name=upload.name or "", content=upload.read(), now=timezone.now())  # fmt: skip
        except UploadInvalid as error:
            raise ValidationError({"detail": str(error)}) from error
        except UploadBusy as error:
            raise Conflict(str(error)) from error
        upload_enqueue(task=self.task, upload_id=stored.pk)
        body = UploadStatusSerializer(stored).data
        return Response(body, status=status.HTTP_202_ACCEPTED, headers={"Location": body["status_url"]})


def upload_enqueue(*, task: Any, upload_id: int) -> None:
    """Send the upload to a worker once the row that stores it is committed."""
    transaction.on_commit(lambda: task.delay(upload_id))


@upload_schema("node_prices_upload", "Node prices", "NodePrice")
class NodePricesUploadView(CsvUploadView):
    spec = NODE_PRICES_UPLOAD
    task = node_prices_upload_task


@upload_schema("exchange_rates_upload", "Exchange rates (currency, quote_currency, month, kind, rate, source)",
               "ExchangeRate")  # fmt: skip
class ExchangeRatesUploadView(CsvUploadView):
    """Rates the organization holds (e.g. the ECB's): a pair, month and kind held is replaced."""

    spec = EXCHANGE_RATES_UPLOAD
    task = exchange_rates_upload_task


class UploadStatusView(InputView):
    """An upload's state and progress, and once done its answer (any member of its organization may read it)."""

    @extend_schema(operation_id="uploads_read", responses={200: UploadStatusSerializer, **ERRORS})
    def get(self, request: Request, upload_id: int) -> Response:
        uploads = InputUpload.objects.filter(organization__in=organizations_for_user(user=request.user))
        upload = owned(uploads.select_related("created_by"), upload_id, "upload")
        if uploads_lapse(organization_id=upload.organization_id, now=timezone.now()):
            upload.refresh_from_db()
        return Response(UploadStatusSerializer(upload).data)
