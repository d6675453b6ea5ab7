"""Kubernetes resource quantities (`500m`, `1.5`, `500Mi`, `1G`, `1e3`).

Parsed exactly into a Fraction, then rounded *up* like apimachinery's Quantity.Value() and
MilliValue(): a request of 0.1m CPU still reserves 1m, never 0.
"""

from __future__ import annotations

import functools
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
# ASCII digits only (Go's [0-9]; Python's \d would take any script's digits).
_QUANTITY_RE = re.compile(
    r"(?P<sign>[+-]?)(?P<number>\d+(?:\.\d*)?|\.\d+)(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?",
    re.ASCII,
)
# Upstream: "no quantity may represent a number greater than 2^63-1 in magnitude". It caps larger
# ones; refusing them instead names the field, and keeps every amount an int64 in milli units or less.
MAX_MAGNITUDE = 2**63 - 1
# More digits than any quantity up to MAX_MAGNITUDE with nano precision needs (19 + 9, and slack for
# leading zeros): longer text is refused before it is converted, which is what would cost.
_MAX_DIGITS = 64


class QuantityError(ValueError):
    """The text is not a Kubernetes quantity."""


def parse_quantity(value: str | int | float) -> Fraction:
    """Return the exact value of a Kubernetes quantity; raise QuantityError if malformed."""
    if isinstance(value, str) and len(value) <= _MAX_CACHED_TEXT:
        return _parse_text_cached(value)
    return _parse(value)


# Every replica decodes every pod record, and the same few quantity texts ("100m", "500Mi", "4")
# come back in almost all of them: parsing them through Fraction was a third of the decoding.
# Fractions are immutable, and errors are not cached (lru_cache does not keep exceptions).
_MAX_CACHED_TEXT = 32


@functools.lru_cache(maxsize=4096)
def _parse_text_cached(text: str) -> Fraction:
    return _parse(text)


def _parse(value: str | int | float) -> Fraction:
    if isinstance(value, bool):
        raise QuantityError(f"quantities must match the regular expression, got {value!r}")
    if isinstance(value, int):
        return _in_range(Fraction(value), value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise QuantityError(f"quantity must be finite, got {value!r}")
        return _in_range(Fraction(str(value)), value)
    text = str(value).strip()
    match = _QUANTITY_RE.fullmatch(text)
    if match is None:
        raise QuantityError(
            f"quantities must match the regular expression "
            f"'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$', got {_shown(str(value))}"
        )
    digits = match["number"]
    suffix = match["suffix"] or ""
    if len(digits) > _MAX_DIGITS:
        raise QuantityError(f"quantity out of range: more than {_MAX_DIGITS} digits in {_shown(text)}")
    number = Fraction(digits)
    if suffix in _BINARY_SUFFIXES:
        number *= _BINARY_SUFFIXES[suffix]
    elif suffix in _DECIMAL_SUFFIXES:
        number *= _DECIMAL_SUFFIXES[suffix]
    else:  # exponent form, e.g. 1e3
        exponent_digits = suffix[1:].lstrip("+-").lstrip("0") or "0"
        exponent = int(exponent_digits) if len(exponent_digits) <= 3 else _MAX_DIGITS
        if abs(exponent) > 30:
            raise QuantityError(f"quantity exponent out of range in {_shown(text)}")
        number *= Fraction(10) ** (-exponent if suffix[1:2] == "-" else exponent)
    return _in_range(-number if match["sign"] == "-" else number, value)


def _shown(text: str) -> str:
    """The offending text for a message: long text is cut, so an error stays a line."""
    return repr(text if len(text) <= 80 else text[:80] + "...")


def _in_range(number: Fraction, value: str | int | float) -> Fraction:
    if abs(number) > MAX_MAGNITUDE:
        shown = f", got {_shown(value)}" if isinstance(value, str) else ""
        raise QuantityError(f"quantity out of range: the magnitude may not exceed 2^63-1{shown}")
    return number


def to_milli(value: str | int | float) -> int:
    """MilliValue(): the quantity times 1000, rounded up."""
    if isinstance(value, str) and len(value) <= _MAX_CACHED_TEXT:
        return _to_milli_cached(value)
    return math.ceil(parse_quantity(value) * 1000)


def to_int(value: str | int | float) -> int:
    """Value(): the quantity rounded up to a whole unit."""
    if isinstance(value, str) and len(value) <= _MAX_CACHED_TEXT:
        return _to_int_cached(value)
    return math.ceil(parse_quantity(value))


@functools.lru_cache(maxsize=4096)
def _to_milli_cached(text: str) -> int:
    return math.ceil(_parse_text_cached(text) * 1000)


@functools.lru_cache(maxsize=4096)
def _to_int_cached(text: str) -> int:
    return math.ceil(_parse_text_cached(text))


def format_milli_cpu(milli: int) -> str:
    """Render CPU the way kubectl does: `2` for whole cores, `500m` otherwise."""
    return str(milli // 1000) if milli % 1000 == 0 else f"{milli}m"


def format_bytes(value: int) -> str:
    """Render a byte count with the largest exact binary suffix (`32Gi`, `500Mi`, `1536`)."""
    for suffix, factor in sorted(_BINARY_SUFFIXES.items(), key=lambda item: -item[1]):
        if value and value % factor == 0:
            return f"{value // factor}{suffix}"
    return str(value)


_DECIMAL_EXPONENTS = ((18, "E"), (15, "P"), (12, "T"), (9, "G"), (6, "M"), (3, "k"), (0, ""), (-3, "m"), (-6, "u"))
_NANO = Fraction(1, 10**9)


def format_canonical(value: Fraction | int, *, binary: bool = False) -> str:
    """A quantity as apimachinery's Quantity.String() prints it (CanonicalizeBytes).

    DecimalSI: the largest power of 1000 that leaves a whole mantissa (`1500`, `1k`, `3600m`, `1G`);
    BinarySI (`binary`): the largest power of 1024 (`1536Mi`, `1Gi`), falling back to DecimalSI for
    magnitudes below 1024 and for fractions, as upstream does. Precision stops at nano units, rounded
    up, like every Quantity."""
    exact = Fraction(value)
    if exact % _NANO:
        exact = (exact / _NANO).__ceil__() * _NANO
    if exact == 0:
        return "0"
    sign = "-" if exact < 0 else ""
    magnitude = abs(exact)
    if binary and magnitude >= 1024 and magnitude.denominator == 1:
        number = magnitude.numerator
        suffixes = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")
        power = 0
        while power < len(suffixes) - 1 and number % 1024 == 0:
            number //= 1024
            power += 1
        return f"{sign}{number}{suffixes[power]}"
    for exponent, suffix in _DECIMAL_EXPONENTS:
        mantissa = magnitude / Fraction(10) ** exponent
        if mantissa.denominator == 1:
            return f"{sign}{mantissa.numerator}{suffix}"
    return f"{sign}{(magnitude / _NANO).numerator}n"
