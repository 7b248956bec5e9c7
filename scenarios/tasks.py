"""The scenario run task, and how pages and the API enqueue it (after their transaction commits)."""

from __future__ import annotations

from celery import shared_task
from django.db import transaction
from django.utils import timezone

from scenarios.services import scenario_run


@shared_task(name="accounting.scenario_run_task")
def scenario_run_task(scenario_id: int) -> str:
    """Replay a queued scenario and store its result. Idempotent: a scenario not queued is left alone."""
    return scenario_run(scenario_id=scenario_id, now=timezone.now())


def scenario_run_enqueue(*, scenario_id: int) -> None:
    """Send the run to a worker once the claim that queued it is committed."""
    transaction.on_commit(lambda: scenario_run_task.delay(scenario_id))
