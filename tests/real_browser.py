"""The system's chromium for the dashboard's browser tests, driven by the `playwright` package (which
is pointed at it: no browser is downloaded at run time). A machine without it fails the tests with the
command that installs it (never a skip: a silently skipped browser test would hide a broken CI image)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

# Debian's package; PODSCHED_CHROMIUM names another binary.
DEFAULT_CHROMIUM = "/usr/bin/chromium"
INSTALL_HINT = "make browser-install (apt-get update && apt-get install -y chromium)"


def chromium_path() -> Path | None:
    """The chromium binary to drive, or None if there is none."""
    configured = os.environ.get("PODSCHED_CHROMIUM", "")
    for candidate in (configured,) if configured else (DEFAULT_CHROMIUM, shutil.which("chromium") or ""):
        if candidate and os.access(candidate, os.X_OK):
            return Path(candidate)
    return None


def chromium_or_fail() -> Path:
    path = chromium_path()
    if path is None:
        pytest.fail(
            f"no chromium at {os.environ.get('PODSCHED_CHROMIUM') or DEFAULT_CHROMIUM}: the dashboard's tests drive "
            f"a real browser; install it with `{INSTALL_HINT}`",
            pytrace=False,
        )
    return path
