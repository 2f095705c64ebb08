"""Validation errors in words: pydantic's errors as the client reads them, each field named as
sent and what is allowed said in words, for problem documents and the config file alike."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

from pydantic import BaseModel

from upwatch.kit.inputs import ISO_INSTANT_EXPECTED, PATTERN_WORDS


class FieldError(BaseModel):
    field: str
    message: str


# Pydantic's messages are written for Python programmers ("Input should be a valid integer",
# "String should match pattern '^https?://...'") and its error paths carry its own schema
# labels. Every validation error a client sees passes through ``field_errors``: the field as
# the client sent it and what is allowed, in words.

# Segments pydantic adds to an error path for the branch of a union it tried
# (``function-after[check(), str]``, ``list[str]``); no field a client sends looks like that.
_SCHEMA_LABEL = re.compile(r"^[a-z][a-z-]*\[.*\]$", re.DOTALL)
# Where the name, not the value, of a dict entry was wrong.
_KEY = "[key]"


def _number(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _one_of(expected: str) -> str:
    """pydantic's "'a', 'b' or 'c'" as "one of a, b, c"."""
    choices = [part.strip("'") for part in re.split(r", | or ", expected)]
    return f"one of {', '.join(choices)}" if len(choices) > 1 else f"must be {choices[0]}"


def _count(ctx: dict[str, Any], bound: str) -> str:
    noun = "entries" if ctx.get("field_type") == "Dictionary" else "items"
    return f"{_number(ctx[bound])} {noun}"


def _characters(n: Any) -> str:
    return f"{n} character" if n == 1 else f"{n} characters"


_WORDS: dict[str, Callable[[dict[str, Any]], str]] = {
    "missing": lambda _: "required",
    "extra_forbidden": lambda _: "unknown field",
    "string_type": lambda _: "must be text",
    "string_too_short": lambda c: (
        "may not be empty" if c["min_length"] == 1 else f"at least {_characters(c['min_length'])}"
    ),
    "string_too_long": lambda c: f"at most {_characters(c['max_length'])}",
    "string_pattern_mismatch": lambda c: PATTERN_WORDS.get(
        str(c["pattern"]), "not in the expected form"
    ),
    "too_short": lambda c: f"at least {_count(c, 'min_length')}",
    "too_long": lambda c: f"at most {_count(c, 'max_length')}",
    "greater_than": lambda c: f"more than {_number(c['gt'])}",
    "greater_than_equal": lambda c: f"at least {_number(c['ge'])}",
    "less_than": lambda c: f"less than {_number(c['lt'])}",
    "less_than_equal": lambda c: f"at most {_number(c['le'])}",
    "multiple_of": lambda c: f"a multiple of {_number(c['multiple_of'])}",
    "literal_error": lambda c: _one_of(str(c["expected"])),
    "enum": lambda c: _one_of(str(c["expected"])),
    "bool_type": lambda _: "must be true or false",
    "bool_parsing": lambda _: "must be true or false",
    "int_type": lambda _: "must be a whole number",
    "int_parsing": lambda _: "must be a whole number",
    "int_from_float": lambda _: "must be a whole number",
    "int_parsing_size": lambda _: "too large",
    "float_type": lambda _: "must be a number",
    "float_parsing": lambda _: "must be a number",
    "finite_number": lambda _: "must be a finite number",
    "list_type": lambda _: "must be a list",
    "dict_type": lambda _: "must be an object",
    "model_type": lambda _: "must be an object",
    "model_attributes_type": lambda _: "must be an object",
    "datetime_type": lambda _: ISO_INSTANT_EXPECTED,
    "datetime_parsing": lambda _: ISO_INSTANT_EXPECTED,
    "datetime_from_date_parsing": lambda _: ISO_INSTANT_EXPECTED,
    "timezone_aware": lambda _: "needs its UTC offset, e.g. 2026-11-22T06:00:00Z",
    "union_tag_invalid": lambda c: _one_of(str(c["expected_tags"])),
    "union_tag_not_found": lambda _: "required",
}


def _message(error: Any) -> str:
    words = _WORDS.get(error["type"])
    if words is not None:
        return words(error.get("ctx") or {})
    message = str(error.get("msg") or "invalid value")
    # Messages of our own validators arrive with pydantic's prefixes.
    return message.removeprefix("Value error, ").removeprefix("Assertion failed, ")


def _path(error: Any) -> tuple[Any, ...]:
    loc = tuple(error.get("loc", ()))
    if error["type"] == "union_tag_not_found":  # pydantic's own, where TagInWords is not used
        loc = (*loc, str(error["ctx"]["discriminator"]).strip("'"))
    return tuple(part for part in loc if not (isinstance(part, str) and _SCHEMA_LABEL.match(part)))


def described(error: Any) -> tuple[tuple[Any, ...], str]:
    """One of pydantic's errors as the client reads it: the field's path as sent, and what is
    allowed, in words (the config file's errors use it too)."""
    return _path(error), _message(error)


def field_errors(errors: Iterable[Any], within: tuple[str, ...] = ()) -> list[FieldError]:
    """Pydantic's ``errors()`` as the client reads them: each field named as sent (dotted,
    camelCase, list indexes as numbers; ``within`` in front when the model was a part of the
    body) and what is allowed, in words. An entry whose name was refused says ``key: ...``."""
    result: list[FieldError] = []
    for error in errors:
        path = [*within, *_path(error)]
        message = _message(error)
        if path[-1:] == [_KEY]:
            path, message = path[:-1], f"key: {message}"
        item = FieldError(field=".".join(str(p) for p in path) or "body", message=message)
        if item not in result:  # the branches of a union may say the same twice
            result.append(item)
    return result
