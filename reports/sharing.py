"""How a node-hour's ledger line is shared among the LLM models served on the node in that hour: the one rule.

The rule (``SHARING_NOTE`` says it to readers): each endpoint-hour (one LLM model
at one metrics URL of a node, over one hour) takes the share of its node-hour's
line that its output tokens are of the line's (the line's output tokens are its
endpoints'): cost, energy, carbon, GPU-hours and idle alike. An endpoint-hour
without output tokens takes no share, whatever requests it served; a node-hour
without output tokens is no model's: it is the idle row (``no_output_tokens``),
never inside a model's figures, so the rows add up to the fleet. Input tokens are
each endpoint-hour's own, never shared.

Every user reads the rule here, so that two pages cannot give two answers: the
comparison, the usage report by LLM model and the load curves' SQL build their
expressions from ``SHARED_BY`` (``reports.selectors.allocation``); the
load curves' shared node-hours, hence the advisor, and the scenarios' per-model
GPU-hours compute it with ``output_token_share``.

Pure: nothing here imports a framework (the ``pure-arithmetic`` contract), so that
``reports.bands`` and ``scenarios`` may import it.
"""

from __future__ import annotations

from decimal import Decimal

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
