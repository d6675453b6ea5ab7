"""JSON text in and out exactly as the standard library's `json` writes and reads it, at orjson's speed.

Every object crosses the wire as JSON several times (the queue and the binder parse each created
object, the binder renders every record, every replica parses every record), and the standard
library's encoder and decoder were a large part of that. orjson is several times faster, but it does
not write quite the same text (UTF-8 where `json` escapes to ASCII, `1e-5` as `0.00001`, NaN as
`null`) nor read quite the same values (an integer beyond 64 bits becomes a float). The records'
JSON is a public format that consumers read, and a record must say the same whichever code wrote
it, so orjson is used only where its answer is certainly `json`'s, and `json` answers the rest:

- `dumps(value)` is byte for byte `json.dumps(value, separators=(",", ":")).encode()`, raising what
  it raises;
- `loads(raw)` is `json.loads(raw)`, the same values of the same types, raising what it raises;
- `fast_loads(raw)` is orjson's answer when it is certainly `json.loads(raw)`'s, else `NotCertain`;
  what it returns also has only valid Unicode strings and no non-finite number (`parse_json`'s
  fast path builds on that);
- `loads_written(raw)` is `loads(raw)`, fastest on text `dumps` wrote (the records' JSON);
- `identity_text(value)` is orjson's own text, which tells plain documents apart (a cache's key).
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

# Values orjson would render where `json` refuses them (datetimes, dataclasses) go to its `default`,
# which is absent, so they fail as they do in `json`; subclasses of str, int, dict and list too, so
# `json`'s own rules for them hold.
_DUMPS_OPTIONS = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_SUBCLASS

# Text orjson writes differently from `json.dumps`, found in orjson's output: anything but printable
# ASCII (`json` escapes it as \uXXXX), a float below 1e-4 (`json` writes `1e-05` and `1.5e-07`, orjson
# `0.00001` and `1.5e-7`) and NaN or infinity (orjson writes `null`). Any of these in orjson's output,
# even inside a string where it changes nothing, hands the value to `json`. A negative exponent is
# "e-" and digits that end a number (not a bare "e-": names such as "default-scheduler" and UUIDs
# are full of it).
_NEGATIVE_EXPONENT = re.compile(rb"e-[0-9]+(?:[,}\]]|\Z)")

# orjson reads an integer beyond 64 bits as a float; `json` keeps it an int. Such an integer has at
# least 19 digits. More opening brackets than _MOST_BRACKETS (inside strings too: an overcount is
# harmless) may nest deeper than `json` can read on the stack it is called with. One C-speed pass
# maps digits to "0" and "[" to "{": a run of 19 zeros, and the count of "{", are then each found
# in another.
_DIGITS_AS_ZERO_BRACKETS_AS_BRACE = bytes.maketrans(b"123456789[", b"000000000{")
_LONG_NUMBER = b"0" * 19
_MOST_BRACKETS = 256


def dumps(value: Any) -> bytes:
    """`json.dumps(value, separators=(",", ":")).encode()`, byte for byte."""
    try:
        text = orjson.dumps(value, option=_DUMPS_OPTIONS)
    except TypeError:  # an integer beyond 64 bits, a key not a string, nested too deep, not JSON at all
        return _standard_dumps(value)
    if (
        not text.isascii()
        or b"\x7f" in text
        or b"null" in text
        or b"0.0000" in text
        or _NEGATIVE_EXPONENT.search(text) is not None
    ):
        return _standard_dumps(value)
    return text


def _standard_dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def identity_text(value: Any) -> bytes:
    """orjson's JSON text of `value`, which need not be `dumps`' (UTF-8 where `json` escapes, `1e-5`
    for `1e-05`) and costs a quarter of it (no checks): for keys, not for records. On plain
    documents (string keys, finite numbers, valid Unicode: `documents.plain_document`, what every
    decoder is given) equal texts mean equal values of equal types, key order included (orjson
    writes a float as a float and an int as an int, NaN, the one value it writes as another's
    text, is not in such a document), and `loads_written` reads the text back as that value.
    Raises TypeError where orjson writes nothing: an integer beyond 64 bits, a key that is not a
    string, a subclass of str, int, dict or list, nesting deeper than 254 levels."""
    return orjson.dumps(value, option=_DUMPS_OPTIONS)


class NotCertain(Exception):
    """orjson cannot say for certain what `json.loads` would: ask `json`."""


def fast_loads(raw: bytes | str) -> Any:
    """orjson's reading of `raw` when it is certainly `json.loads(raw)`'s, else `NotCertain` (text
    that is not bytes is always NotCertain).

    orjson refuses what it cannot read exactly as `json` does: lone UTF-16 surrogates (`json` reads
    them into strings UTF-8 cannot carry), a byte-order mark or UTF-16 text (`json` detects them),
    NaN, Infinity and numbers beyond float64 (`json` reads them as floats that are not finite);
    so whatever it returns holds only valid Unicode and finite numbers. Deep nesting is left to
    `json`: orjson reads 1024 levels, `json` fewer the deeper its caller's stack already is."""
    if not isinstance(raw, bytes):
        raise NotCertain
    shape = raw.translate(_DIGITS_AS_ZERO_BRACKETS_AS_BRACE)
    if shape.count(b"{") > _MOST_BRACKETS or _LONG_NUMBER in shape:
        raise NotCertain
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise NotCertain from None


def loads_written(raw: bytes) -> Any:
    """`loads(raw)`, fastest on text `dumps` wrote (every replica reads every record's JSON).

    orjson's reading is taken when orjson writes the value it read back as `raw`, byte for byte.
    That text is then one orjson writes as `json` does and reads as `json` does: a value `json` reads
    otherwise is written back otherwise (an integer beyond 64 bits read as a float comes back as
    a float's text, a float read one step off as another float's shortest text, non-ASCII, escapes
    and spacing as orjson writes them, which `dumps` never does), and what orjson refuses to read
    or write (NaN, lone surrogates, a byte-order mark, nesting deeper than 254 levels, shallower
    than `fast_loads` lets orjson read) does not get this far. Writing the value back costs less than
    `fast_loads`' scans of the text; any other text goes to `loads`."""
    try:
        value = orjson.loads(raw)
        if orjson.dumps(value) == raw:
            return value
    except (orjson.JSONDecodeError, orjson.JSONEncodeError):
        pass
    return loads(raw)


def loads(raw: bytes | str) -> Any:
    """`json.loads(raw)`: the same values of the same types, or the same exception."""
    try:
        return fast_loads(raw)
    except NotCertain:
        return json.loads(raw)
