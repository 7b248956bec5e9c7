"""``POST /api/v1/ingest/``: a collector's batch in, the stored counts out.

A plain DRF view through Django's whole request cycle: every middleware in
``MIDDLEWARE`` (metrics, tracing, rate limits) applies to it as to any request.
"""

from __future__ import annotations

from typing import Any, cast

from django.utils import timezone
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView, exception_handler

from fleets.models import NodeCredential
from telemetry.auth import IsNode, NodeTokenAuthentication
from telemetry.collector.wire import CONTENT_TYPE, MAX_BODY_BYTES, WireError, batch_decode
from telemetry.ingest import batch_ingest
from telemetry.prometheus_import import collector_batch_check
from telemetry.schema import BatchSchema, ErrorSchema, IngestAnswerSchema

_READ_BYTES = 256 * 1024  # a chunked body is read in pieces of this size, up to the limit


class IngestView(APIView):
    authentication_classes = [NodeTokenAuthentication]
    permission_classes = [IsNode]
    parser_classes: list[Any] = []  # the body is read and decoded by the wire format, not by DRF

    @extend_schema(
        operation_id="ingest_batch",
        summary="Store a collector batch (wire format version 1)",
        description=(
            "Authenticated by the node's token (`Authorization: Bearer wln_...`); the node comes from the token. "
            "The body may be gzip-compressed (`Content-Encoding: gzip`) and sent with a `Content-Length` or "
            "`Transfer-Encoding: chunked`. A batch is atomic and idempotent: rows are keyed by (GPU, ts) and "
            "(endpoint, ts), node meter readings by (node, ts), and a re-sent batch stores nothing twice. Samples "
            "older than retention are skipped and listed under `rejected`. Values outside what real hardware "
            "produces are refused (422), and so are two readings of one GPU, endpoint or node meter at one instant, "
            "a sample ahead of the server's clock, and an endpoint naming one GPU twice."
        ),
        request={CONTENT_TYPE: BatchSchema},
        responses={
            200: IngestAnswerSchema,
            400: OpenApiResponse(ErrorSchema, description="malformed body or values (a control character, ...)"),
            401: OpenApiResponse(ErrorSchema, description="missing, unknown or revoked token"),
            403: OpenApiResponse(ErrorSchema, description="the batch names another node's GPU"),
            405: OpenApiResponse(ErrorSchema, description="a method other than POST"),
            409: OpenApiResponse(ErrorSchema, description="a GPU of the batch is imported from a Prometheus source"),
            413: OpenApiResponse(ErrorSchema, description="body, inflated body or row count over the limit"),
            415: OpenApiResponse(ErrorSchema, description="not JSON, or an unsupported Content-Encoding"),
            422: OpenApiResponse(ErrorSchema, description="out of physical bounds, two rows with one key, ..."),
        },
    )
    def post(self, request: Request) -> Response:
        credential = cast(NodeCredential, request.auth)  # IsNode guarantees it
        try:
            body = _body_read(request)
            batch = batch_decode(body, content_encoding=request.META.get("HTTP_CONTENT_ENCODING"))
            collector_batch_check(credential.node, batch)
            result = batch_ingest(node=credential.node, batch=batch, received_at=timezone.now())
        except WireError as error:
            return Response({"error": str(error)}, status=error.status)
        return Response(result.as_dict(batch.batch_id))

    def get_exception_handler(self) -> Any:
        return _error_answer


def _error_answer(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's answer to its own exceptions (401 with ``WWW-Authenticate``, 405, ...) in the ingest error schema."""
    response = exception_handler(exc, context)
    if response is not None and isinstance(response.data, dict) and "detail" in response.data:
        response.data = {"error": str(response.data["detail"])}
    return response


def _body_read(request: Request) -> bytes:
    """The raw body, refused (413) as soon as it is over the limit, whether sized or chunked."""
    media_type = (request.META.get("CONTENT_TYPE") or "").split(";")[0].strip().lower()
    if media_type != CONTENT_TYPE:
        raise WireError(f"Content-Type must be {CONTENT_TYPE}, got {media_type or 'none'!r}", status=415)
    try:
        declared = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        raise WireError("Content-Length is not a number") from None
    if declared > MAX_BODY_BYTES:
        raise WireError(f"body is {declared} bytes; the limit is {MAX_BODY_BYTES}", status=413)
    chunked = "chunked" in request.META.get("HTTP_TRANSFER_ENCODING", "").lower()
    # Django reads a body by its Content-Length; a chunked one has none, and is read from the WSGI
    # stream (which the server de-chunks) until it ends. (Under ASGI the stream is the whole body.)
    stream = request.META["wsgi.input"] if chunked and not declared and "wsgi.input" in request.META else request
    pieces: list[bytes] = []
    size = 0
    while size <= MAX_BODY_BYTES:
        piece = stream.read(min(_READ_BYTES, MAX_BODY_BYTES + 1 - size))
        if not piece:
            if declared and size != declared:  # the client closed its side before the body it announced was sent
                raise WireError(f"body ended after {size} of the {declared} bytes its Content-Length announced")
            return b"".join(pieces)
        pieces.append(piece)
        size += len(piece)
    raise WireError(f"body is over the limit of {MAX_BODY_BYTES} bytes", status=413)
