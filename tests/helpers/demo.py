"""What the demo tests share: a stream that records what the demo prints, the seed's time windows."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from django.utils import timezone

from demo import spec
from fleets.models import Node
from telemetry.collector.simprofiles import LLMS, serving_profile
from telemetry.collector.simulated import SimulatedBackend, parse_simulate_spec


class FakeStream:
    def __init__(self, tty: bool) -> None:
        self.text, self.tty = "", tty

    def write(self, text: str) -> None:
        self.text += text

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return self.tty


HOUR = timedelta(hours=1)


def peak_window_end() -> datetime:
    """The latest weekday 17:00 UTC at least an hour ago (so that 17:30 is in the past too): the demo's fleets
    run their weekday peak before it (``telemetry.collector.simulated``: weekends at 40-60 % of it, where the
    fleets' latencies lie closer together than the study's shape at load)."""
    end = (timezone.now() - HOUR).astimezone(UTC).replace(minute=0, second=0, microsecond=0)
    while end.hour != 17 or end.weekday() >= 5:
        end -= HOUR
    return end


def expected_generation_tokens(node: Node, start: datetime, end: datetime) -> float:
    """What the node's simulated vLLM generates in ``[start, end)``, computed from the simulator alone."""
    fleet_spec, node_spec = next((f, n) for f, n in spec.all_nodes() if n.hostname == node.hostname)
    simulate = parse_simulate_spec(node_spec.simulate)
    backend = SimulatedBackend(simulate, seed=spec.SEED, hostname=node.hostname, pattern=fleet_spec.load_pattern)
    rate = serving_profile(node_spec.model, LLMS[node_spec.llm]).output_tokens_per_s_per_gpu * node_spec.gpu_count
    return rate * backend.load.integral(start.timestamp(), end.timestamp())
