"""What the test suite changes: a fixed key, plain HTTP, fast password hashing."""

import os
from pathlib import Path

# Each test run keeps its SQLite file, broker folder and results apart from a running
# demo's and from another run's; processes the tests start inherit the same folder.
os.environ.setdefault(
    "WATTLEDGER_VAR_DIR", str(Path(__file__).resolve().parent.parent / "var" / "test" / f"run-{os.getpid()}")
)

os.environ.setdefault("SECRET_KEY", "test-only-key-" + "x7Qp2Lr9Vz4Nc8Tb1Wm6Hd3Jf5Kg0Sy" * 2)
os.environ.setdefault("SECURE_SSL_REDIRECT", "0")
os.environ.setdefault("SESSION_COOKIE_SECURE", "0")
os.environ.setdefault("CSRF_COOKIE_SECURE", "0")
os.environ.setdefault("SECURE_HSTS_SECONDS", "0")
os.environ.setdefault("DEMO_ENABLED", "1")  # the demo app's own tests, and the suite's seeded demos

from config.settings import *  # noqa: F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
WHITENOISE_AUTOREFRESH = True  # serve from the finders: tests run without collectstatic
