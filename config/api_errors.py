"""How the API answers errors, and how the schema says so.

Every error body is JSON: ``{"detail": "..."}`` (``Error``), or for a
parameter or field that was refused, the field's name with its messages
(``ValidationError``). Missing, unknown, expired or revoked credentials answer
401 with ``WWW-Authenticate: Bearer`` on every endpoint, whichever
authentication it takes; a credential of the wrong kind (a node token on a
personal endpoint) answers 403.

``responses_documented`` is a drf-spectacular post-processing hook: each
operation that takes credentials gains its 401 and 403, and every 4xx the
views declare gains the body it actually has.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views import defaults
from rest_framework import exceptions
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import exception_handler

WWW_AUTHENTICATE = 'Bearer realm="wattledger"'

ERROR_SCHEMA = {
    "type": "object",
    "properties": {"detail": {"type": "string", "description": "what was wrong, for a person to read"}},
    "required": ["detail"],
}
# {"period": ["..."]}, or for a repeated parameter {"fleet": {"0": ["..."]}}, or {"detail": "..."}.
VALIDATION_ERROR_SCHEMA = {
    "type": "object",
    "description": "each refused parameter or field with its messages (a list, or per position of a repeated one)",
    "additionalProperties": {
        "oneOf": [{"type": "array", "items": {"type": "string"}}, {"type": "object"}, {"type": "string"}]
    },
}
_DEFAULTS = {
    401: "no credentials, or an unknown, expired or revoked personal token",
    403: "a node token (for the ingest API only), or a role that may not do this",
}


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's handler, errors always in JSON, and 401 (never 403) for missing or refused credentials, on every view.

    DRF answers 403 where a view's first authentication class has no
    ``WWW-Authenticate`` (sessions): the same unknown token would get 403 on one
    endpoint and 401 on another.
    """
    response = exception_handler(exc, context)
    request = context.get("request")
    if response is not None and request is not None:
        # A CSV (or any other format) holding an error message helps no client: errors are JSON.
        request.accepted_renderer = JSONRenderer()
        request.accepted_media_type = JSONRenderer.media_type
    if response is not None and isinstance(exc, exceptions.NotAuthenticated | exceptions.AuthenticationFailed):
        response.status_code = 401
        response["WWW-Authenticate"] = response.get("WWW-Authenticate") or WWW_AUTHENTICATE
    return response


def responses_documented(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    schemas.setdefault("Error", ERROR_SCHEMA)
    schemas.setdefault("ValidationError", VALIDATION_ERROR_SCHEMA)
    throttled = _throttled_paths(generator)
    for path, methods in result.get("paths", {}).items():
        for operation in methods.values():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            responses = operation["responses"]
            if operation.get("security") != [{}] and operation.get("security") is not None:
                for code, description in _DEFAULTS.items():
                    responses.setdefault(str(code), {"description": description})
            if path in throttled:
                responses.setdefault("429", {"description": "too many requests: retry after Retry-After seconds"})
            _parameter_errors_documented(operation)
            for code, response in responses.items():
                if code.startswith("4") and "content" not in response:
                    schema = "ValidationError" if code == "400" else "Error"
                    response["content"] = {"application/json": {"schema": {"$ref": f"#/components/schemas/{schema}"}}}
    return result


def _parameter_errors_documented(operation: dict[str, Any]) -> None:
    """Query parameters can be refused (400, ``ValidationError``; 414 from the server when too long);
    ``?format=`` naming no renderer, or ``?organization=`` naming none of the caller's, is a 404."""
    query = {p.get("name") for p in operation.get("parameters", []) if p.get("in") == "query"}
    if not query:
        return
    responses = operation["responses"]
    refused = responses.setdefault("400", {"description": "a refused query parameter"})
    json = refused.setdefault("content", {}).setdefault("application/json", {})
    validation = {"$ref": "#/components/schemas/ValidationError"}
    if "schema" not in json:
        json["schema"] = validation
    elif json["schema"] != validation:
        json["schema"] = {"anyOf": [json["schema"], validation]}
    # The WSGI server, not the app, refuses a request line over its limit (gunicorn: 4,094 bytes), as HTML.
    responses.setdefault("414", {"description": "the URL is longer than the server accepts (4,094 bytes)",
                                 "content": {"text/html": {"schema": {"type": "string"}}}})  # fmt: skip
    if query & {"format", "organization"}:  # an unknown renderer, or an organization that is not among yours
        responses.setdefault("404", {"description": "a format no renderer answers, or an object not among yours"})


def _throttled_paths(generator: Any) -> set[str]:
    """Schema paths of the views that set a throttle (``throttle_scope`` or ``throttle_classes``)."""
    paths = set()
    for path, _regex, _method, view in getattr(generator, "endpoints", None) or []:
        cls = getattr(view, "cls", None)
        if cls is not None and (getattr(cls, "throttle_scope", None) or getattr(cls, "throttle_classes", None)):
            paths.add(path)
    return paths


# --- Django's own error views: JSON under /api/, the usual pages elsewhere ----------------
# (a URL under /api/ that matches no route, a disallowed host, a CSRF failure: answered before
# any DRF view runs.) Django uses these when DEBUG is off.


def _api(request: HttpRequest) -> bool:
    return request.path.startswith("/api/")


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    if _api(request):
        return JsonResponse({"detail": "Bad request."}, status=400)
    return defaults.bad_request(request, exception)


def permission_denied(request: HttpRequest, exception: Exception) -> HttpResponse:
    if _api(request):
        return JsonResponse({"detail": "You do not have permission to perform this action."}, status=403)
    return defaults.permission_denied(request, exception)


def page_not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    if _api(request):
        return JsonResponse({"detail": "Not found."}, status=404)
    return defaults.page_not_found(request, exception)


def server_error(request: HttpRequest) -> HttpResponse:
    if _api(request):
        return JsonResponse({"detail": "A server error occurred."}, status=500)
    return defaults.server_error(request)
