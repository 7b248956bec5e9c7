"""Celery tasks of the accounting app; each module registers its own."""

from accounting.tasks import grid, ledger  # noqa: F401
