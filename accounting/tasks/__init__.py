"""Celery tasks of the accounting app; each module registers its own."""

from accounting.tasks import grid  # noqa: F401
