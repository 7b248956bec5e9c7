"""``seed_demo`` end to end: simulated collectors -> a real gunicorn on the test database -> rollups -> ledger.

One short window at the daily peak (15:00-17:00 UTC, when the simulated load
is high), seeded three times: once, again with the same window (nothing may
change), and once more half an hour later (it resumes, without counting a
token twice).
"""

from __future__ import annotations

import io
import stat
from collections import defaultdict
from datetime import UTC, datetime
from decimal import Decimal

import pytest
from django.apps import apps
from django.core.management import call_command
from django.utils import timezone

from accounting.models import NodeHourLedger
from advice.models import Advice, WorkloadClass
from demo import spec
from demo.tokens import demo_dir
from fleets.models import Node, Organization
from grid.models import GridIntensity
from grid.stored_intensity import intensity_for_hours
from scope2.models import ContractualInstrument
from telemetry.collector.simprofiles import LLAMA_8B, QWEN_14B
from telemetry.histogram import Histogram, histogram_merge, histogram_quantile
from telemetry.models import EndpointHourUsage, ServingEndpoint
from tests.helpers.demo import HOUR, expected_generation_tokens, peak_window_end

pytestmark = pytest.mark.slow
COUNTED = [
    "fleets.Site", "fleets.Fleet", "fleets.Node", "fleets.Gpu", "fleets.NodeCredential",
    "accounting.NodePrice", "accounting.SiteTariff", "accounting.SiteMarketFactor", "accounting.GpuAsset",
    "grid.GridIntensity", "accounting.NodeHourLedger",
    "telemetry.GpuSample", "telemetry.ServingSample", "telemetry.GpuHourUsage", "telemetry.EndpointHourUsage",
]  # fmt: skip


def seed(end: datetime, hours: float) -> str:
    out = io.StringIO()
    call_command("seed_demo", "--hours", str(hours), "--end", end.isoformat(), stdout=out)
    return out.getvalue()


def counts() -> dict[str, int]:
    return {label: apps.get_model(label).objects.count() for label in COUNTED}


def llm_of_nodes() -> dict[int, str]:
    """Each node's LLM, as its endpoint reported it (one endpoint, one model per demo node)."""
    return dict(ServingEndpoint.objects.values_list("node_id", "model_name"))


def ledger_by(start: datetime, end: datetime) -> dict[tuple[str, str], dict[str, Decimal]]:
    """Per (fleet, LLM or "all") from the ledger's node-hour lines: cost, IT kWh, GPU-hours, output tokens."""
    llm_of = llm_of_nodes()
    sums: dict[tuple[str, str], dict[str, Decimal]] = defaultdict(lambda: defaultdict(Decimal))
    for line in NodeHourLedger.objects.filter(hour_start__gte=start, hour_start__lt=end).select_related("fleet"):
        for key in ((line.fleet.name, llm_of[line.node_id]), (line.fleet.name, "all")):
            sums[key]["cost"] += line.cost
            sums[key]["it_kwh"] += line.it_kwh
            sums[key]["idle_gpu_h"] += line.idle_gpu_h
            sums[key]["gpu_h"] += line.gpu_h
            sums[key]["output_tokens"] += line.generation_tokens
    return sums


def cost_per_1m_output_tokens(sums: dict[str, Decimal]) -> Decimal:
    return sums["cost"] / sums["output_tokens"] * 1_000_000


def j_per_output_token(sums: dict[str, Decimal]) -> Decimal:
    return sums["it_kwh"] * Decimal(3_600_000) / sums["output_tokens"]


def p99_ttft_s(fleet: str, start: datetime, end: datetime, llm: str | None = None) -> float | None:
    rows = EndpointHourUsage.objects.filter(
        endpoint__node__fleet__name=fleet, hour_start__gte=start, hour_start__lt=end
    )
    if llm is not None:
        rows = rows.filter(endpoint__model_name=llm)
    histograms = [Histogram(tuple(r.ttft_bucket_bounds_s), tuple(r.ttft_bucket_counts or ())) for r in rows]
    merged = histogram_merge(histograms, coarsen=True)
    assert merged is not None
    return histogram_quantile(0.99, merged)


def mean_itl_s(fleet: str, llm: str, start: datetime, end: datetime) -> float:
    """Mean inter-token latency over the fleet's endpoint-hours of ``llm`` (the hours' sums over their counts)."""
    rows = EndpointHourUsage.objects.filter(
        endpoint__node__fleet__name=fleet, endpoint__model_name=llm, hour_start__gte=start, hour_start__lt=end
    ).values_list("itl_sum_s", "itl_bucket_counts")
    total_s, count = sum(row[0] or 0 for row in rows), sum(sum(row[1] or ()) for row in rows)
    assert count > 0, (fleet, llm)
    return float(total_s) / count


@pytest.mark.django_db(transaction=True)
def test_seed_demo_builds_a_ledger_where_consumer_is_cheaper_and_enterprise_faster_and_leaner():
    # given: an empty database; when: the demo is seeded for two hours at the daily peak
    end = peak_window_end()
    start = end - 2 * HOUR
    output = seed(end, hours=2)

    # then: both fleets, all their nodes and a line for every node-hour
    organization = Organization.objects.get(name=spec.ORGANIZATION)
    nodes = list(Node.objects.filter(fleet__organization=organization))
    assert len(nodes) == 8 and {n.fleet.name for n in nodes} == {"enterprise", "consumer"}
    for node in nodes:
        assert node.commissioned_at == start
        hours = set(NodeHourLedger.objects.filter(node=node).values_list("hour_start", flat=True))
        assert hours == {start, start + HOUR}, node.hostname
        assert NodeHourLedger.objects.filter(node=node, generation_tokens__gt=0).count() == 2

    # the study's shape, from the ledger: per LLM, the consumer fleet is cheaper per 1M output tokens; the
    # enterprise fleet's P99 TTFT is several times lower, and so is its J per output token: about 2x on the
    # 8B and 6x on the 14B (the study's runs at their board limits give 2.1x and 6.2x at full load)
    sums = ledger_by(start, end)
    for llm in (LLAMA_8B, QWEN_14B, "all"):
        consumer, enterprise = sums[("consumer", llm)], sums[("enterprise", llm)]
        assert cost_per_1m_output_tokens(consumer) < Decimal("0.75") * cost_per_1m_output_tokens(enterprise), llm
    j_ratio = {
        llm: j_per_output_token(sums[("consumer", llm)]) / j_per_output_token(sums[("enterprise", llm)])
        for llm in (LLAMA_8B, QWEN_14B)
    }
    assert 1.5 < j_ratio[LLAMA_8B] < 3 and 4.5 < j_ratio[QWEN_14B] < 9, j_ratio
    for llm, at_least in ((LLAMA_8B, 3), (QWEN_14B, 8)):
        enterprise_p99, consumer_p99 = (
            p99_ttft_s("enterprise", start, end, llm),
            p99_ttft_s("consumer", start, end, llm),
        )
        assert enterprise_p99 is not None and consumer_p99 is not None
        assert enterprise_p99 < 0.1 and consumer_p99 > at_least * enterprise_p99, (llm, enterprise_p99, consumer_p99)
    enterprise_p99 = p99_ttft_s("enterprise", start, end)
    # the time per output token too (the study: ~14 vs ~28 ms on the 8B, ~22 vs ~39 ms on the 14B at full load)
    for llm in (LLAMA_8B, QWEN_14B):
        assert 1.5 * mean_itl_s("enterprise", llm, start, end) < mean_itl_s("consumer", llm, start, end), llm

    # the command's own summary is the comparison report by LLM model (reports.headline): a row per fleet and
    # LLM, then a ratio per LLM, idle shown apart
    assert f"Login: {spec.USERNAME} / {spec.PASSWORD}" in output and "http://" in output
    assert "cost/1M output" in output and output.count(QWEN_14B) == 3
    assert "idle shown apart" in output and f"{QWEN_14B}: consumer costs " in output

    # the workload classes, each with an advice that says two hours are too little to advise on
    classes = {c.name: c for c in WorkloadClass.objects.filter(organization=organization)}
    assert {name: c.llm_model for name, c in classes.items()} == {
        "Chat assistant": LLAMA_8B, "Document summaries": QWEN_14B
    }  # fmt: skip
    assert classes["Document summaries"].deadline_h == 24 and classes["Chat assistant"].deadline_h is None
    for workload_class in classes.values():
        advice = Advice.objects.get(workload_class=workload_class)
        assert advice.status == "insufficient_data" and "fewer than 24 measured hours" in advice.explanation

        # the grid intensity is the organization's own, labelled as simulated, never a fallback
    lines = NodeHourLedger.objects.filter(organization=organization)
    assert set(lines.values_list("location_source", flat=True)) == {spec.SIMULATED_INTENSITY_SOURCE}
    assert not lines.filter(location_is_fallback=True).exists()

    # Scope 2: a solar PPA in Berlin and guarantees of origin in Stockholm, sized from the Scope 2 lines; none at
    # the data centre, whose rented nodes have power in the rent (the provider's Scope 2, the demo's Scope 3)
    instruments = {i.site.name: i for i in ContractualInstrument.objects.filter(organization=organization)}
    assert set(instruments) == {"home-ber", "home-sto"}
    ber_mwh = sum((line.facility_kwh for line in lines.filter(site__name="home-ber")), Decimal(0)) / 1000
    assert instruments["home-ber"].volume_mwh == pytest.approx(ber_mwh * Decimal("0.8"), rel=Decimal("0.001"))
    sto_owned = lines.filter(site__name="home-sto", node__tenure="owned")
    sto_mwh = sum((line.facility_kwh for line in sto_owned), Decimal(0)) / 1000
    assert instruments["home-sto"].volume_mwh == pytest.approx(sto_mwh, rel=Decimal("0.001"))
    zones = {"US-CAL-CISO", "SE-SE3", "DE", "PL"}
    stored = GridIntensity.objects.filter(organization=organization, source=spec.SIMULATED_INTENSITY_SOURCE)
    assert set(stored.values_list("zone", flat=True)) == zones
    resolved = intensity_for_hours(zone="PL", hours=[start], organization=organization)[start]
    assert resolved.source == spec.SIMULATED_INTENSITY_SOURCE and resolved.is_estimated

    # the live collectors' files: one private token per node and the node list
    tokens = sorted((demo_dir() / "tokens").iterdir())
    assert [path.name for path in tokens] == sorted(n.hostname for n in nodes)
    assert all(stat.S_IMODE(path.stat().st_mode) == 0o600 for path in tokens)
    assert len((demo_dir() / "nodes.tsv").read_text().splitlines()) == 8

    # when: seeded again with the same window; then: nothing changes
    before = counts()
    again = seed(end, hours=2)
    assert counts() == before and WorkloadClass.objects.count() == 2
    assert "8 node(s) already hold their whole window" in again and "backfill" not in again

    # when: seeded half an hour later; then: it resumes, and no token is counted twice
    hour_16 = {u.pk: u.generation_tokens for u in EndpointHourUsage.objects.filter(hour_start=start + HOUR)}
    seed(end + HOUR / 2, hours=2.5)
    assert {u.pk: u.generation_tokens for u in EndpointHourUsage.objects.filter(hour_start=start + HOUR)} == hour_16
    for usage in EndpointHourUsage.objects.filter(hour_start=end).select_related("endpoint__node"):
        expected = expected_generation_tokens(usage.endpoint.node, end, end + HOUR / 2)
        # A restarted server's first interval counts nothing (at most a minute); twice would be ~2x.
        assert 0.93 * expected < usage.generation_tokens <= expected, usage.endpoint.node.hostname
    assert NodeHourLedger.objects.filter(hour_start=end).count() == 8


def weekday_night_end() -> datetime:
    """04:00 UTC of the latest weekday (Monday to Friday) at least a day ago: the consumer fleet sleeps 00-06."""
    end = (timezone.now() - 24 * HOUR).astimezone(UTC).replace(hour=4, minute=0, second=0, microsecond=0)
    while end.weekday() >= 5:
        end -= 24 * HOUR
    return end


@pytest.mark.django_db(transaction=True)
def test_at_night_the_consumer_fleet_is_idle_and_its_hour_is_idle_cost():
    # given: an empty database; when: the demo is seeded for one hour of a weekday night
    end = weekday_night_end()
    seed(end, hours=1)

    # then: every consumer GPU-hour is idle (no token, no utilization) and its whole cost is idle cost,
    # while the enterprise fleet serves its night traffic
    sums = ledger_by(end - HOUR, end)
    consumer, enterprise = sums[("consumer", "all")], sums[("enterprise", "all")]
    assert consumer["output_tokens"] == 0 and consumer["gpu_h"] == 24 and consumer["idle_gpu_h"] == 24
    consumer_lines = NodeHourLedger.objects.filter(fleet__name="consumer")
    assert consumer["cost"] > 0 and sum(line.idle_cost for line in consumer_lines) == consumer["cost"]
    assert enterprise["output_tokens"] > 0 and enterprise["idle_gpu_h"] == 0
    # idle boards draw their idle power: 24 RTX 4090s at 25 W for an hour, 0.6 kWh
    assert consumer["it_kwh"] == pytest.approx(Decimal("0.6"), rel=Decimal("0.01"))
