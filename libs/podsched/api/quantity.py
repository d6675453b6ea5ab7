"""Kubernetes resource quantities (`500m`, `1.5`, `500Mi`, `1G`, `1e3`).

Parsed exactly into a Fraction, then rounded *up* like apimachinery's Quantity.Value() and
MilliValue(): a request of 0.1m CPU still reserves 1m, never 0.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

_BINARY_SUFFIXES = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL_SUFFIXES = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 1000),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
_QUANTITY_RE = re.compile(
    r"^(?P<sign>[+-]?)(?P<number>\d+(?:\.\d*)?|\.\d+)"
    r"(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?$"
)


class QuantityError(ValueError):
    """The text is not a Kubernetes quantity."""


def parse_quantity(value: str | int | float) -> Fraction:
    """Return the exact value of a Kubernetes quantity; raise QuantityError if malformed."""
    if isinstance(value, bool):
        raise QuantityError(f"quantities must match the regular expression, got {value!r}")
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise QuantityError(f"quantity must be finite, got {value!r}")
        return Fraction(str(value))
    text = str(value).strip()
    match = _QUANTITY_RE.match(text)
    if match is None:
        raise QuantityError(
            f"quantities must match the regular expression "
            f"'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$', got {value!r}"
        )
    number = Fraction(match["number"])
    suffix = match["suffix"] or ""
    if suffix in _BINARY_SUFFIXES:
        number *= _BINARY_SUFFIXES[suffix]
    elif suffix in _DECIMAL_SUFFIXES:
        number *= _DECIMAL_SUFFIXES[suffix]
    else:  # exponent form, e.g. 1e3
        exponent = int(suffix[1:])
        if abs(exponent) > 30:
            raise QuantityError(f"quantity exponent out of range in {value!r}")
        number *= Fraction(10) ** exponent
    return -number if match["sign"] == "-" else number


def to_milli(value: str | int | float) -> int:
    """MilliValue(): the quantity times 1000, rounded up."""
    return math.ceil(parse_quantity(value) * 1000)


def to_int(value: str | int | float) -> int:
    """Value(): the quantity rounded up to a whole unit."""
    return math.ceil(parse_quantity(value))


def format_milli_cpu(milli: int) -> str:
    """Render CPU the way kubectl does: `2` for whole cores, `500m` otherwise."""
    return str(milli // 1000) if milli % 1000 == 0 else f"{milli}m"


def format_bytes(value: int) -> str:
    """Render a byte count with the largest exact binary suffix (`32Gi`, `500Mi`, `1536`)."""
    for suffix, factor in sorted(_BINARY_SUFFIXES.items(), key=lambda item: -item[1]):
        if value and value % factor == 0:
            return f"{value // factor}{suffix}"
    return str(value)
