"""The ``curl`` examples of the README and of the app docs, run as written against a live gunicorn, so that they
cannot go stale.

The README's run verbatim against ``make demo``: in one shell, in order, against a server holding the demo's
organization (``demo-ai``) and login, its first commands signing in and creating the token the others use; only
the host (``http://127.0.0.1:8000``) is replaced by the test server's. The app docs' each run on their own with
a real personal token: their host (``https://ledger.example.com``) replaced, ``$WATTLEDGER_TOKEN`` a token
issued to a member of the organization ``acme-ai``."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from django.core.management import call_command

from demo import spec
from demo.server import temporary_server
from fleets.models import PersonalToken, Role
from fleets.personal_tokens import personal_token_create
from tests.helpers.dashboard_data import two_fleets
from tests.helpers.factories import MembershipFactory, OrganizationFactory, UserFactory

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE_HOST = "https://ledger.example.com"
DEMO_HOST = "http://127.0.0.1:8000"  # the README's: `make demo`
# The files whose examples are run: the README's first API call, and the app docs the rest moved to.
DOCUMENTED = ("README.md", "docs/reports.md", "docs/grid.md", "docs/advice.md", "docs/scenarios.md")
DOCS = DOCUMENTED[1:]  # each example on its own; the README's as one session (its first ones make the token)


def curl_examples(path: str) -> list[str]:
    """Every ``curl`` command in the ``sh`` blocks of ``path``, continuation lines joined."""
    text = (ROOT / path).read_text()
    commands = []
    for block in re.findall(r"```sh\n(.*?)```", text, re.S):
        joined = re.sub(r"\\\n\s*", " ", block)
        commands += [line.strip() for line in joined.splitlines() if line.strip().startswith("curl ")]
    return commands


def documented_curl_examples(paths: tuple[str, ...] = DOCUMENTED) -> list[str]:
    """Every ``curl`` command of ``paths`` (the README and the documented app docs), in that order, each once."""
    return list(dict.fromkeys(command for path in paths for command in curl_examples(path)))


def readme_session() -> str:
    """The README's ``sh`` blocks that call the API, continuation lines joined, in order: one shell script."""
    blocks = re.findall(r"```sh\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    return "\n".join(re.sub(r"\\\n\s*", " ", block) for block in blocks if "/api/v1/" in block)


@pytest.mark.parametrize("path", DOCUMENTED)
def test_each_documented_file_has_curl_examples(path):
    assert curl_examples(path), f"{path} holds no curl example: drop it from DOCUMENTED or restore them"


def _params() -> list[object]:
    return [
        pytest.param(command, id=f"{number}-{command.split('/api/v1/', 1)[-1][:40]}")
        for number, command in enumerate(documented_curl_examples(DOCS))
    ]


def test_the_docs_have_curl_examples_for_every_report_and_the_csv_upload():
    paths = " ".join(documented_curl_examples())
    for endpoint in ("reports/usage/", "reports/comparison/", "reports/sustainability/", "grid/intensity.csv"):
        assert f"/api/v1/{endpoint}" in paths, endpoint
    assert "/api/v1/reports/usage/" in " ".join(curl_examples("README.md")), "the README's first API call"


@pytest.fixture
def token(transactional_db):
    organization = OrganizationFactory(name="Acme AI", slug="acme-ai")
    two_fleets(organization)  # fleet 1 (enterprise) is the README's baseline
    user = UserFactory(username="carbon-tool-owner")
    MembershipFactory(user=user, organization=organization, role=Role.ADMIN)
    _, secret = personal_token_create(user=user, name="carbon tool")
    return secret


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("curl") is None, reason="needs curl")
@pytest.mark.django_db(transaction=True, reset_sequences=True)
@pytest.mark.parametrize("command", _params())
def test_a_documented_curl_example_answers_2xx(command, token, tmp_path):
    (tmp_path / "hourly.csv").write_text(
        "zone,hour_start,gco2e_per_kwh,kind\nUS-CAL-CISO,2026-11-01T13:00:00Z,212.5,average\n"
    )
    with temporary_server(log_path=tmp_path / "server.log") as url:
        run = command.replace(EXAMPLE_HOST, url) + " --silent --show-error --write-out '\\nHTTP %{http_code}\\n'"
        done = subprocess.run(
            ["bash", "-c", run], cwd=tmp_path, env={**os.environ, "WATTLEDGER_TOKEN": token},
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip

    status = re.findall(r"^HTTP (\d{3})$", done.stdout, re.M)
    body = done.stdout + "".join(path.read_text() for path in tmp_path.glob("*.csv") if path.name != "hourly.csv")
    assert done.returncode == 0, done.stderr
    assert status and status[-1].startswith("2"), f"{command}\n{done.stdout}\n{done.stderr}"
    assert body.strip(), "an answer with content"


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("curl") is None, reason="needs curl")
@pytest.mark.django_db(transaction=True)
def test_the_readme_examples_run_verbatim_against_the_demo(tmp_path):
    # given: the demo's organization, fleets and login, as `make demo` seeds them (its history aside)
    call_command("seed_demo", "--no-backfill", stdout=io.StringIO())
    script = readme_session()
    assert "/api/v1/tokens/" in script and "organization=demo-ai" in script and EXAMPLE_HOST not in script
    # every curl fails on an HTTP error, and the session stops at the first failure
    strict = "set -euo pipefail\ncurl() { command curl --fail-with-body --show-error --write-out '\\n' \"$@\"; }\n"

    with temporary_server(log_path=tmp_path / "server.log") as url:
        done = subprocess.run(
            ["bash", "-c", strict + script.replace(DEMO_HOST, url) + '\ntest -n "$WATTLEDGER_TOKEN"'],
            cwd=tmp_path, env={k: v for k, v in os.environ.items() if k != "WATTLEDGER_TOKEN"},
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip

    assert done.returncode == 0, f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    assert PersonalToken.objects.filter(name="first steps", user__username=spec.USERNAME).count() == 1
    answers = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert len(answers) == 4, done.stdout[-3000:]  # usage twice, the comparison, the sustainability report
    assert answers[-1]["organization"] == "demo-ai" and answers[-1]["market_basis"] == "scope2_instruments"
