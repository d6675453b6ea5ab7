"""RFC3339 timestamps (metav1.Time on the wire) <-> seconds since the epoch, the clock's unit.

Both directions are exact: a timestamp survives any number of encode/decode round trips, so an
object written by `podsched get -o yaml` and read back compares equal to the original.
"""

from __future__ import annotations

import calendar
import functools
import math
import re
from datetime import UTC, datetime
from fractions import Fraction

_RFC3339_RE = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?([Zz]|[+-]\d{2}:\d{2})", re.ASCII
)
# The instants a metav1.Time can hold (years 1 to 9999 in UTC, as Go's RFC3339 formatting prints them).
_EARLIEST = calendar.timegm((1, 1, 1, 0, 0, 0, 0, 0, 0))
_LATEST = calendar.timegm((9999, 12, 31, 23, 59, 59, 0, 0, 0))


@functools.lru_cache(maxsize=16384)
def format_timestamp(seconds: float) -> str:
    """Seconds since the epoch -> RFC3339 in UTC (`2026-01-01T00:00:00Z`). Fractional seconds are
    written only when non-zero, with at least six digits (`2026-01-01T00:00:00.500000Z`) and more
    when the float needs them, so that `parse_timestamp(format_timestamp(t)) == t` for every t.

    Cached: every record of a pod writes its creationTimestamp again, and a bound pod's startTime
    is its PodScheduled condition's time. (Equal keys give equal text: 0.0 and -0.0 both write the
    epoch, and an int writes as the float it equals.)"""
    whole = math.floor(seconds)
    text = _second_text(whole)
    shortest = repr(float(seconds))  # the shortest decimal that reproduces the float
    if seconds >= 0 and "e" not in shortest:
        # Its digits after the point are the fraction's exact decimal digits (no Fraction needed).
        digits = shortest.partition(".")[2].rstrip("0")
    else:
        fraction = Fraction(shortest) - whole
        places = 0
        while (fraction * 10**places).denominator != 1:
            places += 1
        digits = str(fraction.numerator * (10**places // fraction.denominator)).rjust(places, "0").rstrip("0")
    if not digits:
        return f"{text}Z"
    return f"{text}.{digits.ljust(6, '0')}Z"


@functools.lru_cache(maxsize=4096)
def _second_text(whole: int) -> str:
    """`2026-01-01T00:00:00` for a whole second (the clock's seconds repeat: every object written in
    one second shares it)."""
    moment = datetime.fromtimestamp(whole, tz=UTC)
    # Not strftime's %Y: it does not pad years before 1000, and the text must parse back.
    return f"{moment.year:04d}-{moment:%m-%dT%H:%M:%S}"


@functools.lru_cache(maxsize=4096)
def _wall_seconds(fields: tuple[str, ...]) -> int:
    """The date and time of day (year, month, day, hour, minute, second as written) in seconds since
    the epoch, read as UTC; ValueError when no such date exists. Cached apart from whole timestamps:
    each pod's timestamps differ in their fraction of a second, but the objects written within one
    second share the rest, whose calendar arithmetic was most of parsing one."""
    year, month, day, hour, minute, second = (int(field) for field in fields)
    datetime(year, month, day, hour, minute, second)  # range check: raises ValueError
    return calendar.timegm((year, month, day, hour, minute, second, 0, 0, 0))


def parse_timestamp(text: str) -> float:
    """RFC3339 (any offset, any number of fractional digits) -> seconds since the epoch, rounded
    once from the exact value. Raises ValueError when the text is not RFC3339.

    The forms `format_timestamp` writes (UTC, `Z`, whole seconds or a fraction of one, after 1970)
    are read without the regular expression: every replica reads each pod's timestamps, and a pod's
    fraction of a second is its own, so no cache of whole texts saves that work. The answer is
    `parse_rfc3339`'s, which reads everything else (`tests/unit/test_timestamps.py` compares the
    two on any text)."""
    second = _decimal_second(text[:20])
    if second is not None:
        if text[19] == "Z":
            if len(text) == 20:
                return float(second)
        else:
            digits = text[20:-1]
            if text[-1:] == "Z" and digits.isdigit() and digits.isascii():
                seconds = float(second + digits)  # the exact decimal value, rounded once
                if seconds < _LATEST + 1:  # 9999-12-31T23:59:59.9999999Z rounds up to year 10000
                    return seconds
    return parse_rfc3339(text)


_SECOND_RE = re.compile(r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})[.Z]", re.ASCII)


@functools.lru_cache(maxsize=4096)
def _decimal_second(text: str) -> str | None:
    """`2026-01-01T00:00:00.` or `2026-01-01T00:00:00Z` (a UTC date and time of day as
    `format_timestamp` writes them, then a fraction's point or the zone) -> its seconds since the
    epoch as decimal text up to the point (`1767225600.`), to which a fraction's digits append;
    None when the text is not of that form, names no such date, or is before the epoch (whose
    fractions `parse_rfc3339` adds exactly). Cached: the objects written within one second share
    it."""
    match = _SECOND_RE.fullmatch(text)
    if match is None:
        return None
    try:
        whole = _wall_seconds(match.group(1, 2, 3, 4, 5, 6))
    except ValueError:
        return None
    return f"{whole}." if whole >= 0 else None


def parse_rfc3339(text: str) -> float:
    """`parse_timestamp` of any RFC3339 text, by the regular expression: each field read, any offset
    applied, the fraction added exactly."""
    match = _RFC3339_RE.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"not an RFC3339 timestamp: {text[:80]!r}")
    whole = _wall_seconds(match.group(1, 2, 3, 4, 5, 6))
    zone = match.group(8)
    if zone not in ("Z", "z"):
        sign = 1 if zone[0] == "+" else -1
        hours, minutes = int(zone[1:3]), int(zone[4:6])
        if hours > 23 or minutes > 59:
            raise ValueError(f"time zone offset out of range: {zone!r}")
        whole -= sign * (hours * 3600 + minutes * 60)
    if not _EARLIEST <= whole <= _LATEST:  # an offset can carry a valid local time past year 1 or 9999
        raise ValueError(f"timestamp out of range: {text[:80]!r}")
    digits = match.group(7)
    if not digits:
        seconds = float(whole)
    elif whole >= 0:
        seconds = float(f"{whole}.{digits}")  # float() of a decimal text is correctly rounded too
    else:
        seconds = float(whole + Fraction("0." + digits))
    if seconds >= _LATEST + 1:  # 9999-12-31T23:59:59.9999999Z rounds up to year 10000
        raise ValueError(f"timestamp out of range: {text[:80]!r}")
    return seconds
