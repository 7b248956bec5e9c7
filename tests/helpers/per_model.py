"""vLLM pages read by the collector's scraper, and the batch it builds from them."""

from __future__ import annotations

from telemetry.collector.backend import ServingReading
from telemetry.collector.batching import BatchBuilder, SpoolState
from telemetry.collector.epochs import EpochBook
from telemetry.collector.serving import PrometheusEndpoint
from tests.helpers.rollup import H

METRICS_URL = "http://127.0.0.1:8000/metrics"


def scraped(pages: list[str]) -> list[ServingReading]:
    """The readings of one scraper reading ``pages`` one after the other, 10 s apart from H+600."""
    page = iter(pages)
    endpoint = PrometheusEndpoint(METRICS_URL, (), book=EpochBook(), fetch=lambda _url, _timeout: next(page))
    return [reading for i in range(len(pages)) for reading in endpoint.read(H + 600 + 10 * i)]


def batch_of(readings: list[ServingReading]) -> dict:
    builder = BatchBuilder(hostname="gpu-01", sample_interval_s=1.0, spool_state=lambda: SpoolState(0, 0))
    for reading in readings:
        builder.add_serving(reading)
    built = builder.build(sent_at=H + 620)
    assert built is not None
    return built.payload
