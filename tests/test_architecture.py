"""The import contracts of `.importlinter` hold, and each one fails on an import that breaks it.

`make lint` runs `lint-imports`; these tests run it on a copy of the source so a
contract that matched nothing (a typo in a module name, a dropped line) cannot
pass silently: one violating import per contract must turn it BROKEN.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = (
    "config", "fleets", "common", "governance", "grid", "telemetry", "accounting",
    "reports", "scope2", "advice", "scenarios", "dashboards", "demo",
)  # fmt: skip
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"

# One import per contract (module that imports, what it imports), each breaking exactly that contract.
VIOLATIONS = {
    # an import that runs back up: the grid (below the ledger) reaching into the ledger's models
    "the apps are layers: no import runs back up": ("grid/_probe.py", "import accounting.models"),
    "config imports no app module": ("config/_probe.py", "import fleets.models"),
    "the apps import nothing of config": ("accounting/_probe.py", "import config.env"),
    "the arithmetic and the collector import no framework": ("accounting/ledger/_probe.py", "import django.db"),
    "grid and its provider modules import no framework": (
        "grid/hours.py",
        "from django.utils import timezone",
    ),
    "the Scope 2 arithmetic imports no framework and no app model": (
        "scope2/cfe.py",
        "import fleets.models",
    ),
    "the collector imports nothing of the server": ("telemetry/collector/_probe.py", "import telemetry.histogram"),
    "the advice arithmetic (load bands, advisor, windows) imports no framework and no app model": (
        "advice/advisor.py",
        "from django.db import models",
    ),
    "the scenario replay arithmetic imports no framework and no app model": (
        "scenarios/replay.py",
        "import fleets.models",
    ),
}


def lint_imports(where: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--config", str(where / ".importlinter")],
        cwd=where,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(where)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def source_copy(where: Path) -> Path:
    skip = shutil.ignore_patterns("__pycache__", "data", "templates", "*.json")
    for package in PACKAGES:
        shutil.copytree(ROOT / package, where / package, ignore=skip)
    shutil.copy(ROOT / ".importlinter", where / ".importlinter")
    return where


def verdicts(output: str) -> dict[str, str]:
    """KEPT, BROKEN or MISSING for each contract, read from lint-imports' summary (long names wrap)."""
    summary = " ".join(output.split())
    found = {}
    for name in VIOLATIONS:
        if name not in summary:
            found[name] = "MISSING"
            continue
        after = summary[summary.index(name) :]
        kept, broken = after.find(" KEPT"), after.find(" BROKEN")
        found[name] = "BROKEN" if broken != -1 and (kept == -1 or broken < kept) else "KEPT"
    return found


def test_the_source_keeps_every_contract():
    result = lint_imports(ROOT)

    assert result.returncode == 0, result.stdout + result.stderr
    assert verdicts(result.stdout) == dict.fromkeys(VIOLATIONS, "KEPT"), result.stdout


@pytest.mark.parametrize("contract", sorted(VIOLATIONS))
def test_a_contract_fails_on_an_import_that_breaks_it(contract: str, tmp_path: Path):
    # given: a copy of the source, which keeps every contract
    copy = source_copy(tmp_path)
    # when: one module gains an import that breaks this contract
    module, statement = VIOLATIONS[contract]
    path = copy / module
    path.write_text((path.read_text() if path.exists() else "") + f"\n{statement}\n")
    result = lint_imports(copy)

    # then: lint-imports fails, on this contract only
    assert result.returncode != 0
    expected = dict.fromkeys(VIOLATIONS, "KEPT") | {contract: "BROKEN"}
    assert verdicts(result.stdout) == expected, result.stdout
