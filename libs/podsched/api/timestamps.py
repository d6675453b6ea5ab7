"""RFC3339 timestamps (metav1.Time on the wire) <-> seconds since the epoch, the clock's unit.

Both directions are exact: a timestamp survives any number of encode/decode round trips, so an
object written by `podsched get -o yaml` and read back compares equal to the original.
"""

from __future__ import annotations

import calendar
import math
import re
from datetime import UTC, datetime
from fractions import Fraction

_RFC3339_RE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?([Zz]|[+-]\d{2}:\d{2})$")


def format_timestamp(seconds: float) -> str:
    """Seconds since the epoch -> RFC3339 in UTC (`2026-01-01T00:00:00Z`). Fractional seconds are
    written only when non-zero, with at least six digits (`2026-01-01T00:00:00.500000Z`) and more
    when the float needs them, so that `parse_timestamp(format_timestamp(t)) == t` for every t."""
    whole = math.floor(seconds)
    fraction = Fraction(repr(seconds)) - whole  # the shortest decimal that reproduces the float
    text = datetime.fromtimestamp(whole, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S")
    if not fraction:
        return f"{text}Z"
    places = 0
    while (fraction * 10**places).denominator != 1:
        places += 1
    digits = str(fraction.numerator * (10**places // fraction.denominator)).rjust(places, "0").rstrip("0")
    return f"{text}.{digits.ljust(6, '0')}Z"


def parse_timestamp(text: str) -> float:
    """RFC3339 (any offset, any number of fractional digits) -> seconds since the epoch, rounded
    once from the exact value. Raises ValueError when the text is not RFC3339."""
    match = _RFC3339_RE.match(text.strip())
    if match is None:
        raise ValueError(f"not an RFC3339 timestamp: {text!r}")
    year, month, day, hour, minute, second = (int(part) for part in match.groups()[:6])
    datetime(year, month, day, hour, minute, second)  # range check: raises ValueError
    whole = calendar.timegm((year, month, day, hour, minute, second, 0, 0, 0))
    zone = match.group(8)
    if zone not in ("Z", "z"):
        sign = 1 if zone[0] == "+" else -1
        whole -= sign * (int(zone[1:3]) * 3600 + int(zone[4:6]) * 60)
    fraction = Fraction("0." + match.group(7)) if match.group(7) else Fraction(0)
    return float(whole + fraction)
