"""The topic catalog: what every Kafka topic is called, how it is configured, what its values are.

The canonical files are `topics/*.json` at the repository root, one per topic. Code never
spells a topic name: it asks the catalog (`load_catalog(settings.broker.topic_prefix).turns.name`).

Where the files are found, first match wins:

1. the `directory` argument (for tools and tests that bring their own catalog);
2. `memstream/contracts/topics/` inside the package, when it holds JSON files. Meant as a
   symlink `services/memstream/contracts/topics -> ../../../topics`: setuptools copies the
   files it points to into a wheel (package data), so a non-editable install ships the
   catalog while the repository keeps one copy;
3. `topics/` three levels above this file: a source checkout or an editable install (the
   Dockerfile copies the whole repository, so this holds in the image too).

No environment variable is read here (settings are built once, elsewhere, and passed down).
"""

from __future__ import annotations

import json
import re
import zoneinfo
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from datetime import date, datetime
from pathlib import Path
from typing import Any

import fastjsonschema
from jsonschema import Draft202012Validator, FormatChecker
from jsonschema.exceptions import SchemaError, ValidationError

__all__ = [
    "Catalog",
    "CatalogError",
    "TopicSpec",
    "UnknownTopicError",
    "ValidationProblem",
    "default_catalog_dir",
    "describe_error",
    "load_catalog",
    "parse_json",
    "unrepresentable",
]

# The roles the pipeline needs, by the catalog name that fills them.
_ROLES = {
    "turns": "memstream.turns.v1",
    "windows": "memstream.windows.v1",
    "memories": "memstream.memories.v1",
    "dlq": "memstream.dlq.v1",
    "audit": "memstream.audit.v1",
    "overflow": "memstream.turns.overflow.v1",
}
# Kafka's own rule for topic names (legal characters, at most 249 of them).
_TOPIC_NAME = re.compile(r"^[A-Za-z0-9._-]{1,249}$")

# The shape of a topic file itself, so a typo in the catalog fails loudly at load time.
_TOPIC_FILE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": [
        "name",
        "partitions",
        "replication_factor",
        "retention_ms",
        "cleanup_policy",
        "key",
    ],
    # A topic either declares its values or carries another topic's (`values_of`: the
    # overflow topic holds turns records as they came), never both.
    "oneOf": [{"required": ["values"]}, {"required": ["values_of"]}],
    "properties": {
        "name": {"type": "string", "pattern": _TOPIC_NAME.pattern},
        "description": {"type": "string"},
        "partitions": {"type": "integer", "minimum": 1},
        "replication_factor": {"type": "integer", "minimum": 1},
        "retention_ms": {"type": "integer", "minimum": -1},
        "cleanup_policy": {"enum": ["delete", "compact", "compact,delete"]},
        "key": {"type": "string", "minLength": 1},
        "values_of": {"type": "string", "pattern": _TOPIC_NAME.pattern},
        "values": {
            "type": "object",
            "minProperties": 1,
            "additionalProperties": {"type": "object"},
        },
    },
}

_EXAMPLE_TS = "2024-05-01T09:30:00+02:00"

# Format checks are opt-in in jsonschema and its date-time check needs an extra package,
# so memstream registers its own: real calendar dates with an offset, real IANA zones.
_FORMATS = FormatChecker(formats=())


@_FORMATS.checks("date-time")
def _is_datetime_with_offset(value: object) -> bool:
    if not isinstance(value, str):
        return True
    try:
        return datetime.fromisoformat(value).tzinfo is not None
    except ValueError:
        return False


@_FORMATS.checks("iana-time-zone")
def _is_time_zone(value: object) -> bool:
    if not isinstance(value, str):
        return True
    try:
        zoneinfo.ZoneInfo(value)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return False
    return True


@_FORMATS.checks("date")
def _is_calendar_date(value: object) -> bool:
    if not isinstance(value, str):
        return True
    try:
        date.fromisoformat(value)
    except ValueError:
        return False
    return True


_FAST_FORMATS = {
    "date-time": _is_datetime_with_offset,
    "iana-time-zone": _is_time_zone,
    "date": _is_calendar_date,
}


@dataclass(frozen=True, slots=True)
class ValidationProblem:
    """One reason a value is invalid: the field path (`ts`, `metadata.x`, `source_ids[2]`;
    empty for the whole value) and the reason in plain words."""

    field: str
    reason: str

    def __str__(self) -> str:
        return f"{self.field or '(value)'}: {self.reason}"


class CatalogError(ValueError):
    """The catalog files are missing or malformed."""


class UnknownTopicError(KeyError):
    """A topic name that is not in the catalog."""


@dataclass(frozen=True, slots=True)
class TopicSpec:
    """One topic: its (prefixed) name, broker configuration and value schemas by type."""

    name: str
    base_name: str
    partitions: int
    replication_factor: int
    retention_ms: int
    cleanup_policy: str
    key: str
    values: Mapping[str, Mapping[str, Any]]
    description: str = ""
    values_of: str = ""  # the base name of the topic whose values this one carries
    _validators: Mapping[str, Draft202012Validator] = field(
        default_factory=dict, repr=False, compare=False
    )
    # Compiled on first use: compiling every schema would double the catalog's load time.
    _fast_checks: dict[str, Callable[[object], object]] = field(
        default_factory=dict, repr=False, compare=False
    )

    @property
    def value_types(self) -> tuple[str, ...]:
        return tuple(self.values)

    @property
    def configs(self) -> dict[str, str]:
        """Topic-level broker configuration, as CreateTopics expects it."""
        return {"retention.ms": str(self.retention_ms), "cleanup.policy": self.cleanup_policy}

    def validate(self, value: object) -> list[ValidationProblem]:
        """Problems of one value (raw bytes, JSON text or decoded object); empty when valid."""
        obj, problem = parse_json(value)
        if problem is not None:
            return [problem]
        return self.validate_parsed(obj)

    def validate_parsed(self, obj: object) -> list[ValidationProblem]:
        """Problems of a value `parse_json` returned (it checked what JSON alone can hold):
        a consumer that parsed the record validates it without walking it again."""
        if not isinstance(obj, dict):
            return [ValidationProblem("", "value must be a JSON object")]
        value_type = obj.get("type")
        if value_type is None:
            return [ValidationProblem("type", "missing field")]
        validator = self._validators.get(value_type) if isinstance(value_type, str) else None
        if validator is None:
            expected = ", ".join(self.value_types)
            return [
                ValidationProblem(
                    "type", f"unknown type {value_type!r} for {self.name} (expected {expected})"
                )
            ]
        fast_check = self._fast_checks.get(value_type)
        if fast_check is None:
            fast_check = self._fast_checks[value_type] = _fast_check(self.values[value_type])
        try:
            fast_check(obj)
        except fastjsonschema.JsonSchemaException:
            pass  # the reference validator says what is wrong, in producers' words
        else:
            return []
        return _problems(validator, obj)


@dataclass(frozen=True, slots=True)
class Catalog:
    """Every topic of memstream, with the prefix of this deployment (or test) applied."""

    prefix: str
    turns: TopicSpec
    windows: TopicSpec
    memories: TopicSpec
    dlq: TopicSpec
    audit: TopicSpec
    overflow: TopicSpec
    topics: tuple[TopicSpec, ...]

    def __iter__(self) -> Iterator[TopicSpec]:
        return iter(self.topics)

    def topic(self, name: str) -> TopicSpec:
        """The topic called `name`, with or without this catalog's prefix."""
        for spec in self.topics:
            if name in (spec.name, spec.base_name):
                return spec
        raise UnknownTopicError(name)

    def topic_for_type(self, value_type: str) -> TopicSpec | None:
        """The topic that carries values of `value_type` (types are unique in the catalog)."""
        return next((spec for spec in self.topics if value_type in spec.values), None)

    def validate(self, topic_name: str | None, value: object) -> list[ValidationProblem]:
        """Problems of `value` on `topic_name`; with None, on the topic its `type` belongs to."""
        if topic_name is not None:
            return self.topic(topic_name).validate(value)
        obj, problem = parse_json(value)
        if problem is not None:
            return [problem]
        value_type = obj.get("type") if isinstance(obj, dict) else None
        spec = self.topic_for_type(value_type) if isinstance(value_type, str) else None
        if spec is None and isinstance(value_type, str):
            return [ValidationProblem("type", f"unknown type {value_type!r}")]
        # Without a usable type, any topic gives the same "missing/not an object" answer.
        return (spec or self.turns).validate_parsed(obj)


def default_catalog_dir() -> Path:
    """The packaged catalog if the package ships one, else the repository's `topics/`."""
    packaged = Path(__file__).with_name("topics")
    if packaged.is_dir() and any(packaged.glob("*.json")):
        return packaged
    return Path(__file__).resolve().parents[3] / "topics"


def load_catalog(prefix: str = "", directory: Path | None = None) -> Catalog:
    """Read every topic file, check it, compile its schemas, and prefix the names."""
    if prefix and not _TOPIC_NAME.match(prefix):
        raise CatalogError(f"topic prefix {prefix!r} has characters Kafka does not allow")
    root = directory or default_catalog_dir()
    files = sorted(root.glob("*.json"))
    if not files:
        raise CatalogError(f"no topic files (*.json) in {root}")
    order = list(_ROLES.values())
    specs = tuple(
        sorted(
            (_load_topic(path, prefix) for path in files),
            key=lambda s: order.index(s.base_name) if s.base_name in order else len(order),
        )
    )
    missing = [base for base in _ROLES.values() if base not in {s.base_name for s in specs}]
    if missing:
        raise CatalogError(f"{root} lacks topic files for {', '.join(missing)}")
    specs = _with_borrowed_values(specs)
    _check_unique(specs)
    by_base = {spec.base_name: spec for spec in specs}
    roles = {role: by_base[base] for role, base in _ROLES.items()}
    return Catalog(prefix=prefix, topics=specs, **roles)


def _load_topic(path: Path, prefix: str) -> TopicSpec:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CatalogError(f"{path.name}: cannot read JSON: {exc}") from exc
    shape_errors = sorted(Draft202012Validator(_TOPIC_FILE_SCHEMA).iter_errors(doc), key=str)
    if shape_errors:
        raise CatalogError(f"{path.name}: {shape_errors[0].message}")
    if path.stem != doc["name"]:
        raise CatalogError(f"{path.name}: file must be named after its topic {doc['name']!r}")
    validators = {}
    for value_type, schema in doc.get("values", {}).items():
        try:
            Draft202012Validator.check_schema(schema)
        except SchemaError as exc:
            raise CatalogError(f"{path.name}: {value_type}: bad schema: {exc.message}") from exc
        if schema.get("properties", {}).get("type") != {"const": value_type}:
            raise CatalogError(f"{path.name}: {value_type}: `type` must be const {value_type!r}")
        validators[value_type] = Draft202012Validator(schema, format_checker=_FORMATS)
    name = prefix + doc["name"]
    if not _TOPIC_NAME.match(name):
        raise CatalogError(f"topic name {name!r} is too long or has illegal characters")
    return TopicSpec(
        name=name,
        base_name=doc["name"],
        partitions=doc["partitions"],
        replication_factor=doc["replication_factor"],
        retention_ms=doc["retention_ms"],
        cleanup_policy=doc["cleanup_policy"],
        key=doc["key"],
        values=doc.get("values", {}),
        description=doc.get("description", ""),
        values_of=doc.get("values_of", ""),
        _validators=validators,
    )


def _fast_check(schema: Mapping[str, Any]) -> Callable[[object], object]:
    """The schema compiled to Python code: a tenth of jsonschema's time per valid value.

    Only a yes: every value it refuses goes to the jsonschema validator, which decides and
    explains. It reads the schema as draft 7, which has every keyword the catalog uses with
    the same meaning, and with the same regular expressions and format checks it can accept
    nothing the reference refuses (a property test holds it to that).
    """
    draft7 = {k: v for k, v in schema.items() if k != "$schema"}
    return fastjsonschema.compile(draft7, formats=_FAST_FORMATS)


def _with_borrowed_values(specs: tuple[TopicSpec, ...]) -> tuple[TopicSpec, ...]:
    """Each topic with `values_of` given the values (and validators) of the topic it names."""
    by_base = {spec.base_name: spec for spec in specs if not spec.values_of}
    resolved = []
    for spec in specs:
        if spec.values_of:
            source = by_base.get(spec.values_of)
            if source is None:
                raise CatalogError(f"{spec.base_name}: values_of names no topic with values")
            spec = replace(spec, values=source.values, _validators=source._validators)
        resolved.append(spec)
    return tuple(resolved)


def _check_unique(specs: tuple[TopicSpec, ...]) -> None:
    # Validation routes a value to its topic by `type`, so a type may live on one topic only
    # (a topic that carries another's values is that topic's, for validation).
    owner: dict[str, str] = {}
    for spec in specs:
        if spec.values_of:
            continue
        for value_type in spec.values:
            if value_type in owner:
                raise CatalogError(
                    f"value type {value_type!r} is on both {owner[value_type]} and {spec.name}"
                )
            owner[value_type] = spec.name


def _reject_constant(token: str) -> object:
    # NaN and Infinity are not JSON, though Python's parser takes them.
    raise ValueError(f"{token} is not valid JSON")


def parse_json(value: object) -> tuple[object, ValidationProblem | None]:
    """A value as JSON: raw bytes or text parsed (strictly), anything else as it is; or why
    it is not JSON. `TopicSpec.validate` parses with it, so a caller that needs the parsed
    value too calls this once and validates what it returns.

    Beyond the grammar, a value must be one memstream can carry on: nested at most
    `MAX_JSON_DEPTH` deep (deeper JSON would exhaust the interpreter's recursion limit in
    whatever encodes it next) and valid Unicode, i.e. no lone surrogate from a `\\ud800`
    escape (it cannot be written as UTF-8, so no store, topic or response could hold it).
    Such a value is refused, never repaired: silently changing a user's text is worse.
    """
    if isinstance(value, bytes | bytearray | memoryview | str):
        try:
            text = value if isinstance(value, str) else bytes(value).decode("utf-8")
            value = json.loads(text, parse_constant=_reject_constant)
        except UnicodeDecodeError:
            return None, ValidationProblem("", "not JSON: the bytes are not UTF-8 text")
        except RecursionError:
            return None, ValidationProblem("", f"not JSON: nested deeper than {MAX_JSON_DEPTH}")
        except ValueError as exc:
            return None, ValidationProblem("", f"not JSON: {exc}")
        if _plainly_representable(text):
            return value, None
    problem = unrepresentable(value)
    return (None, problem) if problem is not None else (value, None)


# JSON objects and arrays nest at most this deep in any event (a turn's metadata included).
MAX_JSON_DEPTH = 32
_SURROGATE = re.compile(r"[\ud800-\udfff]")


# A lone surrogate reaches a parsed value only as itself in the text or as a \uD800-\uDFFF
# escape (UTF-8 bytes cannot hold one); a value nests no deeper than the text has brackets.
_SURROGATE_OR_ESCAPE = re.compile(r"[\ud800-\udfff]|\\u[dD][89a-fA-F]")


def _plainly_representable(text: str) -> bool:
    """Whether a JSON text's value needs no walk by `unrepresentable` (most do not: the walk
    visited every value of every record a worker read). May say False for a value that
    passes (a surrogate pair's escape, brackets in strings), never True for one that fails."""
    brackets = text.count("[") + text.count("{")
    return brackets <= MAX_JSON_DEPTH and _SURROGATE_OR_ESCAPE.search(text) is None


def unrepresentable(value: object) -> ValidationProblem | None:
    """Why a decoded JSON value cannot be carried on (too deep, a lone surrogate), or None.

    Iterative, so it is safe on any depth a caller managed to build.
    """
    stack: list[tuple[object, tuple[str | int, ...]]] = [(value, ())]
    while stack:
        item, path = stack.pop()
        if len(path) > MAX_JSON_DEPTH:
            return ValidationProblem(_path(path[:8]), f"nested deeper than {MAX_JSON_DEPTH}")
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return ValidationProblem(_path(path), "not valid Unicode: a lone surrogate")
        elif isinstance(item, dict):
            for key, child in item.items():
                if isinstance(key, str) and _SURROGATE.search(key):
                    return ValidationProblem(_path(path), "not valid Unicode: a lone surrogate")
                stack.append((child, (*path, str(key))))
        elif isinstance(item, list | tuple):
            stack.extend((child, (*path, i)) for i, child in enumerate(item))
    return None


def _problems(validator: Draft202012Validator, obj: object) -> list[ValidationProblem]:
    found: list[ValidationProblem] = []
    errors: list[ValidationError] = sorted(
        validator.iter_errors(obj), key=lambda e: [str(p) for p in e.absolute_path]
    )
    for error in errors:
        for problem in describe_error(error):
            # A timestamp fails both its pattern and its format: say it once.
            if problem not in found:
                found.append(problem)
    return found


def _json_type(value: object) -> str:
    names = {bool: "a boolean", int: "an integer", float: "a number", str: "a string"}
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    return names.get(type(value), type(value).__name__)


def _short(value: object, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _path(parts: Iterable[str | int]) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out


def _join(parent: str, child: str) -> str:
    return f"{parent}.{child}" if parent else child


def describe_error(error: ValidationError) -> list[ValidationProblem]:
    """Turn one jsonschema error into problems a producer can act on without reading schemas."""
    where = _path(error.absolute_path)
    # jsonschema types these loosely (they may be "unset"); a failed keyword always sets them.
    kind: str = str(error.validator)
    limit: Any = error.validator_value
    value: Any = error.instance
    schema: Any = error.schema
    if kind == "required":
        present = value if isinstance(value, dict) else {}
        return [
            ValidationProblem(_join(where, n), "missing field") for n in limit if n not in present
        ]
    if kind == "additionalProperties":
        known = set(schema.get("properties", {}))
        extra = sorted(set(value) - known) if isinstance(value, dict) else []
        return [ValidationProblem(_join(where, n), "unknown field") for n in extra]
    if schema.get("format") == "date-time" and kind in ("format", "pattern"):
        reason = (
            f"bad timestamp {_short(value)}: expected RFC 3339 with an offset in years "
            f"1900-2199, e.g. {_EXAMPLE_TS}"
        )
    elif kind == "format" and limit == "iana-time-zone":
        reason = f"unknown time zone {_short(value)} (expected an IANA name such as Europe/Paris)"
    elif kind == "type":
        wanted = " or ".join(limit) if isinstance(limit, list) else limit
        reason = f"must be {wanted}, not {_json_type(value)}"
    elif kind in ("enum", "const"):
        allowed = limit if kind == "enum" else [limit]
        reason = f"must be one of {', '.join(map(str, allowed))}, not {_short(value)}"
    elif kind == "maxLength":
        reason = f"too long: {len(value)} characters, at most {limit}"
    elif kind == "minLength":
        reason = "must not be empty" if limit == 1 else f"too short: at least {limit} characters"
    elif kind in ("maxProperties", "maxItems"):
        reason = f"too many entries: {len(value)}, at most {limit}"
    elif kind in ("minimum", "maximum"):
        reason = f"must be {'at least' if kind == 'minimum' else 'at most'} {limit}, not {value}"
    elif kind == "pattern" and where.endswith("user_id"):
        reason = (
            "must not contain whitespace, braces, '/', control characters or lone surrogates, "
            "nor be '.' or '..'"
        )
    elif kind == "anyOf" and all(set(sub) == {"required"} for sub in limit):
        options = " or ".join("+".join(sub["required"]) for sub in limit)
        reason = f"needs {options}"
    else:
        reason = error.message
    return [ValidationProblem(where, reason)]
