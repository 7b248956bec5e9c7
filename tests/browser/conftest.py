"""Browser tests: Debian's headless Chromium driven by Playwright (which never downloads a browser here).

``browser_page`` collects console errors in ``page.console_errors``; ``tests.helpers.browser.shoot`` saves
a full-page screenshot under test-results/screenshots/.
"""

from __future__ import annotations

import pytest
from django.db import connections

from tests.helpers.browser import CHROMIUM


@pytest.fixture
def browser_page(monkeypatch):
    from playwright.sync_api import sync_playwright

    # Playwright's sync API runs an event loop in this thread; the ORM calls of the fixtures stay sync.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

    args = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--no-first-run", "--disable-quic"]  # fmt: skip
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=args)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        errors: list[str] = []
        page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.console_errors = errors  # type: ignore[attr-defined]
        yield page
        # Inside Playwright's sync API the ORM calls run in another context, so on a connection of their own:
        # closed here, or PostgreSQL would refuse to drop the test database while it is open.
        connections.close_all()
        browser.close()
