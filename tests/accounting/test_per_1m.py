"""Per-1M-token figures: one helper (``ledger.units.per_1m``) for the ledger, reports, advice and scenarios."""

from __future__ import annotations

from decimal import Decimal

from accounting.ledger.units import per_1m


def test_a_quantity_per_million_tokens_divides_then_scales():
    assert per_1m(Decimal("3.324"), 300_000) == Decimal("11.08")
    assert per_1m(Decimal(1), Decimal(3)) == Decimal(1) / Decimal(3) * Decimal(1_000_000)  # the order kept


def test_without_tokens_the_figure_is_unknown_not_zero():
    assert per_1m(Decimal(5), 0) is None
    assert per_1m(Decimal(5), Decimal(0)) is None
