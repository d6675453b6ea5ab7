"""The scheduling core is pure: no asyncio, gRPC, Kafka, telemetry, threads or I/O frameworks.

Services, preemption workers, `podsched simulate` and the unit tests all run this same code, so it
must not depend on how it is hosted."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

CORE = Path(__file__).resolve().parents[2] / "libs" / "podsched"
FORBIDDEN = (
    "asyncio",
    "grpc",
    "aiokafka",
    "kafka",
    "opentelemetry",
    "threading",
    "multiprocessing",
    "concurrent",
    "socket",
    "subprocess",
    "google.protobuf",
    "prometheus_client",
)
CORE_FILES = sorted(CORE.rglob("*.py"))


def imported_modules(path: Path) -> list[str]:
    modules = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            modules += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules.append(node.module)
    return modules


def test_the_core_has_modules_to_check() -> None:
    assert len(CORE_FILES) > 20


@pytest.mark.parametrize("path", CORE_FILES, ids=lambda p: str(p.relative_to(CORE)))
def test_core_module_imports_nothing_host_specific(path: Path) -> None:
    offending = [m for m in imported_modules(path) if any(m == f or m.startswith(f + ".") for f in FORBIDDEN)]
    assert offending == [], f"{path.relative_to(CORE)} imports {offending}"
