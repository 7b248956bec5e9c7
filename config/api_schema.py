"""The schema states the constraints the serializers enforce.

drf-spectacular leaves out some of what DRF refuses, so a client reading the
schema would send values the API answers with 400:

* a ``CharField`` without ``allow_blank`` refuses "" and whitespace only:
  the request schema says ``minLength: 1`` and needs a non-space character
  (or matches the field's own regex, a ``RegexField``'s or ``SlugField``'s,
  with the surrounding whitespace DRF trims);
* a ``DecimalField`` as a string refuses "", "-", "." and values past its
  bounds: the pattern needs a digit, and has no sign where ``min_value`` is 0
  or more (and none of the smaller values where it is 0.1 or 1, or of the
  larger where ``max_value`` is 1);
* a ``FileField`` in a request is a file part (``format: binary``), not a URL.

``form_bodies_documented`` (a post-processing hook) says how forms differ from
JSON: a form has no null and no nested object, so an empty value stands for
null or for an omitted field, and a body whose required fields are nested is
JSON only.
"""

from __future__ import annotations

import copy
from decimal import Decimal
from typing import Any

from django.core.validators import RegexValidator
from drf_spectacular import openapi
from rest_framework import serializers
from rest_framework.settings import api_settings

FORM_MEDIA_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")
_EMPTY = {"type": "string", "maxLength": 0, "description": "empty: null, or as if omitted"}


class AutoSchema(openapi.AutoSchema):
    def _map_serializer_field(self, field: Any, direction: str, bypass_extensions: bool = False) -> Any:
        schema = super()._map_serializer_field(field, direction, bypass_extensions)
        if not isinstance(schema, dict):
            return schema
        if direction == "request" and isinstance(field, serializers.FileField):
            return {"type": "string", "format": "binary"}
        if (
            direction == "request"
            and isinstance(field, serializers.CharField)
            and not field.allow_blank
            and schema.get("type") == "string"
            and "minLength" not in schema
            and "enum" not in schema
        ):
            schema["minLength"] = 1
            # A field's own regex (RegexField, SlugField) is its pattern, which drf-spectacular adds after this.
            if "pattern" not in schema and field.trim_whitespace and not _has_regex(field):
                schema["pattern"] = r"\S"  # surrounding spaces are trimmed: spaces only are blank
        if isinstance(field, serializers.DecimalField) and "pattern" in schema:
            pattern = decimal_pattern(field)
            if pattern is not None:
                schema["pattern"] = pattern
        return schema

    def _insert_field_validators(self, field: Any, schema: dict[str, Any]) -> None:
        super()._insert_field_validators(field, schema)
        pattern = schema.get("pattern")
        trimmed = isinstance(field, serializers.CharField) and field.trim_whitespace and _has_regex(field)
        if trimmed and isinstance(pattern, str) and pattern.startswith("^") and pattern.endswith("$"):
            # DRF trims surrounding whitespace before it matches the regex: the value may carry some.
            schema["pattern"] = rf"^\s*(?:{pattern[1:-1]})\s*$"


def _has_regex(field: serializers.Field) -> bool:
    return any(isinstance(validator, RegexValidator) for validator in field.validators)


def decimal_pattern(field: serializers.DecimalField) -> str | None:
    """The strings ``field`` accepts: at least one digit, its digits and places, its sign and bounds."""
    if not getattr(field, "coerce_to_string", api_settings.COERCE_DECIMAL_TO_STRING) or field.localize:
        return None
    whole, places = field.max_whole_digits, field.decimal_places
    if not whole or places is None:
        return None
    low = None if field.min_value is None else Decimal(field.min_value)
    high = None if field.max_value is None else Decimal(field.max_value)
    fraction = rf"(?:\.\d{{0,{places}}})?" if places else ""
    point_first = rf"|0*\.\d{{1,{places}}}" if places else ""
    one_or_more = rf"0*[1-9]\d{{0,{whole - 1}}}{fraction}"  # leading zeros do not count as digits
    if low == 0 and high == 1:
        body = rf"0+{fraction}{point_first}|0*1" + (rf"(?:\.0{{0,{places}}})?" if places else "")
    elif high is not None:
        return None
    elif low == 1:
        body = one_or_more
    elif low == Decimal("0.1") and places:
        body = rf"{one_or_more}|0*\.[1-9]\d{{0,{places - 1}}}"
    else:
        body = rf"0*\d{{1,{whole}}}{fraction}{point_first}"
        if low is None or low < 0:
            body = rf"-?(?:{body})"
    if low == 0:  # -0 is 0
        zeros = rf"(?:\.0{{0,{places}}})?|-0*\.0{{1,{places}}}" if places else ""
        body += rf"|-0+{zeros}"
    return rf"^(?:{body})$"


def form_bodies_documented(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    for methods in result.get("paths", {}).values():
        for operation in methods.values():
            content = operation.get("requestBody", {}).get("content", {}) if isinstance(operation, dict) else {}
            for media_type in FORM_MEDIA_TYPES:
                if media_type not in content:
                    continue
                schema = content[media_type].get("schema", {})
                name = schema.get("$ref", "").rsplit("/", 1)[-1]
                target = schemas.get(name) if name else schema
                if not isinstance(target, dict) or "properties" not in target:
                    continue
                form = _form_schema(target, schemas)
                if form is None:
                    del content[media_type]
                elif form != target:
                    if name:
                        schemas[f"{name}Form"] = form
                        content[media_type]["schema"] = {"$ref": f"#/components/schemas/{name}Form"}
                    else:
                        content[media_type]["schema"] = form
    return result


def _nested(schema: dict[str, Any], schemas: dict[str, Any]) -> bool:
    if schema.get("type") == "array":
        schema = schema.get("items", {})
    if "$ref" in schema:
        schema = schemas.get(schema["$ref"].rsplit("/", 1)[-1], {})
    return schema.get("type") == "object" or "properties" in schema


def _form_schema(schema: dict[str, Any], schemas: dict[str, Any]) -> dict[str, Any] | None:
    """``schema`` as a form carries it, or None where a required field cannot be carried."""
    form = copy.deepcopy(schema)
    required = set(form.get("required", []))
    for name, prop in list(form["properties"].items()):
        if prop.get("readOnly"):
            continue
        if _nested(prop, schemas):
            if name in required:
                return None
            del form["properties"][name]
            continue
        nullable = bool(prop.pop("nullable", False))
        for key in ("oneOf", "anyOf"):
            if key in prop:
                prop[key] = [s for s in prop[key] if s.get("$ref") != "#/components/schemas/NullEnum"]
        if prop.get("type") != "array" and (nullable or name not in required):
            form["properties"][name] = {"anyOf": [prop, _EMPTY]}
    return form
