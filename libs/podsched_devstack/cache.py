"""Where the development stack keeps what it installs and builds, and how installers take turns.

Installs (Kafka's jars, Jaeger's binary, the upstream oracle) live in ``$PODSCHED_CACHE`` or
``~/.cache/podsched``: outside the checkout, shared by every checkout on the machine, never committed.
Parallel test workers and ``make run`` beside a test run may install at once; :func:`install_lock` lets one
of them do it while the others wait and then reuse the result.

Standard library only.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

__all__ = ["cache_root", "install_lock", "is_executable"]


def cache_root() -> Path:
    """Where downloaded jars and built binaries live: ``$PODSCHED_CACHE`` or ``~/.cache/podsched``."""
    configured = os.environ.get("PODSCHED_CACHE")
    return Path(configured).expanduser() if configured else Path.home() / ".cache" / "podsched"


@contextlib.contextmanager
def install_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (created with its folder if missing) across processes.

    Callers check for the finished install again once they hold it: another process may have finished it
    while they waited.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def is_executable(binary: Path) -> bool:
    """Whether ``binary`` is a finished build: a file this user may run."""
    return binary.is_file() and os.access(binary, os.X_OK)
