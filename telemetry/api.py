"""``POST /api/v1/ingest/``: a collector's batch in, the stored counts out."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, cast

import orjson
from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.utils import timezone
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.parsers import BaseParser
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.views import APIView

from fleets.models import NodeCredential
from telemetry.auth import IsNode, NodeTokenAuthentication
from telemetry.collector.wire import CONTENT_TYPE, MAX_BODY_BYTES, WireError, batch_decode
from telemetry.ingest import batch_ingest
from telemetry.schema import BatchSchema, ErrorSchema, IngestAnswerSchema


class _BatchParser(BaseParser):
    """Declares the media type for content negotiation; the body is read raw by the view."""

    media_type = CONTENT_TYPE


class _JsonOnly(BaseContentNegotiation):
    """The view speaks JSON only: nothing to negotiate (DRF's negotiation parses the Accept header each time)."""

    def select_parser(self, request: Request, parsers: Iterable[BaseParser]) -> BaseParser:
        return next(iter(parsers))

    def select_renderer(
        self, request: Request, renderers: Iterable[BaseRenderer], format_suffix: str | None = None
    ) -> tuple[BaseRenderer, str]:
        renderer = next(iter(renderers))
        return renderer, renderer.media_type


class IngestView(APIView):
    authentication_classes = [NodeTokenAuthentication]
    permission_classes = [IsNode]
    parser_classes = [_BatchParser]
    renderer_classes = [JSONRenderer]  # errors only: answers are written directly (``_json_response``)
    content_negotiation_class = _JsonOnly

    @extend_schema(
        operation_id="ingest_batch",
        summary="Store a collector batch (wire format version 1)",
        description=(
            "Authenticated by the node's token (`Authorization: Bearer wln_...`); the node comes from the token. "
            "The body may be gzip-compressed (`Content-Encoding: gzip`). A batch is atomic and idempotent: rows "
            "are keyed by (GPU, ts) and (endpoint, ts), and a re-sent batch stores nothing twice. Samples older "
            "than retention are skipped and listed under `rejected`."
        ),
        request={CONTENT_TYPE: BatchSchema},
        responses={
            200: IngestAnswerSchema,
            400: OpenApiResponse(ErrorSchema, description="malformed body or values"),
            401: OpenApiResponse(ErrorSchema, description="missing, unknown or revoked token"),
            403: OpenApiResponse(ErrorSchema, description="the batch names another node's GPU"),
            413: OpenApiResponse(ErrorSchema, description="body, inflated body or row count over the limit"),
            415: OpenApiResponse(ErrorSchema, description="not JSON, or an unsupported Content-Encoding"),
            422: OpenApiResponse(ErrorSchema, description="valid JSON that cannot be accepted"),
        },
    )
    def post(self, request: Request) -> HttpResponse:
        return _batch_store(request._request, cast(NodeCredential, request.auth))  # IsNode guarantees it

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        """A POST with a valid node token goes straight to the batch; anything else takes DRF's way.

        DRF's dispatch (its request wrapper, negotiation, the authentication and
        permission framework, response finalizing) cost as much CPU as storing an
        80-row batch. Here the same authentication runs first; only a request it
        does not accept (no token, a bad one, another method) goes through DRF,
        which answers it exactly as before (401 with ``WWW-Authenticate``, 405, ...).
        """
        if request.method == "POST":
            try:
                accepted = self._authenticator.authenticate(request)  # type: ignore[arg-type]
            except AuthenticationFailed:
                accepted = None
            if accepted is not None:
                return _batch_store(request, accepted[1])
        return super().dispatch(request, *args, **kwargs)

    _authenticator = NodeTokenAuthentication()


def _batch_store(request: HttpRequest, credential: NodeCredential) -> HttpResponse:
    try:
        body = _body_read(request)
        batch = batch_decode(body, content_encoding=request.headers.get("Content-Encoding"))
        result = batch_ingest(node=credential.node, batch=batch, received_at=timezone.now())
    except WireError as error:
        return _json_response({"error": str(error)}, status=error.status)
    return _json_response(result.as_dict(batch.batch_id))


def _json_response(body: dict[str, Any], *, status: int = 200) -> HttpResponse:
    """The answer as JSON, serialized once with orjson (no renderer or content negotiation on this hot path)."""
    return HttpResponse(orjson.dumps(body), status=status, content_type="application/json")


def _body_read(request: HttpRequest) -> bytes:
    """The raw body, refused with 413 before anything is parsed when it is too large."""
    content_type = (request.content_type or "").split(";")[0].strip()
    if content_type != CONTENT_TYPE:
        raise WireError(f"Content-Type must be {CONTENT_TYPE}, got {content_type or 'none'!r}", status=415)
    declared = int(request.META.get("CONTENT_LENGTH") or 0)
    if declared > MAX_BODY_BYTES:
        raise WireError(f"body is {declared} bytes; the limit is {MAX_BODY_BYTES}", status=413)
    body = request.read(MAX_BODY_BYTES + 1)
    if len(body) > MAX_BODY_BYTES:
        raise WireError(f"body is over the limit of {MAX_BODY_BYTES} bytes", status=413)
    return body
