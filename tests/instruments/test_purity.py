"""The Scope 2 arithmetic imports nothing from Django or the ORM (STYLE: arithmetic apart from the ORM)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import accounting.instruments

PURE = ["allocation", "cfe", "claims", "quality", "residual"]
ALLOWED_PREFIXES = ("accounting.instruments.",)


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text("utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


@pytest.mark.parametrize("module", PURE)
def test_pure_module_imports_no_django(module: str) -> None:
    path = Path(accounting.instruments.__file__).parent / f"{module}.py"
    for name in imported_modules(path):
        first = name.split(".")[0]
        assert first not in {"django", "rest_framework", "fleets", "telemetry"}, f"{module} imports {name}"
        if first == "accounting":
            assert name.startswith(ALLOWED_PREFIXES) and name.rsplit(".", 1)[-1] in PURE, f"{module} imports {name}"
