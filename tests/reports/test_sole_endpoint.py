"""A ledger line names the endpoint that holds all of it, and the comparison per LLM model reads it.

conftest's two fleets serve one endpoint each, every hour (the common case). Here the H100 node gains a
second endpoint ("qwen-14b") with prompt tokens but no output token in H2, and one with output tokens in H3:

- H1: one endpoint-hour, with output tokens: the line is that endpoint's, whole.
- H2: two endpoint-hours (qwen's served prompts only): no sole endpoint; qwen takes no share of the line
  but its prompt tokens are its own.
- H3: two endpoint-hours with output tokens: shared by output tokens.

The comparison per LLM model sums the sole endpoints' lines as they are and weighs only the others; it must
give what weighing every line gives (the lines' ``sole_endpoint`` cleared).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from accounting.models import NodeHourLedger
from accounting.node_hour_lines import ledger_node_hours_compute
from accounting.site_hours import site_hours_rebuild
from reports.selectors import fleet_comparison
from reports.sharing import IdleTreatment
from telemetry.models import ServingEndpoint
from tests.helpers.reports import END, H1, H2, H3, HOURS, START, endpoint, endpoint_hour

pytestmark = pytest.mark.django_db


@pytest.fixture
def second_model(fleets: Any) -> Any:
    qwen = endpoint(fleets.h100, "qwen-14b", "vllm")
    endpoint_hour(qwen, H2, prompt_tokens=40_000, requests=10)
    endpoint_hour(qwen, H3, prompt_tokens=100_000, generation_tokens=250_000, requests=400)
    ledger_node_hours_compute(node_id=fleets.h100.pk, hour_starts=HOURS)
    return qwen


def test_a_line_names_its_only_endpoint_hour_that_served_output_tokens(fleets, second_model):
    first = ServingEndpoint.objects.exclude(pk=second_model.pk).get(node=fleets.h100)
    lines = dict(NodeHourLedger.objects.filter(node=fleets.h100).values_list("hour_start", "sole_endpoint_id"))
    assert lines == {H1: first.pk, H2: None, H3: None}
    rtx = ServingEndpoint.objects.get(node=fleets.rtx)
    assert set(NodeHourLedger.objects.filter(node=fleets.rtx).values_list("sole_endpoint_id", flat=True)) == {rtx.pk}


def test_an_hour_without_output_tokens_names_no_endpoint(fleets):
    served = ServingEndpoint.objects.get(node=fleets.rtx)
    served.hour_usage.filter(hour_start=H2).update(generation_tokens=0, prompt_tokens=0)
    ledger_node_hours_compute(node_id=fleets.rtx.pk, hour_starts=[H2])
    assert NodeHourLedger.objects.get(node=fleets.rtx, hour_start=H2).sole_endpoint_id is None


@pytest.mark.parametrize("idle", [IdleTreatment.APART, IdleTreatment.SHARED])
def test_the_comparison_per_llm_model_equals_weighing_every_line(fleets, second_model, org_a, idle):
    def rows() -> list[Any]:
        return [
            row.stats
            for row in fleet_comparison(organization_ids=[org_a.pk], start=START, end=END, by_llm_model=True, idle=idle)
        ]

    read = rows()
    assert NodeHourLedger.objects.filter(organization=org_a, sole_endpoint__isnull=False).count() == 4  # h100 H1, rtx
    NodeHourLedger.objects.update(sole_endpoint=None)
    site_hours_rebuild()  # lines changed by hand: their site-hours (keyed by the sole endpoint) summed again
    weighed = rows()

    assert [(s.fleet_name, s.llm_model) for s in read] == [
        ("consumer", "unnamed"), ("enterprise", "qwen-14b"), ("enterprise", "unnamed"),
    ]  # fmt: skip
    for mine, theirs in zip(read, weighed, strict=True):
        assert _figures(mine.sums) == _figures(theirs.sums)
    assert [s.utilization for s in read] == pytest.approx([s.utilization for s in weighed])
    assert [s.serving for s in read] == [s.serving for s in weighed]
    # qwen's H2 prompts are its own, though it takes no share of H2's line.
    qwen = read[1].sums.totals
    assert (qwen.prompt_tokens, qwen.generation_tokens) == (140_000, 250_000)


def test_deleting_the_endpoint_leaves_the_line_to_be_weighed(fleets, org_a):
    served = ServingEndpoint.objects.get(node=fleets.rtx)
    served.delete()
    assert not NodeHourLedger.objects.filter(node=fleets.rtx, sole_endpoint__isnull=False).exists()


def _figures(sums: Any) -> dict[str, Any]:
    """Every figure of a row's ``LedgerSums`` (its totals' too), Decimals to 12 places: SQLite adds decimals as
    floating point, so adding the same lines in another grouping may move the 15th digit."""
    values = {**vars(sums.totals), **{k: v for k, v in vars(sums).items() if k != "totals"}}
    return {k: round(v, 12) if isinstance(v, Decimal) else v for k, v in values.items()}
