"""Fixtures shared by the whole suite."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings
from rest_framework.test import APIClient

from fleets.models import Role, TokenScope
from fleets.personal_tokens import personal_token_create
from tests.helpers.factories import MembershipFactory, OrganizationFactory, UserFactory
from tests.helpers.processes import subprocess_env

# The suite's hand-worked figures are at the GPU boundary: an organization without ledger settings does not
# model its hosts here (in production it does, LEDGER_MODEL_HOST_POWER_DEFAULT=1). Subprocesses (Celery
# workers, gunicorn) inherit the same choice. tests/accounting/test_energy_boundary.py covers the default.
os.environ["LEDGER_MODEL_HOST_POWER_DEFAULT"] = "0"
django_settings.LEDGER_MODEL_HOST_POWER_DEFAULT = False


@pytest.fixture(autouse=True)
def _fresh_cache() -> Iterator[None]:
    """Each test starts with an empty cache: DRF's throttle counts never carry over to the next test."""
    from django.core.cache import cache

    cache.clear()
    yield


# Host names the suite's URLs use, as a stand-in resolver answers them: no test asks real DNS.
STAND_IN_NAMES = {"hooks.example.com": "93.184.215.14", "files.example.com": "93.184.215.14"}


@pytest.fixture(autouse=True)
def _site_hours_settled_at_commit(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """On a Citus coordinator a node's ledger transaction marks its site-hours, summed once it commits
    (``accounting.site_hours``); a test's transaction never commits, so they are summed at once, as after the
    commit. A test marked ``site_hours_marked`` keeps the marks as they stand (nothing else changes elsewhere)."""
    if "site_hours_marked" not in request.keywords:
        monkeypatch.setattr("accounting.site_hours._after_commit", lambda settle: settle())


@pytest.fixture(autouse=True)
def _stand_in_resolver(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Outbound URLs (``common.outbound``) resolve from ``STAND_IN_NAMES``; other names do not resolve."""
    import socket

    from common import outbound

    names = dict(STAND_IN_NAMES)

    def resolve(host: str, port: int) -> list[tuple[Any, ...]]:
        if host not in names:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        address = names[host]
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        return [(family, socket.SOCK_STREAM, 6, "", (address, port))]

    monkeypatch.setattr(outbound, "resolve", resolve)
    return names


@pytest.fixture
def org_a(db: Any) -> Any:
    return OrganizationFactory(name="Org A", slug="org-a")


@pytest.fixture
def org_b(db: Any) -> Any:
    return OrganizationFactory(name="Org B", slug="org-b")


@pytest.fixture
def user_a(org_a: Any) -> Any:
    """An admin of Org A, with staff access to the admin site."""
    user = UserFactory(username="alice", is_staff=True)
    MembershipFactory(user=user, organization=org_a, role=Role.ADMIN)
    return user


@pytest.fixture
def user_b(org_b: Any) -> Any:
    user = UserFactory(username="bob", is_staff=True)
    MembershipFactory(user=user, organization=org_b, role=Role.ADMIN)
    return user


@pytest.fixture
def client_as(org_a: Any) -> Callable[..., APIClient]:
    """An API client with a personal token of a member of ``organization`` (Org A by default) in ``role``;
    ``scope``: the token's (reports unless asked)."""

    def make(
        role: str, organization: Any = None, username: str | None = None, scope: str = TokenScope.REPORTS
    ) -> APIClient:
        options = {"user__username": username} if username else {}
        membership = MembershipFactory(organization=organization or org_a, role=role, **options)
        _, token = personal_token_create(user=membership.user, name="test", scope=scope)
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
        return client

    return make


# A test that uses one of these starts a server or worker process (seconds, not milliseconds): it is slow.
SLOW_FIXTURES = frozenset({"celery_worker_process", "gunicorn_port"})


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark ``slow`` every test that drives Chromium or uses a real gunicorn or Celery worker, before ``-m`` selects.

    The rest of the slow set (gunicorn through `both_ways_in`, end-to-end, the demo's seed and run, the collector's
    signals, health against a stopped service, the README's curl) is marked where it is written.
    """
    for item in items:
        if item.get_closest_marker("browser") or SLOW_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Remove this run's var/ folder (test database, broker and results)."""
    import shutil

    from django.conf import settings

    if settings.VAR_DIR.name.startswith("run-"):
        shutil.rmtree(settings.VAR_DIR, ignore_errors=True)


@pytest.fixture(scope="session")
def celery_worker_process(django_db_setup: Any, django_db_blocker: Any) -> Iterator[subprocess.Popen]:
    """A real ``celery worker`` process on the configured broker, using the test database.

    The embedded default's broker is kombu's filesystem transport under the test
    var/ directory; with ``CELERY_BROKER_URL=redis://...`` it is Redis. Tests that
    rely on it use ``transactional_db`` so the worker sees their committed rows.
    """
    from config.celery import ping_task

    env = subprocess_env()
    command = [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool", "threads", "--concurrency", "2"]
    worker = subprocess.Popen([*command, "--loglevel", "WARNING"], env=env, cwd=Path(__file__).parent)
    try:
        assert ping_task.delay().get(timeout=60) == "pong", "the Celery worker did not start"
        yield worker
    finally:
        worker.terminate()
        worker.wait(timeout=30)
