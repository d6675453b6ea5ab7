"""Label and field selectors as strings, parsed and matched as apimachinery's labels.Parse and
fields.ParseSelector (cases from their selector_test.go, where the grammar is the same)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from podsched.api.selector_syntax import (
    DOES_NOT_EXIST,
    EQUALS,
    EXISTS,
    IN,
    NOT_EQUALS,
    NOT_IN,
    FieldRequirement,
    LabelRequirement,
    labels_match,
    parse_field_selector,
    parse_label_selector,
)

PARSED = [
    ("the empty selector has no requirements", "", ()),
    ("blanks alone are the empty selector", "  ", ()),
    ("an equality", "app=web", (LabelRequirement("app", EQUALS, ("web",)),)),
    (
        "requirements are sorted by key",
        "tier!=db,app=web",
        (LabelRequirement("app", EQUALS, ("web",)), LabelRequirement("tier", NOT_EQUALS, ("db",))),
    ),
    (
        "set-based requirements keep the empty value of ',,' and '()'",
        "x in (foo,,baz),y,z notin ()",
        (
            LabelRequirement("x", IN, ("", "baz", "foo")),
            LabelRequirement("y", EXISTS),
            LabelRequirement("z", NOT_IN, ("",)),
        ),
    ),
    ("a bang is does-not-exist", "!canary", (LabelRequirement("canary", DOES_NOT_EXIST),)),
    ("'in' is a plain value after an operator", "x=in", (LabelRequirement("x", EQUALS, ("in",)),)),
    ("a key with a prefix", "example.com/tier = db", (LabelRequirement("example.com/tier", EQUALS, ("db",)),)),
    ("an equality with nothing after it selects the empty value", "a=", (LabelRequirement("a", EQUALS, ("",)),)),
]


@pytest.mark.parametrize(("case", "text", "expected"), PARSED, ids=[c[0] for c in PARSED])
def test_a_label_selector_parses_as_upstream_does(case: str, text: str, expected: tuple[LabelRequirement, ...]) -> None:
    assert parse_label_selector(text) == expected


REFUSED = [
    ("'in' without a set", "a in", "unable to parse requirement: found '' expected: '('"),
    ("two words", "a b", "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"),
    ("a trailing comma", "a=b,", "found '', expected: identifier after ','"),
    ("a leading comma", ",a", "found ',', expected: !, identifier, or 'end of string'"),
    ("a bang with an operator", "!a=b", "found '=', expected: ',' or 'end of string'"),
    ("an unclosed set", "a in (b", "unable to parse requirement: found '', expected: ',' or ')'"),
    ("a key that is no qualified name", "-a=b", 'unable to parse requirement: key: Invalid value: "-a"'),
    ("a value that is no label value", "a=b/c", 'values[0][a]: Invalid value: "b/c"'),
    ("a greater-than that is no integer", "a>x", "for 'Gt', 'Lt' operators, the value must be an integer"),
]


@pytest.mark.parametrize(("case", "text", "words"), REFUSED, ids=[c[0] for c in REFUSED])
def test_a_bad_label_selector_is_refused_in_upstreams_words(case: str, text: str, words: str) -> None:
    with pytest.raises(ValueError) as refused:
        parse_label_selector(text)
    assert words in str(refused.value)


MATCHES = [
    ("an equality matches the value", "app=web", {"app": "web"}, True),
    ("an equality needs the key", "app=web", {}, False),
    ("an inequality matches a missing key", "app!=web", {}, True),
    ("an inequality refuses the value", "app!=web", {"app": "web"}, False),
    ("notin matches a missing key", "env notin (prod)", {}, True),
    ("in needs one of the values", "env in (a,b)", {"env": "c"}, False),
    ("exists needs the key", "canary", {"canary": ""}, True),
    ("does-not-exist refuses the key", "!canary", {"canary": "x"}, False),
    ("greater-than compares integers", "replicas>2", {"replicas": "10"}, True),
    ("greater-than never matches a value that is no integer", "replicas>2", {"replicas": "ten"}, False),
    ("less-than compares integers", "replicas<2", {"replicas": "1"}, True),
    ("every requirement must hold", "app=web,tier=db", {"app": "web", "tier": "cache"}, False),
    ("the empty selector matches everything", "", {"any": "thing"}, True),
]


@pytest.mark.parametrize(("case", "text", "labels", "matched"), MATCHES, ids=[c[0] for c in MATCHES])
def test_a_label_selector_matches_as_upstream_does(case: str, text: str, labels: dict[str, str], matched: bool) -> None:
    assert labels_match(parse_label_selector(text), labels) is matched


def test_a_field_selector_splits_each_term_at_its_first_operator() -> None:
    assert parse_field_selector("status.phase!=Running,metadata.name==web-0,spec.nodeName=n1") == (
        FieldRequirement("metadata.name", "web-0"),
        FieldRequirement("spec.nodeName", "n1"),
        FieldRequirement("status.phase", "Running", negated=True),
    )


def test_a_field_selector_value_may_hold_escaped_commas_and_equals_signs() -> None:
    assert parse_field_selector(r"metadata.name=a\,b\=c") == (FieldRequirement("metadata.name", "a,b=c"),)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("spec.nodeName", "invalid selector: 'spec.nodeName'; can't understand 'spec.nodeName'"),
        ("a=b=c", "unescaped character in value: ="),
        ("a=b\\", "invalid escape sequence: \\"),
        ("a=b\\x", "invalid escape sequence: \\x"),
    ],
)
def test_a_bad_field_selector_is_refused_in_upstreams_words(text: str, words: str) -> None:
    with pytest.raises(ValueError) as refused:
        parse_field_selector(text)
    assert words in str(refused.value)


def test_a_negated_field_term_matches_every_other_value() -> None:
    (term,) = parse_field_selector("status.phase!=Running")
    assert term.matches({"status.phase": "Pending"}) and not term.matches({"status.phase": "Running"})


SELECTOR_TEXT = st.text(alphabet=st.sampled_from(list("ab=!(),<>\\ in-./_0")), max_size=30) | st.text(max_size=30)


@settings(max_examples=400, deadline=None)
@given(SELECTOR_TEXT)
def test_any_string_parses_as_a_label_selector_or_is_refused_with_a_value_error(text: str) -> None:
    try:
        requirements = parse_label_selector(text)
    except ValueError as error:
        assert str(error)
        return
    for requirement in requirements:  # what parses also matches without failing
        requirement.matches({requirement.key: "0"})


@settings(max_examples=400, deadline=None)
@given(SELECTOR_TEXT)
def test_any_string_parses_as_a_field_selector_or_is_refused_with_a_value_error(text: str) -> None:
    try:
        parse_field_selector(text)
    except ValueError as error:
        assert str(error)
