"""Label and field selectors written as strings (`kubectl -l app=web,tier!=db`, `--field-selector
spec.nodeName=n1`), parsed and matched as apimachinery's labels.Parse and fields.ParseSelector do.

Manifests carry selectors as structures (LabelSelector, matched in podsched.api.labels); a request
that selects a collection carries this string form. Parse errors are ValueErrors worded as upstream's."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from podsched.api.validation import label_value_errors, qualified_name_errors

# Operators of a label requirement (selection.Operator).
IN, NOT_IN, EQUALS, DOUBLE_EQUALS, NOT_EQUALS = "in", "notin", "=", "==", "!="
EXISTS, DOES_NOT_EXIST, GREATER_THAN, LESS_THAN = "exists", "!", "gt", "lt"
_BINARY_OPERATORS = ("in", "notin", "=", "==", "!=", "gt", "lt")

# The lexer's tokens (labels.Token); identifiers carry their text.
_END, _CLOSED_PAR, _COMMA, _NOT, _DOUBLE_EQUALS, _EQUALS = "end", ")", ",", "!", "==", "="
_GREATER, _IDENTIFIER, _IN, _LESS, _NOT_EQUALS, _NOT_IN, _OPEN_PAR, _ERROR = (
    ">",
    "identifier",
    "in",
    "<",
    "!=",
    "notin",
    "(",
    "error",
)
_LITERALS = {
    ")": _CLOSED_PAR,
    ",": _COMMA,
    "!": _NOT,
    "==": _DOUBLE_EQUALS,
    "=": _EQUALS,
    ">": _GREATER,
    "in": _IN,
    "<": _LESS,
    "!=": _NOT_EQUALS,
    "notin": _NOT_IN,
    "(": _OPEN_PAR,
}
_SPECIAL = frozenset("=!(),><")
_WHITESPACE = frozenset(" \t\r\n")


@dataclass(frozen=True, slots=True)
class LabelRequirement:
    """One requirement of a label selector (labels.Requirement)."""

    key: str
    operator: str
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        """labels.Requirement.Matches."""
        value = labels.get(self.key)
        if self.operator in (IN, EQUALS, DOUBLE_EQUALS):
            return value is not None and value in self.values
        if self.operator in (NOT_IN, NOT_EQUALS):
            return value is None or value not in self.values
        if self.operator == EXISTS:
            return value is not None
        if self.operator == DOES_NOT_EXIST:
            return value is None
        # Gt, Lt: the label's value compared as an integer; one that is not an integer never matches.
        if value is None:
            return False
        try:
            have, bound = int(value), int(self.values[0])
        except ValueError:
            return False
        return have > bound if self.operator == GREATER_THAN else have < bound


@dataclass(frozen=True, slots=True)
class FieldRequirement:
    """One term of a field selector: `field=value` (or `==`) and `field!=value`."""

    field: str
    value: str
    negated: bool = False

    def matches(self, fields: Mapping[str, str]) -> bool:
        return (fields.get(self.field) == self.value) != self.negated


def labels_match(requirements: tuple[LabelRequirement, ...], labels: Mapping[str, str]) -> bool:
    """Every requirement holds (an empty selector matches everything)."""
    return all(requirement.matches(labels) for requirement in requirements)


def fields_match(requirements: tuple[FieldRequirement, ...], fields: Mapping[str, str]) -> bool:
    return all(requirement.matches(fields) for requirement in requirements)


# --- label selectors ---------------------------------------------------------------------------------


def _lex(text: str) -> list[tuple[str, str]]:
    """labels.Lexer: the tokens of `text` and their literals, ending with _END."""
    tokens: list[tuple[str, str]] = []
    position = 0
    while True:
        while position < len(text) and text[position] in _WHITESPACE:
            position += 1
        if position == len(text):
            tokens.append((_END, ""))
            return tokens
        if text[position] in _SPECIAL:
            # The longest run of special characters that is still an operator ("!=" but not "!(").
            buffer, found = "", ("", "")
            while position < len(text) and text[position] in _SPECIAL:
                buffer += text[position]
                if buffer in _LITERALS:
                    found = (_LITERALS[buffer], buffer)
                    position += 1
                elif found[0]:
                    break
                else:
                    position += 1
            tokens.append(found if found[0] else (_ERROR, f"error expected: keyword found '{buffer}'"))
            continue
        start = position
        while position < len(text) and text[position] not in _SPECIAL and text[position] not in _WHITESPACE:
            position += 1
        word = text[start:position]
        tokens.append((_LITERALS[word], word) if word in _LITERALS else (_IDENTIFIER, word))


class _LabelParser:
    """labels.Parser: a recursive descent over the lexed tokens."""

    def __init__(self, text: str) -> None:
        self.tokens = _lex(text)
        self.position = 0

    def _look(self, values: bool = True) -> tuple[str, str]:
        token, literal = self.tokens[self.position]
        # Where values are expected, `in` and `notin` are plain words ("x in (in)").
        if values and token in (_IN, _NOT_IN):
            token = _IDENTIFIER
        return token, literal

    def _take(self, values: bool = True) -> tuple[str, str]:
        found = self._look(values)
        self.position += 1
        return found

    def parse(self) -> tuple[LabelRequirement, ...]:
        requirements: list[LabelRequirement] = []
        while True:
            token, literal = self._look()
            if token == _END:
                return tuple(sorted(requirements, key=lambda r: r.key))
            if token not in (_IDENTIFIER, _NOT):
                raise ValueError(f"found '{literal}', expected: !, identifier, or 'end of string'")
            try:
                requirements.append(self._requirement())
            except ValueError as error:
                raise ValueError(f"unable to parse requirement: {error}") from None
            token, literal = self._take()
            if token == _END:
                return tuple(sorted(requirements, key=lambda r: r.key))
            if token != _COMMA:
                raise ValueError(f"found '{literal}', expected: ',' or 'end of string'")
            after, literal = self._look()
            if after not in (_IDENTIFIER, _NOT):
                raise ValueError(f"found '{literal}', expected: identifier after ','")

    def _requirement(self) -> LabelRequirement:
        token, key = self._take()
        negated = token == _NOT
        if negated:
            token, key = self._take()
        if token != _IDENTIFIER:
            raise ValueError(f"found '{key}', expected: identifier")
        key_errors = qualified_name_errors(key)
        if key_errors:
            raise ValueError(f'key: Invalid value: "{key}": {"; ".join(key_errors)}')
        if negated:  # `!key` takes no operator: what follows must end the requirement (parse checks)
            return LabelRequirement(key, DOES_NOT_EXIST)
        if self._look()[0] in (_END, _COMMA):
            return LabelRequirement(key, EXISTS)
        token, literal = self._take(values=False)
        operators = {
            _IN: IN,
            _NOT_IN: NOT_IN,
            _EQUALS: EQUALS,
            _DOUBLE_EQUALS: DOUBLE_EQUALS,
            _NOT_EQUALS: NOT_EQUALS,
            _GREATER: GREATER_THAN,
            _LESS: LESS_THAN,
        }
        if token not in operators:
            raise ValueError(f"found '{literal}', expected: {', '.join(_BINARY_OPERATORS)}")
        operator = operators[token]
        values = self._value_set() if operator in (IN, NOT_IN) else self._exact_value()
        if operator in (GREATER_THAN, LESS_THAN):
            try:
                int(values[0])
            except ValueError:
                detail = "for 'Gt', 'Lt' operators, the value must be an integer"
                raise ValueError(f'values[0]: Invalid value: "{values[0]}": {detail}') from None
        for index, value in enumerate(values):
            value_errors = label_value_errors(value)
            if value_errors:
                raise ValueError(f'values[{index}][{key}]: Invalid value: "{value}": {"; ".join(value_errors)}')
        return LabelRequirement(key, operator, values)

    def _value_set(self) -> tuple[str, ...]:
        token, literal = self._take()
        if token != _OPEN_PAR:
            raise ValueError(f"found '{literal}' expected: '('")
        token, literal = self._look()
        if token == _CLOSED_PAR:  # "()": the empty value
            self._take()
            return ("",)
        if token not in (_IDENTIFIER, _COMMA):
            raise ValueError(f"found '{literal}', expected: ',', ')' or identifier")
        values: set[str] = set()
        while True:
            token, literal = self._take()
            if token == _IDENTIFIER:
                values.add(literal)
                after, after_literal = self._look()
                if after == _CLOSED_PAR:
                    break
                if after != _COMMA:
                    raise ValueError(f"found '{after_literal}', expected: ',' or ')'")
            elif token == _COMMA:  # "(,a", "a,,b" and "a,)" hold the empty value
                if not values or self._look()[0] in (_CLOSED_PAR, _COMMA):
                    values.add("")
                if self._look()[0] == _CLOSED_PAR:
                    break
            else:
                raise ValueError(f"found '{literal}', expected: ',', or identifier")
        self._take()  # the ")"
        return tuple(sorted(values))

    def _exact_value(self) -> tuple[str, ...]:
        token, literal = self._look()
        if token in (_END, _COMMA):  # "key=" selects the empty value
            return ("",)
        token, literal = self._take()
        if token != _IDENTIFIER:
            raise ValueError(f"found '{literal}', expected: identifier")
        return (literal,)


def parse_label_selector(text: str) -> tuple[LabelRequirement, ...]:
    """labels.Parse: `app=web,tier!=db`, `env in (a,b)`, `env notin (c)`, `canary`, `!canary`,
    `replicas>2`. The requirements sorted by key; "" (or blanks) is the empty selector, matching
    every object. Raises ValueError with upstream's words for anything else."""
    return _LabelParser(text).parse()


# --- field selectors ---------------------------------------------------------------------------------


def _split_terms(text: str) -> list[str]:
    """fields.splitTerms: split at commas not escaped with a backslash (kept in the terms)."""
    terms, start, escaped = [], 0, False
    for index, char in enumerate(text):
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == ",":
            terms.append(text[start:index])
            start = index + 1
    terms.append(text[start:])
    return terms


def _unescape(value: str) -> str:
    """fields.UnescapeValue: `\\,`, `\\=` and `\\\\` stand for themselves; a bare `,` or `=` is an error."""
    out, escaped = [], False
    for char in value:
        if escaped:
            if char not in "\\,=":
                raise ValueError(f"invalid field selector: invalid escape sequence: \\{char}")
            out.append(char)
            escaped = False
        elif char == "\\":
            escaped = True
        elif char in ",=":
            raise ValueError(f"invalid field selector: unescaped character in value: {char}")
        else:
            out.append(char)
    if escaped:
        raise ValueError("invalid field selector: invalid escape sequence: \\")
    return "".join(out)


def parse_field_selector(text: str) -> tuple[FieldRequirement, ...]:
    """fields.ParseSelector: terms `field=value`, `field==value` or `field!=value` joined by commas
    (the first operator in a term splits it). Which fields exist is the caller's to check."""
    if not text:
        return ()
    requirements = []
    for term in sorted(_split_terms(text)):
        if not term:
            continue
        split = next(
            (
                (term[:index], operator, term[index + len(operator) :])
                for index in range(len(term))
                for operator in ("!=", "==", "=")
                if term.startswith(operator, index)
            ),
            None,
        )
        if split is None:
            raise ValueError(f"invalid selector: '{text}'; can't understand '{term}'")
        field, operator, value = split
        requirements.append(FieldRequirement(field, _unescape(value), negated=operator == "!="))
    return tuple(requirements)
