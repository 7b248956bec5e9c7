"""The WSGI route for collector batches: a valid batch is stored without Django's request cycle.

Every collector POSTs a batch every few seconds, so the ingest request is the
one a Wattledger server answers most, and Django's cycle around it (the
middleware chain, URL resolving, the class-based view) cost as much CPU as
storing an 80-row batch. :class:`IngestRoute` wraps the Django application:
a ``POST`` to the ingest URL that Django would pass through untouched (an
allowed ``Host``, HTTPS where it is required) and whose node token is valid is
answered here, by the same code as the view (:func:`telemetry.api.batch_answer`),
with the headers Django's security and clickjacking middleware would add.
Everything else (another URL or method, a missing or refused token, a
redirect to HTTPS, a bad ``Host``) goes to Django unchanged and gets Django's
answer. Django's request signals are sent as usual, so persistent database
connections are checked and closed as in any request; an unexpected error is
logged and answered as Django does (``response_for_exception``).
"""

from __future__ import annotations

import functools
import io
from collections.abc import Callable, Iterable
from http import HTTPStatus
from typing import Any

from django.conf import settings
from django.core import signals
from django.core.exceptions import DisallowedHost
from django.core.handlers.exception import response_for_exception
from django.core.handlers.wsgi import WSGIHandler, WSGIRequest
from django.db import connection
from django.http import HttpResponse, HttpResponseBase
from django.middleware.clickjacking import XFrameOptionsMiddleware
from django.middleware.security import SecurityMiddleware
from django.urls import get_resolver
from django.utils.log import log_response
from rest_framework.exceptions import AuthenticationFailed

from fleets.services import credential_authenticate
from fleets.tokens import token_sha256
from telemetry.api import IngestView, batch_answer
from telemetry.auth import KnownTokens, node_token
from telemetry.ingest import TokenRefused

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


class IngestRoute:
    """A WSGI application: valid collector batches here, every other request to ``django``."""

    def __init__(self, django: WsgiApp) -> None:
        self.django = django
        self._path: str | None = None
        self._known = KnownTokens()
        self._headers: dict[bool, list[tuple[str, str]]] = {}
        self._security = SecurityMiddleware(_unused)
        self._xframe = XFrameOptionsMiddleware(_unused)

    @property
    def path(self) -> str:
        """The ingest URL's path below the application's mount point (``PATH_INFO``, whatever ``SCRIPT_NAME``),
        resolved on first use: the URLconf is not loaded at import."""
        if self._path is None:
            self._path = "/" + get_resolver(settings.ROOT_URLCONF).reverse("ingest").lstrip("/")
        return self._path

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("REQUEST_METHOD") != "POST" or environ.get("PATH_INFO") != self.path:
            return self.django(environ, start_response)
        signals.request_started.send(sender=WSGIHandler, environ=environ)  # connections checked, as by Django
        request = WSGIRequest(environ)
        try:
            answer = self._answer(request)
        except Exception as error:  # noqa: BLE001 - answered and logged as Django answers an unhandled error
            return self._send(request, response_for_exception(request, error), start_response)
        if answer is None:  # Django's way: it sends its own request signals
            return self.django(environ, start_response)
        status, body = answer
        if status >= 400:  # logged as Django logs a refused request ("Bad Request: /api/v1/ingest/")
            refused = HttpResponse(body, status=status)
            log_response("%s: %s", refused.reason_phrase, request.path, response=refused, request=request)
        start_response(_status_line(status), [*self._json_headers(request), ("Content-Length", str(len(body)))])
        return _Body(body)

    def _answer(self, request: WSGIRequest) -> tuple[int, bytes] | None:
        """The status and JSON body for a valid batch, or ``None`` for a request Django must answer.

        A token this process has seen accepted is checked in the batch's own
        transaction (:class:`~telemetry.auth.KnownTokens`); any other is looked up
        first, as the view does, before the body is read.
        """
        if not self._passes_middleware(request):
            return None
        try:
            token = node_token(request.META.get("HTTP_AUTHORIZATION", b""))
        except AuthenticationFailed:
            return None
        if token is None:
            return None
        digest = token_sha256(token)
        # On PostgreSQL the check joins the batch's pipeline; SQLite (the embedded default) looks it up first.
        credential = self._known.get(digest) if connection.vendor == "postgresql" else None
        checked_with_batch = credential is not None
        if credential is None:
            credential = IngestView.node_authenticate(request)
            if credential is None:
                return None
            self._known.remember(digest, credential)
        body = _Recorded(request.read)
        try:
            status, answer = batch_answer(
                request, credential, read=body.read, token_digest=digest if checked_with_batch else None
            )
            # A batch refused, or an error, before the batch's own check: the token is checked before answering.
            if status != 200 and checked_with_batch and _token_refused(token):
                raise TokenRefused
        except Exception as error:
            if not isinstance(error, TokenRefused) and not (checked_with_batch and _token_refused(token)):
                raise
            self._known.forget(digest)
            request.environ["wsgi.input"] = io.BytesIO(body.recorded())  # Django reads it again, and refuses
            return None
        return status, answer

    def _passes_middleware(self, request: WSGIRequest) -> bool:
        """Whether Django's middleware would let the request through to the view unchanged."""
        try:
            request.get_host()  # CommonMiddleware's check of ALLOWED_HOSTS
        except DisallowedHost:
            return False
        return self._security.process_request(request) is None  # no redirect to HTTPS

    def _json_headers(self, request: WSGIRequest) -> list[tuple[str, str]]:
        """A JSON answer's headers but its length: worked out once (for plain and for secure requests) by
        Django's middleware itself, on an empty answer; they depend on nothing else of the request."""
        secure = request.is_secure()
        headers = self._headers.get(secure)
        if headers is None:
            probe = self._middleware_applied(request, HttpResponse(b"", content_type="application/json"))
            headers = [(name, value) for name, value in probe.items() if name.lower() != "content-length"]
            self._headers[secure] = headers
        return headers

    def _middleware_applied(self, request: WSGIRequest, response: HttpResponseBase) -> HttpResponseBase:
        """``response`` with the headers of Django's clickjacking and security middleware, and its length."""
        response = self._xframe.process_response(request, response)  # type: ignore[arg-type]
        response = self._security.process_response(request, response)
        if isinstance(response, HttpResponse) and not response.has_header("Content-Length"):
            response.headers["Content-Length"] = str(len(response.content))
        return response

    def _send(
        self, request: WSGIRequest, response: HttpResponseBase, start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        response = self._middleware_applied(request, response)
        start_response(f"{response.status_code} {response.reason_phrase}", list(response.items()))
        return _Body(response.content if isinstance(response, HttpResponse) else b"")


def _token_refused(token: str) -> bool:
    """Whether the token is now unknown or revoked (``False`` if that cannot be told: the database is down)."""
    try:
        return credential_authenticate(token=token) is None
    except Exception:  # noqa: BLE001 - the error being answered is the request's own
        return False


@functools.cache
def _status_line(status: int) -> str:
    return f"{status} {HTTPStatus(status).phrase}"


class _Recorded:
    """A body reader that keeps what it read, for Django to read again."""

    def __init__(self, read: Callable[[int], bytes]) -> None:
        self._read = read
        self._chunks: list[bytes] = []

    def read(self, size: int) -> bytes:
        chunk = self._read(size)
        self._chunks.append(chunk)
        return chunk

    def recorded(self) -> bytes:
        return b"".join(self._chunks)


class _Body(list[bytes]):
    """The answer's bytes; closed by the server once sent, which ends the request as Django's does."""

    def __init__(self, content: bytes) -> None:
        super().__init__([content])

    def close(self) -> None:
        signals.request_finished.send(sender=WSGIHandler)


def _unused(request: Any) -> Any:  # the middleware's get_response: only its hooks are called here
    raise AssertionError("not called")
