"""The base of every request body model, the free-form JSON object type, and the patterns of
request strings with what each means in words."""

from __future__ import annotations

import difflib
import json
import re
import zoneinfo
from dataclasses import dataclass
from datetime import UTC, date, datetime
from functools import cache, lru_cache, partial
from types import MappingProxyType, UnionType
from typing import Annotated, Any, ClassVar, Final, Self, Union, get_args, get_origin

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    GetCoreSchemaHandler,
    ModelWrapValidatorHandler,
    ValidationError,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    field_validator,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError, core_schema
from pydantic_core.core_schema import ErrorType

from upwatch.kit.languages import N_

_PATTERN_WORDS: dict[str, str] = {}
# What each pattern of a request string allows, in words: error messages say this instead of
# the regular expression (kit/validation_words.py). Filled by ``worded``.
PATTERN_WORDS: Final = MappingProxyType(_PATTERN_WORDS)


def worded(pattern: str, words: str) -> str:
    """``pattern``, registered with what it allows in words, for ``Field(pattern=...)``."""
    if _PATTERN_WORDS.setdefault(pattern, words) != words:
        raise ValueError(f"the pattern {pattern!r} is already worded differently")
    return pattern


# Published on every string property so clients (and schemathesis) know the rule below.
NO_NUL_PATTERN = worded("^[^\\u0000]*$", "text without NUL characters")
# Names and subjects end up in e-mail headers and single-line displays.
SINGLE_LINE_PATTERN = worded(
    "^[^\\u0000-\\u001f\\u007f]*$", "a single line of text, without control characters"
)
# Explicit ranges, not \s: the validator (Rust regex) and client generators (Python re, JS)
# disagree on what \s covers.
HTTP_URL_PATTERN = worded(
    r"^https?://[^\u0000-\u0020\u007f-\u009f]+$",
    "an http:// or https:// address without spaces or control characters",
)
# RFC 9110 token characters.
HEADER_NAME_PATTERN = worded(
    r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$",
    "a header name (letters, digits and ! # $ % & ' * + - . ^ _ ` | ~)",
)

MAX_OBJECT_DEPTH = 8
MAX_OBJECT_BYTES = 16_384


def _document_no_nul(node: Any) -> None:
    if isinstance(node, dict):
        if node.get("type") == "string" and "enum" not in node and "const" not in node:
            node.setdefault("pattern", NO_NUL_PATTERN)
        for value in node.values():
            _document_no_nul(value)
    elif isinstance(node, list):
        for item in node:
            _document_no_nul(item)


def _schema_extra(schema: dict[str, Any], _model: type[Any]) -> None:
    _document_no_nul(schema.get("properties", {}))


def _nests_deeper(value: Any, limit: int) -> bool:
    """Whether objects and lists nest more than ``limit`` levels in ``value``, measured level
    by level without recursion: a request can nest deeper than Python's stack."""
    level = [value]
    for _ in range(limit + 1):
        containers = [node for node in level if isinstance(node, dict | list)]
        if not containers:
            return False
        level = [
            child
            for node in containers
            for child in (node.values() if isinstance(node, dict) else node)
        ]
    return True


def check_json_object(value: dict[str, Any]) -> dict[str, Any]:
    """A free-form object both databases can store: finite numbers, valid Unicode, bounded."""
    if _nests_deeper(value, MAX_OBJECT_DEPTH):
        raise ValueError(f"nested deeper than {MAX_OBJECT_DEPTH} levels")
    try:
        encoded = json.dumps(value, allow_nan=False, ensure_ascii=False).encode("utf-8")
    except ValueError as exc:
        raise ValueError("numbers must be finite") from exc
    except UnicodeEncodeError as exc:
        raise ValueError("contains text that is not valid Unicode") from exc
    if len(encoded) > MAX_OBJECT_BYTES:
        raise ValueError(f"larger than {MAX_OBJECT_BYTES} bytes as JSON")
    return value


JsonObject = Annotated[dict[str, Any], Field(max_length=50), AfterValidator(check_json_object)]


def _is_flag(annotation: Any) -> bool:
    """Whether a field is a boolean (or an optional one)."""
    return _is_only(annotation, bool)


def _is_only(annotation: Any, kind: type) -> bool:
    """Whether a field is of ``kind`` (or an optional one)."""
    if annotation is kind:
        return True
    members = [
        get_args(a)[0] if get_origin(a) is Annotated else a
        for a in get_args(annotation)
        if a is not type(None)
    ]
    return get_origin(annotation) in (Union, UnionType) and members == [kind]


@cache
def _typed_keys(model: type[BaseModel]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The keys of a model's boolean fields and of its integer ones, found once per model
    rather than from the annotations on every request."""
    keys = [(info.alias or name, info.annotation) for name, info in model.model_fields.items()]
    return (
        tuple(key for key, annotation in keys if _is_flag(annotation)),
        tuple(key for key, annotation in keys if _is_only(annotation, int)),
    )


_BUILTIN_ERRORS: Final = frozenset(get_args(ErrorType))


def _copied(error: Any, loc: tuple[Any, ...] | None = None) -> InitErrorDetails:
    """A reported error as it can be raised again, at ``loc`` if given (pydantic's own types
    keep their context, so kit/errors.py can still word them)."""
    kind = error["type"]
    if kind not in _BUILTIN_ERRORS:
        kind = PydanticCustomError(kind, error["msg"], error.get("ctx"))
    where = tuple(error["loc"]) if loc is None else loc
    copied = InitErrorDetails(type=kind, loc=where, input=error["input"])
    if "ctx" in error:
        copied["ctx"] = error["ctx"]
    return copied


def _is_own_unknown(error: Any) -> bool:
    return error["type"] == "extra_forbidden" and len(error["loc"]) == 1


# Validation context that marks data read back from the database (``Input.from_stored``).
_STORED: Final = "upwatch.stored"


class Input(BaseModel):
    """Unknown fields are refused, each named with the closest known field as a suggestion
    (contract §2), so a typo never silently changes nothing; data read back from the database
    goes through ``from_stored`` instead, which drops them. NUL characters and unpaired
    surrogates are refused in every string: PostgreSQL text cannot hold them, and SQLite
    would store what PostgreSQL refuses."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=_schema_extra)

    # The response model of the resource an update body changes: a client that sends back
    # what it read learns that its other fields (id, createdAt, ...) are read-only.
    resource: ClassVar[type[BaseModel] | None] = None

    @classmethod
    def known_fields(cls) -> list[str]:
        """The field names a client sends."""
        return [info.alias or name for name, info in cls.model_fields.items()]

    @classmethod
    def from_stored(cls, data: Any) -> Self:
        """``data`` as saved by an earlier version, validated without refusing fields this
        version no longer knows (nested models too): only requests are strict."""
        return cls.model_validate(data, context={_STORED: True})

    @classmethod
    def _unknown_field(cls, name: str) -> PydanticCustomError:
        known = cls.known_fields()
        shown = cls.resource.model_fields if cls.resource is not None else {}
        if name in {info.alias or field for field, info in shown.items()}:
            return PydanticCustomError("read_only_field", "read-only, not set by this request")
        close = difflib.get_close_matches(name, known, n=1)
        if close:
            return PydanticCustomError(
                "unknown_field",
                "unknown field; did you mean {suggestion}?",
                {"suggestion": close[0]},
            )
        return PydanticCustomError("unknown_field", "unknown field")

    @model_validator(mode="wrap")
    @classmethod
    def _named_unknown_fields(
        cls, data: Any, handler: ModelWrapValidatorHandler[Any], info: ValidationInfo
    ) -> Any:
        """Pydantic says "Extra inputs are not permitted"; this says which known field was
        probably meant. Only this model's own keys: nested models word their own."""
        if isinstance(info.context, dict) and info.context.get(_STORED) and isinstance(data, dict):
            known = cls.known_fields()
            data = {key: value for key, value in data.items() if key in known}
        try:
            return handler(data)
        except ValidationError as exc:
            errors = exc.errors()
            if not any(_is_own_unknown(e) for e in errors):
                raise
            worded_errors = [
                InitErrorDetails(
                    type=cls._unknown_field(str(e["loc"][0])), loc=e["loc"], input=e["input"]
                )
                if _is_own_unknown(e)
                else _copied(e)
                for e in errors
            ]
            raise ValidationError.from_exception_data(exc.title, worded_errors) from None

    @model_validator(mode="before")
    @classmethod
    def _strict_flags(cls, data: Any) -> Any:
        """true/false only: pydantic would read 0, 1, "yes" and "off" as booleans (and
        false as 0 in a number field), and the contract rejects wrong types. (A model
        validator: field validators on every field would disturb discriminated unions.)"""
        if not isinstance(data, dict):
            return data
        flags, numbers = _typed_keys(cls)
        wrong = {
            key: [data[key]]  # a value no boolean validation accepts: the field's own error
            for key in flags
            if not isinstance(data.get(key), bool | None)
        }
        # And the other way round: pydantic reads false as 0 in a number field.
        wrong |= {key: [data[key]] for key in numbers if isinstance(data.get(key), bool)}
        return {**data, **wrong} if wrong else data

    @field_validator("*", mode="after")
    @classmethod
    def _storable_text(cls, value: Any) -> Any:
        # Lists of ids and names too: PostgreSQL refuses a NUL in any text it is sent.
        for text in value if isinstance(value, list | tuple) else (value,):
            if isinstance(text, str):
                if "\x00" in text:
                    raise ValueError("NUL characters are not allowed")
                try:
                    text.encode("utf-8")
                except UnicodeEncodeError as exc:
                    raise ValueError("not valid Unicode text") from exc
        return value


ISO_INSTANT_EXPECTED: Final = N_("an ISO 8601 date-time is expected, e.g. 2026-11-22T06:00:00Z")
_NUMBER = re.compile(r"\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*")


def iso_text_only(value: Any) -> Any:
    """Refuse numbers, which pydantic would read as Unix time: the schema publishes
    `format: date-time` (ISO 8601 text), and the contract's timestamps are ISO 8601."""
    if isinstance(value, int | float) or (isinstance(value, str) and _NUMBER.fullmatch(value)):
        raise ValueError(ISO_INSTANT_EXPECTED)
    return value


def _to_utc(value: datetime) -> datetime:
    try:
        return value.astimezone(UTC)
    except OverflowError as exc:  # 0001-01-01T00:00+01:00 has no UTC form
        raise ValueError("out of range once converted to UTC") from exc


# A point in time with its offset (ISO 8601, e.g. 2026-11-22T06:00:00Z), kept in UTC.
Instant = Annotated[AwareDatetime, BeforeValidator(iso_text_only), AfterValidator(_to_utc)]


_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


def iso_day_only(value: Any) -> Any:
    """A calendar day as ISO 8601 text (2026-11-24); pydantic would read a number as Unix
    time and a date-time at midnight as its day."""
    if not (isinstance(value, str) and _DAY.fullmatch(value)):
        raise ValueError("expected a day as YYYY-MM-DD")
    return value


# A whole UTC day (ISO 8601, e.g. 2026-11-24).
Day = Annotated[date, BeforeValidator(iso_day_only)]


@dataclass(frozen=True)
class TagInWords:
    """``Annotated[A | B, TagInWords("type")]``: a union of ``Input`` models told apart by their
    Literal field ``tag`` (a discriminated union, published as ``oneOf`` with a mapping).
    A missing or unknown tag is an error on ``tag`` that lists the allowed values, not
    pydantic's "Unable to extract tag using discriminator", and the chosen member's field
    paths are as the client sent them (pydantic puts the tag value in front of each)."""

    tag: str = "type"

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        allowed = [
            value
            for member in get_args(source)
            for value in get_args(member.model_fields[self.tag].annotation)
        ]
        tagged = handler.generate_schema(Annotated[source, Field(discriminator=self.tag)])
        return core_schema.no_info_wrap_validator_function(partial(self._validate, allowed), tagged)

    def _validate(
        self, allowed: list[str], data: Any, handler: ValidatorFunctionWrapHandler
    ) -> Any:
        if isinstance(data, dict) and data.get(self.tag) not in allowed:
            given = data.get(self.tag)
            words = "required, one of {allowed}" if given is None else "one of {allowed}"
            tag_error = PydanticCustomError("union_tag", words, {"allowed": ", ".join(allowed)})
            raise ValidationError.from_exception_data(
                "tagged union", [InitErrorDetails(type=tag_error, loc=(self.tag,), input=given)]
            )
        try:
            return handler(data)
        except ValidationError as exc:
            chosen = (data[self.tag],) if isinstance(data, dict) else None
            errors = [
                _copied(e, tuple(e["loc"][1:]) if tuple(e["loc"][:1]) == chosen else None)
                for e in exc.errors()
            ]
            raise ValidationError.from_exception_data(exc.title, errors) from None


@lru_cache(maxsize=1)
def _zones() -> frozenset[str]:
    return frozenset(zoneinfo.available_timezones())


def check_timezone(value: str) -> str:
    if value not in _zones():
        raise ValueError("not an IANA time zone name")
    return value


# An IANA time zone name the system knows (a user's setting, a status page's zone).
TimeZone = Annotated[str, Field(max_length=64), AfterValidator(check_timezone)]
