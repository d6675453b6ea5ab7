"""Kubernetes quantities: exact parsing, rounding up like Quantity.MilliValue()/Value(), rendering."""

from __future__ import annotations

from fractions import Fraction

import pytest

from podsched.api import quantity

KI, MI, GI = 2**10, 2**20, 2**30


@pytest.mark.parametrize(
    ("text", "exact"),
    [
        pytest.param("100m", Fraction(1, 10), id="millis are thousandths"),
        pytest.param("1.5", Fraction(3, 2), id="a decimal fraction is exact"),
        pytest.param("500Mi", 500 * MI, id="binary suffixes are powers of two"),
        pytest.param("1G", 10**9, id="decimal suffixes are powers of ten"),
        pytest.param("1k", 1000, id="kilo is a lowercase k"),
        pytest.param("1e3", 1000, id="an exponent multiplies by ten to its power"),
        pytest.param("1.5e-3", Fraction(3, 2000), id="a negative exponent divides"),
        pytest.param("+2", 2, id="a leading plus sign is allowed"),
        pytest.param("-1", -1, id="a negative quantity parses (validation rejects it later)"),
        pytest.param(".5", Fraction(1, 2), id="a fraction may omit the leading zero"),
        pytest.param("  2Gi ", 2 * GI, id="surrounding whitespace is ignored"),
        pytest.param(3, 3, id="an integer from YAML is taken as is"),
        pytest.param(0.25, Fraction(1, 4), id="a float from YAML is taken by its decimal text"),
    ],
)
def test_parse_quantity_is_exact(text: str | int | float, exact: Fraction | int) -> None:
    assert quantity.parse_quantity(text) == exact


@pytest.mark.parametrize(
    ("text", "millis"),
    [
        pytest.param("100m", 100, id="100m cpu is 100 millicores"),
        pytest.param("1.5", 1500, id="one and a half cores is 1500 millicores"),
        pytest.param("0.1m", 1, id="a tenth of a millicore rounds up to one, never zero"),
        pytest.param("1n", 1, id="a nano-core still reserves one millicore"),
        pytest.param("2", 2000, id="whole cores"),
        pytest.param("0", 0, id="zero stays zero"),
    ],
)
def test_to_milli_rounds_up(text: str, millis: int) -> None:
    assert quantity.to_milli(text) == millis


@pytest.mark.parametrize(
    ("text", "value"),
    [
        pytest.param("500Mi", 500 * MI, id="500Mi in bytes"),
        pytest.param("1G", 10**9, id="1G in bytes"),
        pytest.param("1e3", 1000, id="1e3 is a thousand"),
        pytest.param("1.5", 2, id="a fraction of a unit rounds up"),
        pytest.param("100m", 1, id="a milli-byte rounds up to one byte"),
        pytest.param("1Ki", KI, id="1Ki is 1024"),
    ],
)
def test_to_int_rounds_up(text: str, value: int) -> None:
    assert quantity.to_int(text) == value


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("", id="empty text"),
        pytest.param("abc", id="letters only"),
        pytest.param("1.5.5", id="two decimal points"),
        pytest.param("--1", id="two signs"),
        pytest.param("1Kb", id="an unknown suffix"),
        pytest.param("1K", id="an uppercase K (kilo is lowercase)"),
        pytest.param("1 Gi", id="a space before the suffix"),
        pytest.param("Gi", id="a suffix without a number"),
        pytest.param("1e99", id="an exponent out of range"),
        pytest.param(True, id="a boolean"),
        pytest.param(float("inf"), id="an infinite float"),
    ],
)
def test_parse_quantity_rejects_malformed_input(text: str | float | bool) -> None:
    with pytest.raises(quantity.QuantityError):
        quantity.parse_quantity(text)


def test_the_error_for_malformed_text_quotes_upstreams_regular_expression() -> None:
    with pytest.raises(quantity.QuantityError, match=r"quantities must match the regular expression"):
        quantity.parse_quantity("lots")


@pytest.mark.parametrize(
    ("millis", "text"),
    [
        pytest.param(4000, "4", id="whole cores print without a suffix"),
        pytest.param(500, "500m", id="part cores print in millicores"),
        pytest.param(1500, "1500m", id="mixed cores print in millicores"),
        pytest.param(0, "0", id="zero"),
    ],
)
def test_format_milli_cpu(millis: int, text: str) -> None:
    assert quantity.format_milli_cpu(millis) == text


@pytest.mark.parametrize(
    ("value", "text"),
    [
        pytest.param(32 * GI, "32Gi", id="the largest exact binary suffix is used"),
        pytest.param(500 * MI, "500Mi", id="mebibytes"),
        pytest.param(1536, "1536", id="a count with no exact binary suffix prints plainly"),
        pytest.param(0, "0", id="zero has no suffix"),
        pytest.param(10**9, "1000000000", id="decimal gigabytes are not a binary multiple"),
    ],
)
def test_format_bytes(value: int, text: str) -> None:
    assert quantity.format_bytes(value) == text


@pytest.mark.parametrize("value", [0, 1, 1023, 1024, 3 * MI, 32 * GI, 10**9 + 7])
def test_formatted_bytes_parse_back_to_the_same_value(value: int) -> None:
    assert quantity.to_int(quantity.format_bytes(value)) == value


def test_cached_parsing_gives_the_uncached_answers_and_never_caches_a_refusal() -> None:
    from podsched.api.quantity import QuantityError, parse_quantity, to_int, to_milli

    for text in ("100m", "500Mi", "1.5", "4", "1e3", "0.1m"):
        assert parse_quantity(text) == parse_quantity(text)  # second call is the cached one
    assert (to_milli("0.1m"), to_int("0.1m"), to_milli("1Gi")) == (1, 1, 1024**3 * 1000)
    for _ in range(2):
        with pytest.raises(QuantityError):
            parse_quantity("12x")
    # bool is an int to Python but not a quantity: it must not share a cache entry with 1.
    assert parse_quantity(1) == 1
    with pytest.raises(QuantityError):
        parse_quantity(True)
