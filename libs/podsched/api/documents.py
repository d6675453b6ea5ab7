"""Text -> object documents, as kubectl reads files on the client side before any request.

YAML or JSON, multi-document, `kind: List` and typed lists (`PodList`) expanded. Unparsable text
names the file and line; a document that is not an object, or lacks apiVersion or kind, is named by
its 1-based number. Documents are plain dicts: turning one into a typed object (defaulting and the
API server's validation) is `podsched.api.manifests.decode_object`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping
from typing import Any

import yaml

from podsched.api import json_text
from podsched.api.errors import ApiError


def json_type_name(value: object) -> str:
    """The JSON type of a decoded value as Go's encoding/json names it in errors (`string`, `number`)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def type_meta_errors(document: Mapping[str, Any]) -> list[str]:
    """kubectl's `error validating data` list for a document without apiVersion or kind."""
    missing = []
    for key in ("apiVersion", "kind"):
        value = document.get(key)
        if not isinstance(value, str) or not value:
            missing.append(f"{key} not set")
    return missing


def error_validating_data(problems: list[str]) -> str:
    """kubectl's wording for the problems found by `type_meta_errors` (or similar)."""
    return f"error validating data: [{', '.join(problems)}]"


# --- the JSON a document may hold --------------------------------------------------------------------

# No Kubernetes object nests anywhere near this deep (a pod's deepest field is about ten levels
# down); deeper input is refused with a reason rather than left to exhaust Python's stack in a
# recursive copy, encode or comparison.
MAX_DEPTH = 100
_SHOWN_PATH = 200  # characters of a field path quoted in an error


class DocumentError(ValueError):
    """A document the API server's JSON decoder would not take: nested more than MAX_DEPTH levels,
    or holding a number JSON cannot carry (NaN, infinity). `path` is where."""

    def __init__(self, detail: str, path: str = "") -> None:
        self.path = path if len(path) <= _SHOWN_PATH else path[:_SHOWN_PATH] + "..."
        super().__init__(f"json: {detail}" + (f" at {self.path}" if self.path else ""))

    @staticmethod
    def too_deep(path: str = "") -> DocumentError:
        return DocumentError(f"exceeded max depth of {MAX_DEPTH}", path)


def clean_text(text: str) -> str:
    """`text` with every lone UTF-16 surrogate (which JSON's `\\ud800` escapes can produce) replaced
    by U+FFFD, as Go's encoding/json decodes them: such a string cannot be encoded as UTF-8, so it
    could reach no log, protobuf or gRPC status intact."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def _child_path(path: str, key: object) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else str(key)


def plain_document(value: Any, path: str = "", depth: int = 0) -> Any:
    """A copy of a decoded document as the API server holds it: strings (keys too) are valid Unicode
    (`clean_text`), numbers finite, and it nests at most MAX_DEPTH levels; else `DocumentError`.
    Mappings become dicts and lists lists; other values (numbers, or a `datetime` in a document
    built in Python) are kept as they are."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, float) and not math.isfinite(value):
        raise DocumentError(f"unsupported value: {value}", path)
    if isinstance(value, Mapping | list | tuple):
        depth += 1
        if depth > MAX_DEPTH:
            raise DocumentError.too_deep(path)
        if isinstance(value, Mapping):
            return {
                (clean_text(key) if isinstance(key, str) else key): plain_document(item, _child_path(path, key), depth)
                for key, item in value.items()
            }
        return [plain_document(item, _child_path(path, index), depth) for index, item in enumerate(value)]
    return value


def _refuse_constant(name: str) -> float:
    raise ValueError(f"invalid character {name[0]!r} looking for beginning of value")


def _finite_float(text: str) -> float:
    number = float(text)
    if math.isinf(number):
        raise ValueError(f"json: cannot unmarshal number {text[:40]} into Go value of type float64")
    return number


def parse_json(raw: bytes | str) -> Any:
    """One JSON value as the API server's decoder reads it: `NaN` and `Infinity` are not JSON, a
    number beyond float64 is refused rather than read as infinity, and the result is a
    `plain_document` (valid Unicode, MAX_DEPTH levels at most). Raises ValueError saying why."""
    try:
        document = json_text.fast_loads(raw)
    except json_text.NotCertain:
        pass
    else:
        # What orjson reads holds only valid Unicode and finite numbers, so it is a plain document
        # already unless it nests too deep, which it cannot with MAX_DEPTH brackets or fewer (most
        # bodies: the walk that builds a plain document was half of admitting a pod).
        assert isinstance(raw, bytes)
        if raw.count(b"{") + raw.count(b"[") <= MAX_DEPTH:
            return document
        return plain_document(document)
    try:
        document = json.loads(raw, parse_constant=_refuse_constant, parse_float=_finite_float)
    except RecursionError:  # the parser's own stack ends far beyond MAX_DEPTH
        raise DocumentError.too_deep() from None
    return plain_document(document)


# --- parsing ---------------------------------------------------------------------------------------


class _ManifestLoader(yaml.SafeLoader):
    """YAML as kubectl reads it (YAML -> JSON): timestamps stay strings, mapping keys become
    strings, and a key repeated in one mapping is an error instead of silently overwriting."""


def _construct_mapping(loader: _ManifestLoader, node: yaml.MappingNode) -> dict[str, Any]:
    loader.flatten_mapping(node)
    result: dict[str, Any] = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        text = ("true" if key else "false") if isinstance(key, bool) else str(key)
        if text in result:
            raise yaml.constructor.ConstructorError(None, None, f'key "{text}" already set in map', key_node.start_mark)
        result[text] = loader.construct_object(value_node, deep=True)
    return result


def _construct_timestamp_as_text(loader: _ManifestLoader, node: yaml.Node) -> str:
    return str(loader.construct_scalar(node))  # type: ignore[arg-type]


_ManifestLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
_ManifestLoader.add_constructor("tag:yaml.org,2002:timestamp", _construct_timestamp_as_text)


def _parse_error(source: str, detail: str) -> ApiError:
    return ApiError.bad_request("", "", f"error parsing {source}: {detail}")


def _parse_yaml(text: str, source: str) -> list[Any]:
    try:
        return list(yaml.load_all(text, Loader=_ManifestLoader))  # a SafeLoader: no arbitrary objects
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = f"line {mark.line + 1}: " if mark is not None else ""
        problem = exc.problem or exc.context or "invalid YAML"
        raise _parse_error(source, f"error converting YAML to JSON: yaml: {line}{problem}") from exc
    except yaml.YAMLError as exc:
        raise _parse_error(source, f"error converting YAML to JSON: yaml: {exc}") from exc
    except RecursionError:
        raise _parse_error(source, f"error converting YAML to JSON: {DocumentError.too_deep()}") from None


def _parse_json_stream(text: str, source: str) -> list[Any]:
    """A JSON value or a stream of concatenated values, as kubectl's YAMLOrJSONDecoder reads it."""
    decoder = json.JSONDecoder()
    documents: list[Any] = []
    position = 0
    while True:
        while position < len(text) and text[position].isspace():
            position += 1
        if position == len(text):
            return documents
        try:
            document, position = decoder.raw_decode(text, position)
        except json.JSONDecodeError as exc:
            raise _parse_error(
                source, f"error converting JSON: line {exc.lineno} column {exc.colno}: {exc.msg}"
            ) from exc
        except (RecursionError, ValueError) as exc:  # nested too deep; a number of more than 4300 digits
            detail = DocumentError.too_deep() if isinstance(exc, RecursionError) else exc
            raise _parse_error(source, f"error converting JSON: {detail}") from None
        documents.append(document)


_YAML_SEPARATOR_RE = re.compile(r"^---", re.MULTILINE)


def _parse_text(text: str, source: str) -> list[Any]:
    """Text that starts like JSON is read as a JSON stream, unless it has YAML document separators
    (JSON documents joined by `---`, which YAML reads). Anything else is YAML."""
    if text.lstrip()[:1] in ("{", "[") and not _YAML_SEPARATOR_RE.search(text):
        return _parse_json_stream(text, source)
    return _parse_yaml(text, source)


# --- expanding documents into objects --------------------------------------------------------------


def _validation_error(source: str, where: str, problems: list[str]) -> ApiError:
    return ApiError.bad_request("", "", f'error validating "{source}" ({where}): {error_validating_data(problems)}')


def _expand(document: Any, source: str, where: str) -> Iterator[dict[str, Any]]:
    """Yield the objects of one document: itself, or the items of a `List`/`*List`. Items of a typed
    list (`PodList`) may omit apiVersion and kind; they inherit them from the list."""
    if not isinstance(document, dict):
        raise _validation_error(source, where, [f"expected an object, got {json_type_name(document)}"])
    problems = type_meta_errors(document)
    if problems:
        raise _validation_error(source, where, problems)
    kind: str = document["kind"]
    if not kind.endswith("List"):
        yield document
        return
    items = document.get("items") or []
    if not isinstance(items, list):
        raise _validation_error(source, where, [f"items must be an array, got {json_type_name(items)}"])
    for index, item in enumerate(items):
        if isinstance(item, dict) and kind != "List":
            item.setdefault("apiVersion", document["apiVersion"])
            item.setdefault("kind", kind[: -len("List")])
        yield from _expand(item, source, f"{where}, item {index + 1}")


def load_documents(text: str, source: str = "-") -> list[dict[str, Any]]:
    """Parse YAML (multi-document) or JSON (one value or a stream) into object documents.

    Empty documents are skipped; `kind: List` and typed lists (`PodList`, ...) are expanded into
    their items. Raises `ApiError` (BadRequest) naming `source` and the line for unparsable text, and
    the 1-based document (and item) number for a document that is not an object or lacks
    apiVersion/kind. Documents are not decoded: pass each to `decode_object`.
    """
    raw = _parse_text(text, source)
    objects: list[dict[str, Any]] = []
    for number, document in enumerate(raw, start=1):
        if document is None or document == {}:
            continue
        if isinstance(document, list):  # a bare JSON array of objects
            for index, item in enumerate(document):
                objects.extend(_expand(item, source, f"document {number}, item {index + 1}"))
            continue
        objects.extend(_expand(document, source, f"document {number}"))
    return objects
