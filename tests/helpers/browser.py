"""The browser tests' Chromium, the password of the users they sign in, and full-page screenshots under
test-results/screenshots/."""

from __future__ import annotations

import shutil
from pathlib import Path

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
SCREENSHOTS = Path(__file__).resolve().parents[2] / "test-results" / "screenshots"
PASSWORD = "correct horse battery staple"


def shoot(page, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)
