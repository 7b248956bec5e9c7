"""Rolling raw telemetry samples up into hourly usage: pure arithmetic, no Django.

- :func:`gpu_usage_by_hour`: GPU samples -> :class:`GpuHourUsage` per hour
  (energy from the NVML counter, or integrated power where the counter is
  missing; coverage, busy time, power, utilization, temperature, memory).
- :func:`endpoint_usage_by_hour`: serving samples -> :class:`EndpointHourUsage`
  per hour (tokens, requests, TTFT histogram).

A gap in the samples across which a cumulative counter carried on (same
epoch, not decreased) is *bridged*: the counter's increase is counted in
full, spread over the gap in proportion to time, and the hour's coverage says
so (``bridged_s``, ``bridged_gap_s``); only what no counter proves is missing.

Both take every sample within :func:`sample_window_s` of the requested hours,
in any order, and return the requested hours only; recomputing an hour from
the same samples gives the same result, so rollups can replace, not increment.
An interval whose counter counts more than hardware can
(``telemetry.collector.wire.CounterBound``: a rise, or the reading after a
restart, beyond the bound over its seconds) raises :class:`CounterImpossible`
for the hours it reaches: they are parked, not summed.
"""

from telemetry.energy.counters import CounterImpossible, counter_continues, counter_increase, counter_restarted
from telemetry.energy.gpu import (
    DEFAULT_GPU_MAX_GAP_S,
    DEFAULT_MAX_BRIDGE_S,
    EnergyMethod,
    GpuHourUsage,
    GpuPoint,
    gpu_point_key,
    gpu_usage_by_hour,
)
from telemetry.energy.hours import HOUR_S, hour_start_s_of, integer_split_by_hour, sample_window_s
from telemetry.energy.serving import (
    DEFAULT_SERVING_MAX_GAP_S,
    EndpointHourUsage,
    ServingPoint,
    endpoint_usage_by_hour,
    serving_point_key,
)

__all__ = [
    "DEFAULT_GPU_MAX_GAP_S",
    "DEFAULT_MAX_BRIDGE_S",
    "DEFAULT_SERVING_MAX_GAP_S",
    "HOUR_S",
    "CounterImpossible",
    "EndpointHourUsage",
    "EnergyMethod",
    "GpuHourUsage",
    "GpuPoint",
    "ServingPoint",
    "counter_continues",
    "counter_increase",
    "counter_restarted",
    "endpoint_usage_by_hour",
    "gpu_point_key",
    "gpu_usage_by_hour",
    "hour_start_s_of",
    "integer_split_by_hour",
    "sample_window_s",
    "serving_point_key",
]
