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
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.apps import apps
from django.core.management import call_command
from django.utils import timezone

from accounting.grid.store import intensity_for_hours
from accounting.instruments.models import ContractualInstrument
from accounting.models import GridIntensity, NodeHourLedger
from demo import spec
from demo.summary import fleet_figures
from demo.tokens import demo_dir
from fleets.models import Node, Organization
from telemetry.collector.simulated import MODELS, SimulatedBackend, parse_simulate_spec
from telemetry.histogram import Histogram, histogram_merge, histogram_quantile
from telemetry.models import EndpointHourUsage, GpuHourUsage

HOUR = timedelta(hours=1)
COUNTED = [
    "fleets.Site", "fleets.Fleet", "fleets.Node", "fleets.Gpu", "fleets.NodeCredential",
    "accounting.NodePrice", "accounting.SiteTariff", "accounting.SiteMarketFactor", "accounting.GpuAsset",
    "accounting.GridIntensity", "accounting.NodeHourLedger",
    "telemetry.GpuSample", "telemetry.ServingSample", "telemetry.GpuHourUsage", "telemetry.EndpointHourUsage",
]  # fmt: skip


def peak_window_end() -> datetime:
    """The latest 17:00 UTC at least an hour ago (so that 17:30 is in the past too)."""
    end = (timezone.now() - HOUR).astimezone(UTC).replace(minute=0, second=0, microsecond=0)
    while end.hour != 17:
        end -= HOUR
    return end


def seed(end: datetime, hours: float) -> str:
    out = io.StringIO()
    call_command("seed_demo", "--hours", str(hours), "--end", end.isoformat(), stdout=out)
    return out.getvalue()


def counts() -> dict[str, int]:
    return {label: apps.get_model(label).objects.count() for label in COUNTED}


def per_fleet_tokens_and_energy(start: datetime, end: datetime) -> dict[str, dict[str, float]]:
    by_fleet: dict[str, dict[str, float]] = defaultdict(lambda: {"tokens": 0, "energy_j": 0.0})
    window = {"hour_start__gte": start, "hour_start__lt": end}
    for usage in EndpointHourUsage.objects.filter(**window).select_related("endpoint__node__fleet"):
        by_fleet[usage.endpoint.node.fleet.name]["tokens"] += usage.prompt_tokens + usage.generation_tokens
    for gpu_usage in GpuHourUsage.objects.filter(**window).select_related("gpu__node__fleet"):
        by_fleet[gpu_usage.gpu.node.fleet.name]["energy_j"] += gpu_usage.energy_j
    return by_fleet


def cost_per_1m_tokens(fleet: str, start: datetime, end: datetime) -> Decimal:
    lines = NodeHourLedger.objects.filter(fleet__name=fleet, hour_start__gte=start, hour_start__lt=end)
    cost = sum((line.cost for line in lines), Decimal(0))
    tokens = sum(line.prompt_tokens + line.generation_tokens for line in lines)
    return cost / tokens * 1_000_000


def p99_ttft_s(fleet: str, start: datetime, end: datetime) -> float | None:
    rows = EndpointHourUsage.objects.filter(
        endpoint__node__fleet__name=fleet, hour_start__gte=start, hour_start__lt=end
    )
    histograms = [Histogram(tuple(r.ttft_bucket_bounds_s), tuple(r.ttft_bucket_counts)) for r in rows]
    merged = histogram_merge(histograms, coarsen=True)
    assert merged is not None
    return histogram_quantile(0.99, merged)


def expected_generation_tokens(node: Node, start: datetime, end: datetime) -> float:
    """What the node's simulated vLLM generates in ``[start, end)``, computed from the simulator alone."""
    node_spec = next(n for _, n in spec.all_nodes() if n.hostname == node.hostname)
    backend = SimulatedBackend(parse_simulate_spec(node_spec.simulate), seed=spec.SEED, hostname=node.hostname)
    first, last = int(start.timestamp()), int(end.timestamp())
    rate = MODELS[node_spec.model].generation_tokens_per_s
    return sum(rate * backend.load_integral(gpu, first, last) for gpu in backend.gpus)


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

    # the consumer fleet is cheaper per 1M tokens; the enterprise fleet answers faster and uses less energy per token
    assert cost_per_1m_tokens("consumer", start, end) < cost_per_1m_tokens("enterprise", start, end)
    enterprise_p99, consumer_p99 = p99_ttft_s("enterprise", start, end), p99_ttft_s("consumer", start, end)
    assert enterprise_p99 is not None and consumer_p99 is not None
    assert enterprise_p99 < 0.08 < 0.11 < consumer_p99
    usage = per_fleet_tokens_and_energy(start, end)
    j_per_token = {fleet: u["energy_j"] / u["tokens"] for fleet, u in usage.items()}
    assert j_per_token["enterprise"] < j_per_token["consumer"]

    # the command's own summary says the same
    figures = {f.fleet: f for f in fleet_figures(organization=organization, start=start, end=end)}
    assert figures["consumer"].cost_per_1m_tokens == cost_per_1m_tokens("consumer", start, end)
    assert figures["enterprise"].p99_ttft_s == pytest.approx(enterprise_p99)
    assert f"Login: {spec.USERNAME} / {spec.PASSWORD}" in output and "http://" in output

    # the grid intensity is the organization's own, labelled as simulated, never a fallback
    lines = NodeHourLedger.objects.filter(organization=organization)
    assert set(lines.values_list("location_source", flat=True)) == {spec.SIMULATED_INTENSITY_SOURCE}
    assert not lines.filter(location_is_fallback=True).exists()

    # Scope 2: a solar PPA at the data centre and guarantees of origin in Stockholm, sized from the lines
    instruments = {i.site.name: i for i in ContractualInstrument.objects.filter(organization=organization)}
    assert set(instruments) == {"dc-sjc", "home-sto"}
    sjc_mwh = sum((line.facility_kwh for line in lines.filter(site__name="dc-sjc")), Decimal(0)) / 1000
    assert instruments["dc-sjc"].volume_mwh == pytest.approx(sjc_mwh * Decimal("0.8"), rel=Decimal("0.001"))
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
    assert counts() == before
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
