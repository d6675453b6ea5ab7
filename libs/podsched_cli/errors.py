"""The client's failures, each reported as one line on stderr and exit code 1."""

from __future__ import annotations


class UsageError(Exception):
    """A command kubectl would refuse before sending anything; printed as `error: <str()>`."""


class RequestFailedError(Exception):
    """A call the server refused or could not answer; `str()` is already the full line to print
    (`Error from server (NotFound): pods "p" not found`). `unreachable` says the server itself
    could not be reached, so there is no point sending it anything else."""

    def __init__(self, line: str, *, unreachable: bool = False) -> None:
        super().__init__(line)
        self.unreachable = unreachable
