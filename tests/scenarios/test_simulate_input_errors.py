"""`podsched simulate` on input it cannot apply: the errors kubectl prints for the same files (the
scenario files cover what it decides; see test_simulate_parity.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from podsched_cli.main import main


def test_unparsable_files_and_unknown_kinds_are_reported_as_kubectl_reports_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\n  labels: [\n")
    unknown = tmp_path / "unknown.yaml"
    unknown.write_text("apiVersion: v1\nkind: Foo\nmetadata: {name: f}\n")
    capsys.readouterr()
    assert main(["simulate", "-f", str(broken), "-f", str(unknown), "-o", "json"]) == 0
    messages = [r["message"] for r in json.loads(capsys.readouterr().out)["rejected"]]
    assert messages[0].startswith(f"error: error parsing {broken}: error converting YAML to JSON: yaml: line ")
    assert messages[1] == (
        f'error: resource mapping not found for name: "f" namespace: "" from "{unknown}": '
        'no matches for kind "Foo" in version "v1"\nensure CRDs are installed first'
    )
