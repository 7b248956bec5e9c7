"""Celery tasks of the accounting app; each module registers its own (grid tasks live with the grid)."""

from accounting.advice import tasks as advice  # noqa: F401
from accounting.grid import tasks as grid  # noqa: F401
from accounting.scenarios import tasks as scenarios  # noqa: F401
from accounting.tasks import ledger  # noqa: F401
