"""The Celery application: configured from Django settings (``CELERY_*``)."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("wattledger")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@app.task(name="wattledger.ping")
def ping_task() -> str:
    """Answer "pong": lets operators and tests check that a worker consumes the queue."""
    return "pong"
