"""CSV uploads as a client sees them: POST (202), the worker's run (here, in this process), the status polled."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from django.test import TestCase

from config.celery import app


@contextmanager
def tasks_eager() -> Iterator[None]:
    """Tasks sent meanwhile run at once in this process, their errors raised (what a worker would do)."""
    before = app.conf.task_always_eager, app.conf.task_eager_propagates
    app.conf.task_always_eager = app.conf.task_eager_propagates = True
    try:
        yield
    finally:
        app.conf.task_always_eager, app.conf.task_eager_propagates = before


def post_and_run(client: Any, url: str, data: dict[str, Any], **options: Any) -> Any:
    """POST an upload and run, in this process, the task its commit sends; return the POST's answer."""
    with TestCase.captureOnCommitCallbacks(execute=False) as callbacks:
        posted = client.post(url, data, **options)
    with tasks_eager():
        for callback in callbacks:
            callback()
    return posted


@dataclass(frozen=True)
class Answer:
    """What an upload answers in the end: the POST's refusal (400 unreadable file, 403, 404, 409), or once the
    worker is done, the status's ``result_status`` and ``result`` (the body the synchronous upload answered)."""

    status_code: int
    body: Any
    status: dict[str, Any] | None = None  # the upload's status once done, None when the POST refused it

    def json(self) -> Any:
        return self.body


def upload_answer(client: Any, url: str, data: dict[str, Any], **options: Any) -> Answer:
    """POST, run the worker's task, poll the status URL: the upload's final answer."""
    posted = post_and_run(client, url, data, **options)
    if posted.status_code != 202:
        return Answer(posted.status_code, posted.json())
    status = client.get(posted["Location"]).json()
    assert status["state"] == "done", status
    return Answer(status["result_status"], status["result"], status)
