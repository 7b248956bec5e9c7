"""Wattledger's collector: the agent that runs on GPU hosts.

It samples GPUs (through NVML, or a simulated fleet), scrapes inference servers'
Prometheus endpoints, batches the samples in the ingest wire format
(:mod:`.wire`), keeps every batch in a disk spool until the server acknowledged
it, and sends it with retries. Run it with ``python -m telemetry.collector``.

It imports nothing from Django or the rest of the project (enforced by
``ruff.toml`` here and by a test), so it can be installed alone with its own
``requirements.txt``.
"""

__version__ = "1.0"
