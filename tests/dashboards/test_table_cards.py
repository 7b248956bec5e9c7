"""Every table of the dashboards sits in a card that scrolls sideways, so no page does (without a browser;
tests/browser/test_layout.py measures the pages themselves)."""

from __future__ import annotations

import re
from pathlib import Path

TEMPLATES = Path(__file__).resolve().parents[2] / "accounting" / "templates"


def test_every_dashboard_table_is_wrapped_in_a_scrolling_card():
    unwrapped = [
        f"{path.relative_to(TEMPLATES)}: {match.group(0)[:40]}"
        for path in sorted(TEMPLATES.rglob("*.html"))
        for match in re.finditer(r"(?<!<div class=\"table-card\">)<table\b[^>]*>", path.read_text())
    ]
    assert unwrapped == []
