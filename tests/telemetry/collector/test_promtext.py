"""The Prometheus text-format parser."""

from __future__ import annotations

import math

from telemetry.collector import promtext
from tests.helpers.expositions import MODEL, vllm


def test_labels_with_escapes_special_values_timestamps_and_exemplars() -> None:
    text = "\n".join(
        [
            "# HELP odd A metric with odd labels",
            "# TYPE odd counter",
            'odd{path="C:\\\\tmp",quote="say \\"hi\\"",nl="a\\nb",} 3 1764400000000',
            'odd{le="+Inf"} +Inf',
            "nan_metric NaN",
            'exemplar_total{a="1"} 7.5 # {trace_id="abc"} 1.0 1764400000.0',
            "  spaced_metric   42  ",
        ]
    )

    parsed = promtext.parse(text)

    first = parsed.find("odd")[0]
    assert first.labels == {"path": "C:\\tmp", "quote": 'say "hi"', "nl": "a\nb"} and first.value == 3
    assert math.isinf(parsed.find("odd", le="+Inf")[0].value)
    assert math.isnan(parsed.find("nan_metric")[0].value)
    assert parsed.total("exemplar_total") == 7.5 and parsed.total("spaced_metric") == 42
    assert parsed.types == {"odd": "counter"} and parsed.skipped_lines == 0


def test_malformed_lines_are_skipped_not_fatal() -> None:
    parsed = promtext.parse('good 1\nbad{unclosed="x" 2\n{no_name="x"} 3\nnovalue\ntoo many fields here\nfine 2\n')

    assert parsed.total("good") == 1 and parsed.total("fine") == 2
    assert parsed.skipped_lines == 4


def test_totals_sum_over_label_sets_and_absent_metrics_are_none() -> None:
    parsed = promtext.parse(vllm())

    assert parsed.total("vllm:request_success_total") == 789
    assert parsed.total("vllm:request_success_total", finished_reason="length") == 89
    assert parsed.total("vllm:not_there") is None
    assert parsed.label_values("model_name") == [MODEL]


def test_histogram_buckets_are_cumulative_with_inf_last() -> None:
    parsed = promtext.parse(vllm())

    histogram = parsed.histogram("vllm:time_to_first_token_seconds")

    assert histogram is not None
    assert histogram.bounds[0] == 0.001 and histogram.bounds[-1] == 2560.0 and len(histogram.bounds) == 22
    assert (
        len(histogram.counts) == 23
        and histogram.counts[-1] == 789
        and list(histogram.counts) == sorted(histogram.counts)
    )
    assert histogram.sum == 41.2
    assert parsed.histogram("vllm:nothing") is None
