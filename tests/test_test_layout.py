"""The test tree shares code through ``tests.helpers`` only: no module under tests/ imports a test module or a
conftest. Fixtures reach tests through pytest (a conftest, or a helper module that defines them); a test
module imported by another is collected twice and couples two files that should move apart freely.

Read with ``ast``, so the rule cannot drift from the code.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"
# The fault harness is a program of its own (`python -m tests.faults.run`); its tests test its modules.
HARNESS = "tests.faults"


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_names(source: str, module: str, *, is_package: bool = False) -> Iterator[tuple[int, str]]:
    """(line, dotted name) of each import in ``source``; relative imports resolved against ``module``."""
    package = module.split(".") if is_package else module.split(".")[:-1]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            origin = ".".join([*base, *([node.module] if node.module else [])])
            yield from ((node.lineno, f"{origin}.{alias.name}") for alias in node.names)


def forbidden(importer: str, name: str) -> bool:
    parts = name.split(".")
    if "conftest" in parts:
        return True
    if parts[0] != "tests" or parts[:2] == ["tests", "helpers"]:
        return False
    return not (importer.startswith(f"{HARNESS}.") and name.startswith(f"{HARNESS}."))


def forbidden_imports(source: str, module: str, *, is_package: bool = False) -> list[tuple[int, str]]:
    return [
        (line, name) for line, name in imported_names(source, module, is_package=is_package) if forbidden(module, name)
    ]


def test_no_module_under_tests_imports_a_test_module_or_a_conftest() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{line} imports {name}"
        for path in [ROOT / "conftest.py", *sorted(TESTS.rglob("*.py"))]
        for line, name in forbidden_imports(path.read_text(), module_name(path), is_package=path.name == "__init__.py")
    ]
    assert found == [], "share it through tests/helpers/ instead:\n" + "\n".join(found)


@pytest.mark.parametrize(
    ("module", "source"),
    [
        ("tests.reports.test_latency", "from tests.telemetry.test_ingest import post"),
        ("tests.reports.test_latency", "from tests.reports.conftest import END"),
        ("tests.telemetry.collector.test_cli", "from .conftest import StubServer"),
        ("tests.telemetry.collector.test_cli", "from .test_nvml import FakeGpu"),
        ("tests.grid.test_store", "from ..advice.curves_data import FAST"),
        ("tests.test_health", "from conftest import subprocess_env"),
        ("tests.test_health", "import tests.dashboards.data"),
        ("tests.helpers.reports", "from tests.telemetry import test_rollup"),
        ("tests.test_health", "def later():\n    from tests.telemetry.test_rollup import H"),
    ],
)
def test_the_rule_catches_an_import_of_another_test_module(module: str, source: str) -> None:
    assert len(forbidden_imports(source, module)) == 1


@pytest.mark.parametrize(
    ("module", "source"),
    [
        ("tests.reports.test_latency", "from tests.helpers.reports import END, START"),
        ("tests.telemetry.collector.test_cli", "from ...helpers.stub_server import StubServer"),
        ("tests.faults.test_oracle", "from tests.faults.oracle import check_raw"),
        ("tests.faults.test_faults", "from .harness import FAULTS"),
        ("tests.test_health", "from accounting.models import NodePrice"),
    ],
)
def test_the_rule_lets_helpers_the_harness_and_the_product_be_imported(module: str, source: str) -> None:
    assert forbidden_imports(source, module) == []
