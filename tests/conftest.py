"""Shared test setup: tests import `builders` from this folder and the packages from libs/."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for path in (ROOT / "tests", ROOT / "libs", ROOT / "services"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))
