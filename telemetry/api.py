"""``POST /api/v1/ingest/``: a collector's batch in, the stored counts out."""

from __future__ import annotations

from collections.abc import Callable, Iterable
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
from telemetry.rawstore import column_array
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
    renderer_classes = [JSONRenderer]  # errors only: answers are written directly (``batch_answer``)
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
            credential = self.node_authenticate(request)
            if credential is not None:
                return _batch_store(request, credential)
        return super().dispatch(request, *args, **kwargs)

    @classmethod
    def node_authenticate(cls, request: HttpRequest) -> NodeCredential | None:
        """The credential of a valid node token; ``None`` for a request DRF must answer (401 and its headers)."""
        try:
            accepted = cls._authenticator.authenticate(request)  # type: ignore[arg-type]
        except AuthenticationFailed:
            return None
        return None if accepted is None else accepted[1]

    _authenticator = NodeTokenAuthentication()


def _batch_store(request: HttpRequest, credential: NodeCredential) -> HttpResponse:
    status, body = batch_answer(request, credential)
    return HttpResponse(body, status=status, content_type="application/json")


def batch_answer(
    request: HttpRequest,
    credential: NodeCredential,
    *,
    read: Callable[[int], bytes] | None = None,
    token_digest: str | None = None,
) -> tuple[int, bytes]:
    """Store an authenticated node's batch: the HTTP status and the JSON answer.

    The body is read (with ``read``, by default ``request.read``) once the request's
    headers are acceptable. Shared by the view and by the WSGI route that serves
    valid batches without Django's request cycle (``telemetry.route``), so both
    answer alike. ``token_digest``: the token is to be checked with the batch
    (``batch_ingest``; ``TokenRefused``).
    """
    meta = request.META
    try:
        body = _body_read(meta.get("CONTENT_TYPE"), meta.get("CONTENT_LENGTH"), read or request.read)
        batch = batch_decode(body, content_encoding=meta.get("HTTP_CONTENT_ENCODING"), column_array=column_array)
        result = batch_ingest(node=credential.node, batch=batch, received_at=timezone.now(), token_digest=token_digest)
    except WireError as error:
        return error.status, orjson.dumps({"error": str(error)})
    return 200, orjson.dumps(result.as_dict(batch.batch_id))


def _body_read(content_type: str | None, content_length: str | None, read: Callable[[int], bytes]) -> bytes:
    """The raw body, refused with 413 before anything is parsed when it is too large."""
    media_type = (content_type or "").split(";")[0].strip().lower()
    if media_type != CONTENT_TYPE:
        raise WireError(f"Content-Type must be {CONTENT_TYPE}, got {media_type or 'none'!r}", status=415)
    try:
        declared = int(content_length or 0)
    except ValueError:
        declared = 0  # as Django reads a malformed Content-Length: no body
    if declared > MAX_BODY_BYTES:
        raise WireError(f"body is {declared} bytes; the limit is {MAX_BODY_BYTES}", status=413)
    body = read(MAX_BODY_BYTES + 1)
    if len(body) > MAX_BODY_BYTES:
        raise WireError(f"body is over the limit of {MAX_BODY_BYTES} bytes", status=413)
    return body
