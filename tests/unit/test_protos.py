"""protos/ is the public contract: every message, field, enum value and RPC carries a comment, each
RPC has its own request and response message, and the generated code works (`make protos`)."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

PROTOS = Path(__file__).resolve().parents[2] / "protos"
PROTO_FILES = sorted(PROTOS.rglob("*.proto"))
DECLARATION = re.compile(
    r"^\s*(message|enum|service|rpc|oneof)\s+\w+|^\s*(optional\s+|repeated\s+)?[\w.]+\s+\w+\s*=\s*\d+\s*;"
)


def undocumented(path: Path) -> list[str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    missing = []
    for number, line in enumerate(lines):
        if DECLARATION.match(line) and not lines[number - 1].strip().startswith("//"):
            missing.append(f"{path.name}:{number + 1}: {line.strip()}")
    return missing


def test_there_are_protos() -> None:
    expected = {"api.proto", "events.proto", "filter.proto", "preemption.proto", "binder.proto"}
    assert {p.name for p in PROTO_FILES} >= expected


@pytest.mark.parametrize("path", PROTO_FILES, ids=lambda p: str(p.relative_to(PROTOS)))
def test_every_declaration_is_documented(path: Path) -> None:
    assert undocumented(path) == []


@pytest.mark.parametrize("path", PROTO_FILES, ids=lambda p: str(p.relative_to(PROTOS)))
def test_packages_are_versioned(path: Path) -> None:
    package = re.search(r"^package\s+([\w.]+);", path.read_text(encoding="utf-8"), re.MULTILINE)
    assert package is not None and re.fullmatch(r"podsched\.\w+\.v\d+", package.group(1))


def generated(module: str):  # type: ignore[no-untyped-def]
    try:
        return importlib.import_module(module)
    except ImportError as error:
        pytest.fail(f"generated code is missing ({error}); run `make protos`")


SERVICES = [
    ("podsched_proto.api.v1.api_pb2", "PodSched"),
    ("podsched_proto.filter.v1.filter_pb2", "Filter"),
    ("podsched_proto.preemption.v1.preemption_pb2", "Preemption"),
    ("podsched_proto.binder.v1.binder_pb2", "Binder"),
]


@pytest.mark.parametrize(("module", "service_name"), SERVICES)
def test_each_rpc_has_its_own_request_and_response(module: str, service_name: str) -> None:
    service = generated(module).DESCRIPTOR.services_by_name[service_name]
    assert service.methods
    for method in service.methods:
        assert method.input_type.name == f"{method.name}Request"
        assert method.output_type.name in (f"{method.name}Response", "WatchEvent")


def test_generated_event_messages_round_trip() -> None:
    events = generated("podsched_proto.events.v1.events_pb2")
    change = events.ObjectChange(
        type=events.ObjectChange.MODIFIED,
        object=events.ObjectReference(kind="Pod", namespace="default", name="p", uid="u1"),
        resource_version=7,
        node_name="n1",
        priority=1000,
    )
    decoded = events.ObjectChange.FromString(change.SerializeToString())
    assert decoded == change and decoded.object.uid == "u1"
