"""`parse_timestamp` reads the form `format_timestamp` writes without the regular expression; its
answer must be `parse_rfc3339`'s on every text, the ones the fast path refuses and the ones
`parse_rfc3339` itself refuses included."""

from __future__ import annotations

import calendar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from podsched.api.timestamps import format_timestamp, parse_rfc3339, parse_timestamp

EARLIEST = calendar.timegm((1, 1, 1, 0, 0, 0, 0, 0, 0))
END = calendar.timegm((9999, 12, 31, 23, 59, 59, 0, 0, 0)) + 1
MOMENT = st.floats(min_value=EARLIEST, max_value=END, exclude_max=True, allow_nan=False)
CLOCK = st.floats(min_value=1_700_000_000, max_value=1_900_000_000, allow_nan=False)


def read(parse: object, text: str) -> tuple[str, object]:
    """What parsing gives: the float (by its repr: -0.0 and 0.0 differ), or the error and its message."""
    assert callable(parse)
    try:
        return "seconds", repr(parse(text))
    except ValueError as error:
        return "error", str(error)


def two_digits(low: int, high: int) -> st.SearchStrategy[str]:
    return st.integers(low, high).map(lambda number: f"{number:02d}")


# Texts near the form format_timestamp writes: every field in and just out of range, every
# separator the regular expression takes and some it does not, fractions of any length (none,
# empty, beyond a float's precision), digits that are not ASCII, and whitespace around.
NEAR_FORM = st.builds(
    lambda year, month, day, t, hour, minute, second, point, fraction, zone, before, after: (
        f"{before}{year}-{month}-{day}{t}{hour}:{minute}:{second}{point}{fraction}{zone}{after}"
    ),
    st.one_of(
        st.integers(0, 9999).map(lambda y: f"{y:04d}"), st.sampled_from(["1969", "1970", "9999", "0001", "٢٠٢٦"])
    ),
    two_digits(0, 13),
    two_digits(0, 32),
    st.sampled_from(["T", "t", " ", "_"]),
    two_digits(0, 24),
    two_digits(0, 60),
    st.one_of(two_digits(0, 60), st.sampled_from(["٥٩", "5"])),
    st.sampled_from([".", ".", ",", ""]),
    st.one_of(st.text("0123456789", max_size=25), st.sampled_from(["999999999999", "٣", "1٣", "5 "])),
    st.sampled_from(["Z", "Z", "z", "+00:00", "-23:59", "+24:00", "", "ZZ", "Z\n"]),
    st.sampled_from(["", "", " "]),
    st.sampled_from(["", "", "\n"]),
)


@settings(max_examples=3000, deadline=None)
@given(NEAR_FORM)
def test_any_text_near_the_written_form_reads_as_the_regular_expression_reads_it(text: str) -> None:
    assert read(parse_timestamp, text) == read(parse_rfc3339, text)


@settings(max_examples=1500, deadline=None)
@given(st.one_of(MOMENT, CLOCK))
def test_every_written_timestamp_reads_as_the_regular_expression_reads_it_and_as_the_float_written(
    seconds: float,
) -> None:
    text = format_timestamp(seconds)
    assert read(parse_timestamp, text) == read(parse_rfc3339, text)
    assert parse_timestamp(text) == seconds


@settings(max_examples=1000, deadline=None)
@given(st.text(max_size=40))
def test_any_text_at_all_reads_or_is_refused_as_the_regular_expression_reads_it(text: str) -> None:
    assert read(parse_timestamp, text) == read(parse_rfc3339, text)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("2026-01-01T00:00:00.Z", id="a point with no digits after it is refused"),
        pytest.param("2026-02-30T00:00:00.5Z", id="a day the month does not have is refused"),
        pytest.param("1969-12-31T23:59:59.75Z", id="a fraction before the epoch is added exactly"),
        pytest.param("0000-01-01T00:00:00.5Z", id="year zero is refused"),
        pytest.param("9999-12-31T23:59:59.99999999999Z", id="a fraction that rounds up to year 10000 is refused"),
        pytest.param("9999-12-31T23:59:59.999999Z", id="the last microsecond of year 9999 is read"),
        pytest.param("2026-01-01T00:00:00.1٣Z", id="a digit that is not ASCII is refused"),
        pytest.param("2026-01-01T00:00:00.5z", id="a lowercase z is read"),
        pytest.param(" 2026-01-01T00:00:00.5Z", id="whitespace around is read"),
        pytest.param("2026-01-01T00:00:00.123456789012345678901234567890Z", id="any number of digits is read"),
        pytest.param("2026-01-01T00:00:00Z", id="whole seconds are read"),
    ],
)
def test_edges_of_the_written_form_read_as_the_regular_expression_reads_them(text: str) -> None:
    assert read(parse_timestamp, text) == read(parse_rfc3339, text)
