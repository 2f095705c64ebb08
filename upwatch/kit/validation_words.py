"""Validation errors in words: pydantic's errors as the client reads them, each field named as
sent and what is allowed said in words, for problem documents and the config file alike."""

from __future__ import annotations

import gettext
import re
from collections.abc import Callable, Iterable
from typing import Any, Final, Protocol

from pydantic import BaseModel

from upwatch.kit.inputs import ISO_INSTANT_EXPECTED, PATTERN_WORDS
from upwatch.kit.languages import N_


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


class Say(Protocol):
    """A catalog's ``gettext`` and ``ngettext`` (``gettext.NullTranslations`` for English)."""

    def gettext(self, message: str) -> str: ...

    def ngettext(self, singular: str, plural: str, n: int) -> str: ...


ENGLISH: Final[Say] = gettext.NullTranslations()


def _one_of(expected: str, say: Say) -> str:
    """pydantic's "'a', 'b' or 'c'" as "one of a, b, c"."""
    choices = [part.strip("'") for part in re.split(r", | or ", expected)]
    if len(choices) > 1:
        return say.gettext("one of %(choices)s") % {"choices": ", ".join(choices)}
    return say.gettext("must be %(choice)s") % {"choice": choices[0]}


def _count(ctx: dict[str, Any], bound: str, say: Say) -> str:
    n = int(float(ctx[bound]))
    if ctx.get("field_type") == "Dictionary":
        return say.ngettext("%(count)s entry", "%(count)s entries", n) % {
            "count": _number(ctx[bound])
        }
    return say.ngettext("%(count)s item", "%(count)s items", n) % {"count": _number(ctx[bound])}


def _at_least_characters(n: Any, say: Say) -> str:
    if n == 1:
        return say.gettext("may not be empty")
    text = say.ngettext("at least %(count)s character", "at least %(count)s characters", int(n))
    return text % {"count": n}


def _at_most_characters(n: Any, say: Say) -> str:
    text = say.ngettext("at most %(count)s character", "at most %(count)s characters", int(n))
    return text % {"count": n}


def _bound(text: str, value: Any) -> str:
    return text % {"value": _number(value)}


# What each kind of error says when it needs nothing of the error's context.
_FIXED: dict[str, str] = {
    "missing": N_("required"),
    "extra_forbidden": N_("unknown field"),
    "string_type": N_("must be text"),
    "bool_type": N_("must be true or false"),
    "bool_parsing": N_("must be true or false"),
    "int_type": N_("must be a whole number"),
    "int_parsing": N_("must be a whole number"),
    "int_from_float": N_("must be a whole number"),
    "int_parsing_size": N_("too large"),
    "float_type": N_("must be a number"),
    "float_parsing": N_("must be a number"),
    "finite_number": N_("must be a finite number"),
    "list_type": N_("must be a list"),
    "dict_type": N_("must be an object"),
    "model_type": N_("must be an object"),
    "model_attributes_type": N_("must be an object"),
    "datetime_type": ISO_INSTANT_EXPECTED,
    "datetime_parsing": ISO_INSTANT_EXPECTED,
    "datetime_from_date_parsing": ISO_INSTANT_EXPECTED,
    "timezone_aware": N_("needs its UTC offset, e.g. 2026-11-22T06:00:00Z"),
    "union_tag_not_found": N_("required"),
}
# Those that say their bound, their choices or their pattern.
_WORDS: dict[str, Callable[[dict[str, Any], Say], str]] = {
    "string_too_short": lambda c, say: _at_least_characters(c["min_length"], say),
    "string_too_long": lambda c, say: _at_most_characters(c["max_length"], say),
    "string_pattern_mismatch": lambda c, say: say.gettext(
        PATTERN_WORDS.get(str(c["pattern"]), N_("not in the expected form"))
    ),
    "too_short": lambda c, say: (
        say.gettext("at least %(count)s") % {"count": _count(c, "min_length", say)}
    ),
    "too_long": lambda c, say: (
        say.gettext("at most %(count)s") % {"count": _count(c, "max_length", say)}
    ),
    "greater_than": lambda c, say: _bound(say.gettext("more than %(value)s"), c["gt"]),
    "greater_than_equal": lambda c, say: _bound(say.gettext("at least %(value)s"), c["ge"]),
    "less_than": lambda c, say: _bound(say.gettext("less than %(value)s"), c["lt"]),
    "less_than_equal": lambda c, say: _bound(say.gettext("at most %(value)s"), c["le"]),
    "multiple_of": lambda c, say: _bound(say.gettext("a multiple of %(value)s"), c["multiple_of"]),
    "literal_error": lambda c, say: _one_of(str(c["expected"]), say),
    "enum": lambda c, say: _one_of(str(c["expected"]), say),
    "union_tag_invalid": lambda c, say: _one_of(str(c["expected_tags"]), say),
}


def _message(error: Any, say: Say = ENGLISH) -> str:
    fixed = _FIXED.get(error["type"])
    if fixed is not None:
        return say.gettext(fixed)
    words = _WORDS.get(error["type"])
    if words is not None:
        return words(error.get("ctx") or {}, say)
    message = str(error.get("msg") or "invalid value")
    # Messages of our own validators arrive with pydantic's prefixes; one that is a catalog
    # text (marked where it is raised) is said in the reader's language.
    message = message.removeprefix("Value error, ").removeprefix("Assertion failed, ")
    return say.gettext(message) if message else message


def _path(error: Any) -> tuple[Any, ...]:
    loc = tuple(error.get("loc", ()))
    if error["type"] == "union_tag_not_found":  # pydantic's own, where TagInWords is not used
        loc = (*loc, str(error["ctx"]["discriminator"]).strip("'"))
    return tuple(part for part in loc if not (isinstance(part, str) and _SCHEMA_LABEL.match(part)))


def described(error: Any) -> tuple[tuple[Any, ...], str]:
    """One of pydantic's errors as the client reads it: the field's path as sent, and what is
    allowed, in words (the config file's errors use it too)."""
    return _path(error), _message(error)


def field_errors(
    errors: Iterable[Any], within: tuple[str, ...] = (), say: Say = ENGLISH
) -> list[FieldError]:
    """Pydantic's ``errors()`` as the client reads them: each field named as sent (dotted,
    camelCase, list indexes as numbers; ``within`` in front when the model was a part of the
    body) and what is allowed, in words (English for problem documents; the console passes
    its reader's catalog as ``say``). An entry whose name was refused says ``key: ...``."""
    result: list[FieldError] = []
    for error in errors:
        path = [*within, *_path(error)]
        message = _message(error, say)
        if path[-1:] == [_KEY]:
            path, message = path[:-1], say.gettext("key: %(message)s") % {"message": message}
        item = FieldError(field=".".join(str(p) for p in path) or "body", message=message)
        if item not in result:  # the branches of a union may say the same twice
            result.append(item)
    return result
