"""A small parser for the Prometheus text exposition format (0.0.4, and OpenMetrics' subset of it).

Enough for inference servers' ``/metrics``: ``# HELP`` and ``# TYPE`` lines,
samples with escaped label values, ``+Inf``/``NaN`` values, optional
timestamps and exemplars (which are ignored). A malformed line is skipped and
counted, never fatal: one odd metric must not hide the ones we need.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from dataclasses import dataclass, field

_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*(,?)')
_UNESCAPE = {"\\\\": "\\", '\\"': '"', "\\n": "\n"}


@dataclass(frozen=True)
class Sample:
    name: str
    labels: dict[str, str]
    value: float


@dataclass(frozen=True)
class Histogram:
    bounds: tuple[float, ...]  # finite upper bounds, increasing
    counts: tuple[float, ...]  # cumulative, one per bound, then +Inf
    sum: float | None


@dataclass
class Exposition:
    samples: list[Sample] = field(default_factory=list)
    types: dict[str, str] = field(default_factory=dict)
    skipped_lines: int = 0

    def find(self, name: str, **labels: str) -> list[Sample]:
        return [s for s in self.samples if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())]

    def total(self, name: str, **labels: str) -> float | None:
        """Sum over every label set (e.g. vLLM's finished_reason), or ``None`` if not exposed."""
        found = self.find(name, **labels)
        return sum(s.value for s in found) if found else None

    def histogram(self, name: str, **labels: str) -> Histogram | None:
        """A histogram's buckets summed over label sets (other than ``le``), or ``None``."""
        by_bound: dict[float, float] = defaultdict(float)
        for sample in self.find(f"{name}_bucket", **labels):
            by_bound[float(sample.labels.get("le", "nan"))] += sample.value
        bounds = tuple(sorted(b for b in by_bound if math.isfinite(b)))
        infinite = by_bound.get(math.inf, self.total(f"{name}_count", **labels))
        if not bounds or infinite is None:
            return None
        return Histogram(bounds, (*(by_bound[b] for b in bounds), infinite), self.total(f"{name}_sum", **labels))

    def label_values(self, label: str) -> list[str]:
        return sorted({s.labels[label] for s in self.samples if label in s.labels})


def parse(text: str) -> Exposition:
    exposition = Exposition()
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if line.startswith("#"):
            _comment(line, exposition)
        elif (sample := parse_sample(line)) is not None:
            exposition.samples.append(sample)
        else:
            exposition.skipped_lines += 1
    return exposition


def _comment(line: str, exposition: Exposition) -> None:
    parts = line.split(None, 3)
    if len(parts) >= 4 and parts[1] == "TYPE":
        exposition.types[parts[2]] = parts[3].strip()


def parse_sample(line: str) -> Sample | None:
    """``name{label="value",...} value [timestamp] [# exemplar]``, or ``None`` if malformed."""
    match = _NAME.match(line)
    if match is None:
        return None
    rest = line[match.end() :]
    labels: dict[str, str] = {}
    if rest.startswith("{"):
        parsed = _labels(rest)
        if parsed is None:
            return None
        labels, rest = parsed
    fields = rest.split("#", 1)[0].split()
    if not 1 <= len(fields) <= 2:
        return None
    try:
        return Sample(match.group(), labels, float(fields[0]))
    except ValueError:
        return None


def _labels(text: str) -> tuple[dict[str, str], str] | None:
    """Parse ``{...}`` at the start of ``text``; return the labels and what follows."""
    labels: dict[str, str] = {}
    pos = 1
    while (found := _LABEL.match(text, pos)) is not None:
        labels[found.group(1)] = re.sub(r"\\[\\\"n]", lambda m: _UNESCAPE[m.group()], found.group(2))
        pos = found.end()
        if not found.group(3):
            break
    closing = text.find("}", pos)
    if closing < 0 or text[pos:closing].strip():
        return None
    return labels, text[closing + 1 :]
