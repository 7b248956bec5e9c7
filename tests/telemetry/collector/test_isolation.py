"""The collector imports only the standard library, its own modules, pynvml and (optionally) orjson."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

COLLECTOR = Path(__file__).resolve().parents[3] / "telemetry" / "collector"
ALLOWED = {"pynvml", "orjson"}


def imported_roots(path: Path) -> set[str]:
    roots = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


def test_every_collector_import_is_stdlib_relative_or_allowed():
    offenders = {
        f"{path.name}: {root}"
        for path in COLLECTOR.glob("*.py")
        for root in imported_roots(path)
        if root not in sys.stdlib_module_names and root not in ALLOWED and root != "__future__"
    }

    assert offenders == set()
