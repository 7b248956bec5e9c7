from __future__ import annotations

from typing import Any

from django.db import models


class Float32Field(models.FloatField):
    """A 4-byte float on PostgreSQL (``real``): 7 significant digits are plenty for
    a power reading in watts and halve its storage; other databases keep ``FloatField``'s type."""

    def db_type(self, connection: Any) -> str | None:
        if connection.vendor == "postgresql":
            return "real"
        return super().db_type(connection)
