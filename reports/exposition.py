"""Metric families written in the Prometheus text format (0.0.4) or OpenMetrics 1.0. Pure: no Django.

A family is named as OpenMetrics names it (a counter without its ``_total``);
the writers add the sample suffix. Values stay what the caller computed them
as (money and energy ``Decimal``) until here: this is the one place they become
floats, the only number the formats know.

Label values are escaped as both formats require (backslash, double quote,
newline); help texts as the Prometheus format requires (backslash, newline).
"""

from __future__ import annotations

import enum
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import NamedTuple

PROMETHEUS_MEDIA_TYPE = "text/plain"
PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
OPENMETRICS_MEDIA_TYPE = "application/openmetrics-text"
OPENMETRICS_CONTENT_TYPE = "application/openmetrics-text; version=1.0.0; charset=utf-8"

Number = Decimal | float | int
Labels = tuple[tuple[str, str], ...]


class Kind(enum.StrEnum):
    COUNTER = "counter"
    GAUGE = "gauge"


class Sample(NamedTuple):
    labels: Labels
    value: Number


@dataclass(frozen=True)
class Family:
    """One metric family: ``name`` without a counter's ``_total``; ``unit``: a base unit ending the name, or ``""``."""

    name: str
    kind: Kind
    help: str
    unit: str = ""
    samples: Sequence[Sample] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        if self.unit and not self.name.endswith(f"_{self.unit}"):
            raise ValueError(f"{self.name}: a family's name ends with its unit ({self.unit})")
        if self.kind is Kind.COUNTER and self.name.endswith("_total"):
            raise ValueError(f"{self.name}: a counter family is named without _total")

    @property
    def sample_name(self) -> str:
        return f"{self.name}_total" if self.kind is Kind.COUNTER else self.name


def label_value_escaped(value: str) -> str:
    """A label value as both formats write it between double quotes."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def help_escaped(text: str) -> str:
    """A help text as the Prometheus format writes it (OpenMetrics also escapes double quotes)."""
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def value_float(value: Number) -> float:
    """A sample value as the float both formats (and OTLP's double) carry: ``Decimal`` rounded to nearest once."""
    return float(value)


def value_text(value: Number) -> str:
    """A sample value: the shortest text that reads back as the same float; ``+Inf``, ``-Inf``, ``NaN``."""
    number = value_float(value)
    if math.isnan(number):
        return "NaN"
    if math.isinf(number):
        return "+Inf" if number > 0 else "-Inf"
    if number.is_integer() and abs(number) < 1e15:
        return str(int(number))
    return repr(number)


def _sample_line(name: str, sample: Sample) -> str:
    if not sample.labels:
        return f"{name} {value_text(sample.value)}"
    labels = ",".join(f'{key}="{label_value_escaped(value)}"' for key, value in sample.labels)
    return f"{name}{{{labels}}} {value_text(sample.value)}"


def prometheus_text(families: Iterable[Family]) -> str:
    """The Prometheus text format 0.0.4: ``# HELP`` and ``# TYPE`` under the sample name, then the samples."""
    lines: list[str] = []
    for family in families:
        name = family.sample_name
        lines.append(f"# HELP {name} {help_escaped(family.help)}")
        lines.append(f"# TYPE {name} {family.kind.value}")
        lines.extend(_sample_line(name, sample) for sample in family.samples)
    return "".join(f"{line}\n" for line in lines)


def openmetrics_text(families: Iterable[Family]) -> str:
    """OpenMetrics 1.0: ``# TYPE``, ``# UNIT`` and ``# HELP`` under the family name, the samples, ``# EOF``."""
    lines: list[str] = []
    for family in families:
        lines.append(f"# TYPE {family.name} {family.kind.value}")
        if family.unit:
            lines.append(f"# UNIT {family.name} {family.unit}")
        lines.append(f"# HELP {family.name} {_openmetrics_help(family.help)}")
        lines.extend(_sample_line(family.sample_name, sample) for sample in family.samples)
    lines.append("# EOF")
    return "".join(f"{line}\n" for line in lines)


def _openmetrics_help(text: str) -> str:
    return help_escaped(text).replace('"', '\\"')


def wants_openmetrics(accept: str) -> bool:
    """Whether an ``Accept`` header asks for OpenMetrics (as Prometheus asks, beside the text format)."""
    for part in accept.split(","):
        media, *params = (piece.strip() for piece in part.split(";"))
        quality = next((p[2:] for p in params if p.startswith("q=")), "1")
        if media == OPENMETRICS_MEDIA_TYPE and _quality(quality) > 0:
            return True
    return False


def _quality(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return 0.0
