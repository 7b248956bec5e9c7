"""Reading the Prometheus text format back, as a scraper would: ``{(name, labels): value}``; scraping ``/metrics``."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any

import time_machine
from rest_framework.test import APIClient

from fleets.models import TokenScope
from fleets.personal_tokens import personal_token_create

_LINE = re.compile(r"^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(?P<labels>.*)\})? (?P<value>\S+)$")
_LABEL = re.compile(r'(?P<key>[a-zA-Z_][a-zA-Z0-9_]*)="(?P<value>(?:[^"\\]|\\.)*)",?')
_UNESCAPED = {"\\\\": "\\", '\\"': '"', "\\n": "\n"}

Series = dict[tuple[str, frozenset[tuple[str, str]]], float]


def _unescaped(value: str) -> str:
    return re.sub(r"\\[\\\"n]", lambda found: _UNESCAPED[found.group(0)], value)


def parsed(text: str) -> Series:
    """Every sample of an exposition (comments skipped), its label values unescaped."""
    found: Series = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        match = _LINE.match(line)
        assert match is not None, f"not a sample line: {line!r}"
        labels = frozenset(
            (label["key"], _unescaped(label["value"])) for label in _LABEL.finditer(match["labels"] or "")
        )
        found[(match["name"], labels)] = float(match["value"])
    return found


def series(found: Series, name: str, **labels: str) -> dict[frozenset[tuple[str, str]], float]:
    """The samples of ``name`` whose labels include ``labels``."""
    wanted = set(labels.items())
    return {key: value for (sample, key), value in found.items() if sample == name and wanted <= key}


METRICS = "/metrics"
INTO_THE_HOUR = timedelta(minutes=10)


def bearer(token: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client


def scraper(user: Any, scope: str = TokenScope.METRICS) -> APIClient:
    _, token = personal_token_create(user=user, name="prometheus", scope=scope)
    return bearer(token)


def scrape(client: APIClient, at: datetime, path: str = METRICS, **headers: str) -> Any:
    with time_machine.travel(at, tick=False):
        answer = client.get(path, **headers)
    assert answer.status_code == 200, answer.content
    return answer


def scraped(client: APIClient, at: datetime, path: str = METRICS) -> Series:
    return parsed(scrape(client, at, path).content.decode())
