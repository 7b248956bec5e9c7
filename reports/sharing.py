"""How a node-hour's ledger line is shared among the LLM models served on the node in that hour: the one rule.

The rule (``SHARING_NOTE`` says it to readers): each endpoint-hour (one LLM model
at one metrics URL of a node, over one hour) takes the share of its node-hour's
line that its output tokens are of the line's (the line's output tokens are its
endpoints'): cost, energy, carbon, GPU-hours and idle alike. An endpoint-hour
without output tokens takes no share, whatever requests it served; a node-hour
without output tokens is no model's: it is the idle row (``no_output_tokens``),
never inside a model's figures, so the rows add up to the fleet. Input tokens are
each endpoint-hour's own, never shared.

How the idle node-hours are treated is a reader's choice, named by ``IdleTreatment``:
``apart`` (the rule above: the idle row of its own) or ``shared`` (Kubecost's "share
idle"): a fleet x GPU model's idle node-hours' figures (cost, energy, CO2e,
GPU-hours, idle) are shared across the LLM models it served, in proportion to their
output tokens over the whole period (``idle_shares``); where none of its models served
an output token over the period, its idle row stays apart. Tokens are counts: an
idle row's input tokens go to the models in whole numbers (``whole_parts``).

Every user reads the rule here, so that two pages cannot give two answers: the
comparison, the usage report by LLM model and the load curves' SQL build their
expressions from ``SHARED_BY`` (``reports.selectors.allocation``); the
load curves' shared node-hours, hence the advisor, and the scenarios' per-model
GPU-hours compute it with ``output_token_share``.

Pure: nothing here imports a framework (the ``pure-arithmetic`` contract), so that
``reports.bands`` and ``scenarios`` may import it.
"""

from __future__ import annotations

import enum
from collections.abc import Hashable, Mapping
from decimal import Decimal
from typing import TypeVar

K = TypeVar("K", bound=Hashable)

# The count a share is weighed by: a column of both endpoint-hours and ledger lines, output tokens.
SHARED_BY = "generation_tokens"

# The rule, said once for the schema, the pages and the docs.
SHARING_NOTE = (
    "per LLM model, each node-hour's ledger figures (cost, energy, operational and embodied CO2e, GPU-hours, "
    "idle) are allocated by output-token share: to the LLM models served on the node in that hour in proportion "
    "to their output tokens (input tokens are each model's own); node-hours without output tokens are attributed "
    "to no LLM model and shown apart as idle, so the rows add up to the whole"
)


def output_token_share(generation_tokens: int, line_generation_tokens: int) -> Decimal | None:
    """The share (0-1) of its node-hour's line that an endpoint-hour, or one LLM model's endpoint-hours of that
    node-hour, takes: their output tokens over the line's.

    ``None`` when the line served no output token: it is no model's (the idle row), not
    shared by any other count (requests would put one hour in a model's figures and in
    the idle row at once). Zero for a part without output tokens on a line with some.
    """
    if line_generation_tokens <= 0:
        return None
    return Decimal(generation_tokens) / Decimal(line_generation_tokens)


def takes_share(generation_tokens: int) -> bool:
    """Whether an endpoint-hour takes any share of its line: it served output tokens."""
    return generation_tokens > 0


class IdleTreatment(enum.StrEnum):
    """Where per LLM model the node-hours without output tokens go (see the module's docstring)."""

    APART = "apart"
    SHARED = "shared"


# Each treatment said once, for the schema, the pages and the docs.
IDLE_NOTES = {
    IdleTreatment.APART: "idle shown apart: node-hours without output tokens are a row of their own (llm_model "
    "null), so each LLM model's unit figures leave idle capacity out",
    IdleTreatment.SHARED: "idle shared: each fleet x GPU model's node-hours without output tokens (cost, energy, "
    "CO2e, GPU-hours) are shared across the LLM models it served, in proportion to their output tokens over the "
    "period (Kubecost's share idle), so each LLM model's unit figures include its share of idle capacity",
}


def idle_shares(output_tokens: Mapping[K, int]) -> dict[K, Decimal] | None:
    """Each LLM model's share (0-1, adding up to 1) of its fleet x GPU model's idle node-hours: its output tokens
    over the period over theirs. ``None`` when none served an output token (the idle row stays apart)."""
    total = sum(tokens for tokens in output_tokens.values() if tokens > 0)
    if total <= 0:
        return None
    return {key: Decimal(tokens) / Decimal(total) for key, tokens in output_tokens.items() if tokens > 0}


def whole_parts(count: int, shares: Mapping[K, Decimal]) -> dict[K, int]:
    """``count`` (tokens) split by ``shares`` in whole numbers that add up to it (largest remainder first)."""
    exact = {key: Decimal(count) * share for key, share in shares.items()}
    parts = {key: int(value) for key, value in exact.items()}
    left = count - sum(parts.values())
    for key in sorted(exact, key=lambda k: exact[k] - parts[k], reverse=True)[: max(left, 0)]:
        parts[key] += 1
    return parts
