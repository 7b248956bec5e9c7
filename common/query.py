"""Query parameters, read one way by every API endpoint: an empty value, and an organization.

DRF reads a query string as it reads an HTML form, where an empty field stands
for one left out: ``?start=`` would answer for the default period, as if
``start`` had not been sent. A query is no form, and no date, number, choice,
id or slug is empty, so a parameter sent empty is refused (400, naming it)
unless its field allows blank text; a client leaves a parameter out for its
default. The schema says so already (an empty string matches no ``date-time``,
integer, enum or ``minLength: 1``). ``?format=`` of the views that answer JSON
or CSV follows the same rule (``ContentNegotiation``).

An organization in a query is named by its id or its slug (``ORGANIZATION_REF``,
stated in the schema): any other text is a 400 on the parameter; an id or slug
that is not among the user's is a 404 (``common.scope``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.request import Request

EMPTY_REFUSED = "may not be empty: leave the parameter out for its default"
# An organization id (ASCII digits) or slug (ASCII letters, digits, hyphens, underscores).
ORGANIZATION_REF = r"^[-a-zA-Z0-9_]{1,200}$"


def organization_ref_field(help_text: str, **kwargs: Any) -> serializers.RegexField:
    """An id or slug exactly, as the schema's pattern says: surrounding spaces are not trimmed into one."""
    return serializers.RegexField(ORGANIZATION_REF, help_text=help_text, trim_whitespace=False, **kwargs)


def empty_refused(query: Any, names: Iterable[str]) -> dict[str, list[str]]:
    """``{name: [EMPTY_REFUSED]}`` for each of ``names`` sent empty (once or more) in ``query`` (a ``QueryDict``)."""
    getlist = getattr(query, "getlist", None)
    if getlist is None:  # not a query string: a JSON body has null for "no value", and no empty stands for it
        return {}
    return {name: [EMPTY_REFUSED] for name in names if "" in getlist(name)}


def _blank_allowed(field: serializers.Field) -> bool:
    return bool(getattr(getattr(field, "child", field), "allow_blank", False))


class QueryInputSerializer(serializers.Serializer):
    """A query's parameters: one sent empty is refused unless its field (or a list's items) allows blank text."""

    def to_internal_value(self, data: Mapping[str, Any]) -> Any:
        names = [name for name, field in self.fields.items() if not field.read_only and not _blank_allowed(field)]
        errors = empty_refused(data, names)
        if errors:
            raise ValidationError(errors)
        return super().to_internal_value(data)


def query_validated(serializer_class: type[serializers.Serializer], request: Request) -> dict[str, Any]:
    """The request's query as ``serializer_class`` (a ``QueryInputSerializer``) reads it, or 400 naming parameters."""
    serializer = serializer_class(data=request.query_params)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


class ContentNegotiation(DefaultContentNegotiation):
    """DRF's negotiation (``?format=csv``, ``Accept``), but ``?format=`` is refused rather than ignored."""

    def select_renderer(self, request: Request, renderers: Any, format_suffix: str | None = None) -> Any:
        name = self.settings.URL_FORMAT_OVERRIDE
        errors = empty_refused(request.query_params, [name] if name else [])
        if errors:
            raise ValidationError(errors)
        return super().select_renderer(request, renderers, format_suffix)
