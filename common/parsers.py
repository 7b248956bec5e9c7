"""JSON bodies with a bounded depth: a deeply nested body is a 400 that says so, never a 500.

Python's parser recurses once per level, so a body of a few thousand ``[`` raises
``RecursionError``; a body just under that limit would raise it later, when a
serializer, the audit trail or a renderer walks it. No request body of this API
nests deeper than a few levels, so anything past ``MAX_DEPTH`` is refused.
"""

from __future__ import annotations

from typing import Any

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

MAX_DEPTH = 32


def depth_check(value: Any, *, limit: int = MAX_DEPTH) -> None:
    """Raise ``ParseError`` if ``value`` (parsed JSON) nests deeper than ``limit``; iterative, so it cannot recurse."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > limit:
                raise ParseError(f"JSON nested deeper than {limit} levels")
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))


class BoundedJSONParser(JSONParser):
    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError(f"JSON nested deeper than {MAX_DEPTH} levels") from None
        depth_check(data)
        return data
