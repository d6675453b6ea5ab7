"""`podsched delete KIND --all | -l SELECTOR`: what the CLI refuses before it sends anything, worded as
kubectl words it (the calls themselves are tested against the running system in
tests/services/test_delete_collection_live.py)."""

from __future__ import annotations

import pytest

from podsched_cli.main import main

# Nothing listens here: a command that got as far as calling the server would fail differently.
NO_SERVER = "127.0.0.1:9"


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["pods", "--all", "-l", "app=web"], "error: cannot set --all and --selector at the same time"),
        (["pods", "--all", "--field-selector", "status.phase=Failed"], "error: cannot set --all and --field-selector"),
        (["pods", "web-0", "-l", "app=web"], "error: name cannot be provided when a selector is specified"),
        (["pods/web-0", "--all"], "error: name cannot be provided when a selector is specified"),
        (["--all"], "error: You must provide one or more resources by argument or filename."),
        (["widgets", "--all"], 'error: the server doesn\'t have a resource type "widgets"'),
        (["pods", "web-0", "-A"], "error: a resource cannot be retrieved by name across all namespaces"),
    ],
)
def test_a_collection_delete_kubectl_would_refuse_is_refused_before_any_call(
    args: list[str], line: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--server", NO_SERVER, "delete", *args]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.startswith(line)
