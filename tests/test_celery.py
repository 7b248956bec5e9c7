"""A real worker consumes the configured broker (filesystem by default, Redis in CI)."""

import pytest

from config.celery import ping_task


@pytest.mark.celery_worker
def test_a_real_worker_process_answers_a_task(celery_worker_process):
    result = ping_task.delay()

    assert result.get(timeout=30) == "pong"
