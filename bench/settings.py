"""Settings for the bench's reference server: Wattledger's own, plus the bare reference view (``bench.urls``)."""

from config.settings import *  # noqa: F403

ROOT_URLCONF = "bench.urls"
