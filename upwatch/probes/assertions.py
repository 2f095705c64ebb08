"""HTTP assertions: conditions on a response beyond its status code, as pure functions.

An assertion reads one value of the response (a JSONPath into the JSON body, a header, the
body text, the response time, the status code) and compares it with an expected value. The
first that does not hold fails the check with a message naming it and what was found. Patterns
run with a time limit (the ``regex`` module): a pattern that backtracks for ever on some body
fails its check instead of holding a worker; JSONPaths spend a budget of values visited
(``json_paths``). What one monitor's assertions may cost is bounded when they are saved: the
patterns compiled, the descents of a path, the values a check visits.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Final, Literal, get_args

import regex

from upwatch.probes.json_paths import STEPS, BadPath, Budget, OverBudget, compiled, first

Source = Literal["json", "header", "body", "responseTime", "statusCode"]
Operator = Literal[
    "equals",
    "notEquals",
    "contains",
    "notContains",
    "matches",
    "lessThan",
    "lessThanOrEqual",
    "greaterThan",
    "greaterThanOrEqual",
    "exists",
    "notExists",
]
SOURCES: Final = get_args(Source)
OPERATORS: Final = get_args(Operator)
ORDERING: Final = {"lessThan", "lessThanOrEqual", "greaterThan", "greaterThanOrEqual"}
PRESENCE: Final = {"exists", "notExists"}
# A pattern that has not answered in this long on a capped body fails its check; all the
# patterns of one check share one budget of twice that.
PATTERN_SECONDS: Final = 0.05
# Patterns searched per check (and so kept per monitor).
MOST_PATTERNS: Final = 2
# What the pattern compiler builds is about the pattern's length times what its counted
# repeats multiply to: (?:x{4000}){4000} takes gigabytes, (?:a{316}){316} 80 ms, 98 character
# classes repeated 5000 times 125 MB. A monitor's patterns together may cost this much
# (about 25 ms to compile).
MOST_COST: Final = 200_000
# Whitespace inside the braces counts: verbose mode reads {1 000} as 1000.
_COUNTED = regex.compile(r"\{([0-9\s]*),?([0-9\s]*)\}")
# Verbose mode (an inline x flag) also hides repeats behind comments: refused.
_VERBOSE = regex.compile(r"\(\?[A-Za-z0-9-]*x[A-Za-z0-9-]*[:)]")
# A number compared must be one JSON carries exactly everywhere.
LARGEST_NUMBER: Final = 2**53


@dataclass(frozen=True, slots=True)
class Assertion:
    source: str
    operator: str
    path: str | None = None  # the JSONPath (json) or the header name (header)
    value: str | None = None  # the expected value as JSON text; None for exists/notExists

    @property
    def needs_body(self) -> bool:
        return self.source in ("json", "body")

    def describe(self) -> str:
        where = f"{self.source} {self.path}" if self.path else self.source
        return f"{where} {self.operator}" + (f" {self.value}" if self.value is not None else "")


def assertion_of(stored: Mapping[str, Any]) -> Assertion:
    """An assertion as the API takes and stores it (``value`` any JSON scalar, left out for
    exists and notExists)."""
    return Assertion(
        source=str(stored["source"]),
        operator=str(stored["operator"]),
        path=stored.get("path"),
        value=json.dumps(stored["value"]) if "value" in stored else None,
    )


class BadAssertion(ValueError):
    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def expected_of(assertion: Assertion) -> Any:
    return None if assertion.value is None else json.loads(assertion.value)


def validate(assertion: Assertion) -> None:
    """Raise ``BadAssertion`` naming the field when the assertion cannot be evaluated."""
    if assertion.source not in SOURCES:
        raise BadAssertion("source", f"one of {', '.join(SOURCES)}")
    if assertion.operator not in OPERATORS:
        raise BadAssertion("operator", f"one of {', '.join(OPERATORS)}")
    if assertion.source in ("json", "header") and not assertion.path:
        what = "a JSONPath" if assertion.source == "json" else "a header name"
        raise BadAssertion("path", f"{what} is needed for a {assertion.source} assertion")
    if assertion.source not in ("json", "header") and assertion.path is not None:
        raise BadAssertion("path", f"a {assertion.source} assertion has no path")
    if assertion.source == "json":
        try:
            compiled(assertion.path or "")
        except BadPath as exc:
            raise BadAssertion("path", str(exc)) from None
    if assertion.operator in PRESENCE:
        if assertion.source not in ("json", "header"):
            raise BadAssertion("operator", "exists and notExists are for json and header")
        if assertion.value is not None:
            raise BadAssertion("value", f"{assertion.operator} takes no value")
        return
    if assertion.value is None:
        raise BadAssertion("value", f"{assertion.operator} needs a value")
    expected = expected_of(assertion)
    if assertion.operator in ORDERING and not _number(expected):
        raise BadAssertion("value", f"{assertion.operator} needs a number")
    numeric = isinstance(expected, float | int) and not isinstance(expected, bool)
    if numeric and not _number(expected):
        raise BadAssertion("value", f"a finite number up to {LARGEST_NUMBER} in size")
    if assertion.operator == "matches":
        if not isinstance(expected, str):
            raise BadAssertion("value", "matches needs a pattern (a string)")
        if _VERBOSE.search(expected):
            raise BadAssertion("value", "verbose mode (the x flag) is not supported")
        if cost_of(expected) > MOST_COST:
            raise BadAssertion(
                "value",
                f"the pattern is too costly to compile: its length times its counted repeats "
                f"is over {MOST_COST}",
            )
        try:
            regex.compile(expected, cache_pattern=False)  # checked, not kept
        except regex.error as exc:
            raise BadAssertion("value", f"not a pattern: {exc}") from None
    text_like = isinstance(expected, str) or _number(expected)
    if assertion.source in ("header", "body") and not text_like:
        raise BadAssertion("value", f"a {assertion.source} is text: compare it with a string")


def cost_of(pattern: str) -> int:
    """The pattern's length times what its counted repeats multiply to: a bound on what
    compiling it builds."""
    cost = max(len(pattern), 1)
    for low, high in _COUNTED.findall(pattern):
        digits = ["".join(part.split()) or "0" for part in (low, high)]
        cost *= max(int(digits[0]), int(digits[1]), 1)
        if cost > MOST_COST:  # big enough to refuse; stop before the number grows huge
            break
    return cost


def validate_all(assertions: Sequence[Assertion]) -> tuple[int, BadAssertion] | None:
    """The first assertion (by index) that cannot be used, alone or beside the ones before it,
    and why; None when all can. Each is validated, then what they cost together: patterns
    compiled (each ``validate`` compiles one), so the API is not held by a list of them."""
    patterns = 0
    cost = 0
    for index, assertion in enumerate(assertions):
        if assertion.operator == "matches":
            patterns += 1
            if patterns > MOST_PATTERNS:
                return index, BadAssertion(
                    "operator", f"at most {MOST_PATTERNS} matches assertions per monitor"
                )
            value = expected_of(assertion) if assertion.value is not None else None
            if isinstance(value, str):
                cost += cost_of(value)
                if cost > MOST_COST:
                    return index, BadAssertion(
                        "value",
                        f"the monitor's patterns are too costly to compile together: their "
                        f"lengths times their counted repeats add up to over {MOST_COST}",
                    )
        try:
            validate(assertion)
        except BadAssertion as exc:
            return index, exc
    return None


@lru_cache(maxsize=64)
def _pattern(text: str) -> regex.Pattern[str]:
    """Compiled once per pattern, not once per check (in the judging process; a few, as each
    may hold megabytes)."""
    return regex.compile(text)


def _number(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    if isinstance(value, int):
        return abs(value) <= LARGEST_NUMBER  # math.isfinite overflows on a huge int
    return math.isfinite(value) and abs(value) <= LARGEST_NUMBER


@dataclass(frozen=True, slots=True)
class Response:
    status: int
    headers: Mapping[str, str]  # names in lower case
    body: bytes
    response_time_ms: float
    body_complete: bool = True


_MISSING: Final = object()


class _Read:
    """What assertions read of one response, each part worked out once."""

    def __init__(self, response: Response) -> None:
        self.response = response
        self._text: str | None = None
        self._document: Any = _MISSING
        self.budget = Budget()

    @property
    def text(self) -> str:
        if self._text is None:
            self._text = self.response.body.decode("utf-8", errors="replace")
        return self._text

    @property
    def document(self) -> Any:
        if self._document is _MISSING:
            try:
                self._document = json.loads(self.text)
            except ValueError:
                raise _Unreadable("the body is not JSON") from None
            except RecursionError:
                raise _Unreadable("the body nests too deep to read") from None
        return self._document

    def actual(self, assertion: Assertion) -> Any:
        response = self.response
        if assertion.source == "statusCode":
            return response.status
        if assertion.source == "responseTime":
            return round(response.response_time_ms, 3)
        if assertion.source == "header":
            return response.headers.get((assertion.path or "").lower(), _MISSING)
        if assertion.source == "body":
            return self.text
        found, value = first(assertion.path or "", self.document, self.budget)
        return value if found else _MISSING


class _Unreadable(Exception):
    pass


def _holds(operator: str, actual: Any, expected: Any) -> bool:
    if operator == "exists":
        return actual is not _MISSING
    if operator == "notExists":
        return actual is _MISSING
    if actual is _MISSING:
        return False
    if operator in ("equals", "notEquals"):
        same = _equal(actual, expected)
        return same if operator == "equals" else not same
    if operator in ("contains", "notContains"):
        inside = _contains(actual, expected)
        return inside if operator == "contains" else not inside
    if operator == "matches":
        text = actual if isinstance(actual, str) else json.dumps(actual)
        found = _pattern(expected).search(text, timeout=PATTERN_SECONDS, concurrent=True)
        return found is not None
    number = _as_number(actual)
    if number is None:
        return False
    held: bool = {
        "lessThan": number < expected,
        "lessThanOrEqual": number <= expected,
        "greaterThan": number > expected,
        "greaterThanOrEqual": number >= expected,
    }[operator]
    return held


def _equal(actual: Any, expected: Any) -> bool:
    if isinstance(actual, bool) or isinstance(expected, bool):
        return actual is expected
    if isinstance(actual, str) and not isinstance(expected, str):
        return actual == json.dumps(expected)  # a header "5" equals 5
    return bool(actual == expected)


def _contains(actual: Any, expected: Any) -> bool:
    if isinstance(actual, str):
        return (expected if isinstance(expected, str) else json.dumps(expected)) in actual
    if isinstance(actual, list):
        return any(_equal(item, expected) for item in actual)
    if isinstance(actual, dict):
        return expected in actual
    return False


def _as_number(actual: Any) -> float | None:
    if _number(actual):
        return float(actual)
    if isinstance(actual, str):
        try:
            value = float(actual)
        except ValueError:
            return None
        return value if math.isfinite(value) else None
    return None


def _shown(actual: Any) -> str:
    """What was found, without quoting text: a response may echo a request's secret
    headers, and this message goes out in alerts."""
    if actual is _MISSING:
        return "nothing"
    if actual is None or isinstance(actual, bool) or _number(actual):
        return json.dumps(actual)
    if isinstance(actual, str):
        return f"a text of {len(actual)} characters"
    if isinstance(actual, list):
        return f"a list of {len(actual)} items"
    if isinstance(actual, dict):
        return f"an object of {len(actual)} keys"
    return type(actual).__name__


def first_failure(assertions: Sequence[Assertion], response: Response) -> str | None:
    """Why the response fails its assertions (the first that does not hold), or None.
    Patterns share a budget of ``2 * PATTERN_SECONDS`` per response."""
    read = _Read(response)
    patterns = 0
    for number, assertion in enumerate(assertions, start=1):
        label = f"assertion {number} ({assertion.describe()})"
        if assertion.needs_body and not response.body_complete:
            return f"{label}: the body is larger than the probe reads"
        if assertion.operator == "matches":
            patterns += 1
            if patterns > MOST_PATTERNS:
                return f"{label}: at most {MOST_PATTERNS} patterns are searched per check"
        try:
            actual = read.actual(assertion)
            held = _holds(assertion.operator, actual, expected_of(assertion))
        except _Unreadable as exc:
            return f"{label} failed: {exc}"
        except TimeoutError:
            return f"{label}: the pattern took longer than {PATTERN_SECONDS}s on this body"
        except OverBudget:
            return f"{label}: the JSONPath visited more than {STEPS} values of this body"
        except BadPath as exc:  # saved before paths were bounded
            return f"{label}: {exc}"
        except Exception as exc:  # a value no comparison can take must fail, not stop the probe
            return f"{label}: could not be evaluated ({type(exc).__name__})"
        if not held:
            return f"{label} failed: got {_shown(actual)}"
    return None
