"""`podsched.api.json_text` says exactly what the standard library's `json` says: the records' JSON
is a public format, so the text written and the values read must not depend on which encoder ran.
Checked on any JSON value (strings with any code point, lone surrogates included; integers of any
size; floats of any size, NaN and infinities) and on any bytes."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from podsched.api import json_text

ANY_CHARACTER = st.characters(codec=None, exclude_categories=())  # surrogates too
TEXT = st.text(ANY_CHARACTER, max_size=12)
NUMBERS = st.one_of(
    st.integers(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(min_value=-1e-3, max_value=1e-3),
)
SCALARS = st.one_of(st.none(), st.booleans(), NUMBERS, TEXT, st.sampled_from(["null", "e-5", "0.00001", "\x7f"]))
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=5), st.dictionaries(TEXT, inner, max_size=5)),
    max_leaves=40,
)


def standard_dumps(value: Any) -> tuple[str, Any]:
    try:
        return "text", json.dumps(value, separators=(",", ":")).encode()
    except Exception as error:
        return "error", type(error)


def fast_dumps(value: Any) -> tuple[str, Any]:
    try:
        return "text", json_text.dumps(value)
    except Exception as error:
        return "error", type(error)


def read(loads: Any, raw: bytes | str) -> tuple[str, str]:
    """What reading gives, as text that tells an int from a float and keeps key order."""
    try:
        return "value", repr(loads(raw))
    except Exception as error:
        return "error", f"{type(error).__name__}: {error}"


@settings(max_examples=1500, deadline=None)
@given(VALUES)
def test_any_value_is_written_byte_for_byte_as_json_writes_it(value: Any) -> None:
    assert fast_dumps(value) == standard_dumps(value)


@settings(max_examples=1500, deadline=None)
@given(VALUES)
def test_any_json_text_is_read_as_json_reads_it(value: Any) -> None:
    for raw in (json.dumps(value).encode(), json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass")):
        assert read(json_text.loads, raw) == read(json.loads, raw)


@settings(max_examples=1500, deadline=None)
@given(st.one_of(st.binary(max_size=40), st.text(ANY_CHARACTER, max_size=40)))
def test_any_input_is_read_or_refused_as_json_reads_or_refuses_it(raw: bytes | str) -> None:
    assert read(json_text.loads, raw) == read(json.loads, raw)


def test_what_orjson_alone_would_write_or_read_differently_is_left_to_json() -> None:
    cases = [1e-05, 1.5e-07, float("nan"), float("inf"), 2**64, -(2**63) - 1, "é", "\x7f", {1: 2}, {True: None}]
    for value in cases:
        assert json_text.dumps(value) == json.dumps(value, separators=(",", ":")).encode()
    raws = [b"123456789012345678901234567890", b"-9223372036854775809", b"18446744073709551615", b"-0", b"1e-400"]
    raws += [b"[" * 999 + b"]" * 999, b"[" * 1024 + b"]" * 1024, b'{"a":' * 300 + b"1" + b"}" * 300]
    raws += [b"1E400", b"0.1e1", b'"\\ud800"', b'"\\ud83d\\ude00"', b"\xef\xbb\xbf{}", b"NaN", b'{"a":1,"a":2}']
    for raw in raws:
        assert read(json_text.loads, raw) == read(json.loads, raw)


@settings(max_examples=1500, deadline=None)
@given(VALUES)
def test_text_dumps_wrote_is_read_by_loads_written_as_json_reads_it(value: Any) -> None:
    raws = [json.dumps(value).encode(), json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass")]
    written = fast_dumps(value)
    if written[0] == "text":
        raws.append(written[1])
    for raw in raws:
        assert read(json_text.loads_written, raw) == read(json.loads, raw)


@settings(max_examples=1500, deadline=None)
@given(st.binary(max_size=40))
def test_any_bytes_are_read_or_refused_by_loads_written_as_json_reads_or_refuses_them(raw: bytes) -> None:
    assert read(json_text.loads_written, raw) == read(json.loads, raw)


def test_what_orjson_would_read_differently_is_not_taken_from_it_even_when_orjson_writes_it_back() -> None:
    raws = [b"123456789012345678901234567890", b"-9223372036854775809", b"18446744073709551615", b"-0", b"1e-400"]
    raws += [
        b"[" * 254 + b"]" * 254,
        b"[" * 255 + b"]" * 255,
        b"[" * 999 + b"]" * 999,
        b'{"a":' * 300 + b"1}" + b"}" * 299,
    ]
    raws += [b"1E400", b"0.1e1", b'"\\ud800"', b'"\\ud83d\\ude00"', b"\xef\xbb\xbf{}", b"NaN", b'{"a":1,"a":2}']
    raws += [b"1.0", b"-0.0", b"1e+16", b"9007199254740993", b"[1.5,2]", b'{"a":[1,{"b":null}]}', b'"\xc3\xa9"']
    for raw in raws:
        assert read(json_text.loads_written, raw) == read(json.loads, raw), raw[:40]
