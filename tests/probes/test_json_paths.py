"""JSONPaths in assertions: the same first value jsonpath-ng finds, found lazily; paths that
explode refused when saved; a budget of values visited that fails the check, never holds
the probe worker."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonpath_ng.parser import parse as parse_jsonpath

from upwatch.probes import json_paths
from upwatch.probes.assertions import Assertion, BadAssertion, Response, first_failure, validate
from upwatch.probes.json_paths import STEPS, BadPath, Budget, OverBudget, compiled, first

keys = st.sampled_from(["a", "b", "c", "id"])
documents = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.sampled_from(["x", "y"]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4),
    max_leaves=25,
)


@st.composite
def paths(draw: st.DrawFn) -> str:
    step = st.sampled_from(
        [".a", ".b", ".id", ".*", "[*]", "[0]", "[-1]", "[1:]", "[::2]", "['a','b']", "[0,2]"]
    )
    steps = draw(st.lists(step, min_size=1, max_size=4))
    if draw(st.booleans()):
        at = draw(st.integers(0, len(steps) - 1))
        steps[at] = ".." + steps[at].lstrip(".")
    path = "$" + "".join(steps)
    if draw(st.booleans()):
        path += " | $" + draw(step)
    return path


@settings(max_examples=300)
@given(documents, paths())
def test_the_first_value_is_the_one_jsonpath_ng_finds_first(document: Any, path: str) -> None:
    try:
        compiled(path)
    except BadPath:
        return  # a path of the grammar the evaluator refuses, like jsonpath-ng's own errors
    found = parse_jsonpath(path).find(document)
    assert first(path, document, Budget()) == ((True, found[0].value) if found else (False, None))


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("$..*..*..*", "at most one recursive descent"),  # the review's: 22 s on 601 bytes
        ("$..*..*", "at most one recursive descent"),  # 9.7 s on 4 KiB
        ("$..a..b", "at most one recursive descent"),
        ("$.a.`parent`", "not supported"),
        ("$.a where $.b", "not supported"),
        ("$[", "not a JSONPath"),
    ],
)
def test_a_path_that_could_explode_or_is_not_taken_is_refused_when_saved(
    path: str, reason: str
) -> None:
    with pytest.raises(BadAssertion, match=reason) as refused:
        validate(Assertion(source="json", operator="exists", path=path))
    assert refused.value.field == "path"


def nested(depth: int, width: int) -> Any:
    """A body of ``width`` ** ``depth`` leaves: 601 bytes at depth 4 and width 3."""
    return 1 if depth == 0 else {f"k{i}": nested(depth - 1, width) for i in range(width)}


def test_a_path_saved_before_the_bound_fails_its_check_quickly_naming_itself(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A monitor saved before paths were refused still checks, and fails within its budget."""
    visited = [0]
    spend = Budget.spend

    def counting(self: Budget) -> None:
        visited[0] += 1
        spend(self)

    monkeypatch.setattr(Budget, "spend", counting)
    body = json.dumps(nested(4, 3)).encode()
    rule = Assertion(source="json", operator="notExists", path="$..*..*..*")
    failed = first_failure([rule], Response(200, {}, body, 1.0))
    assert failed == (
        "assertion 1 (json $..*..*..* notExists): at most one recursive descent (..) per "
        "path: each visits the whole body"
    )
    assert visited[0] == 0


def test_a_path_that_visits_more_than_the_budget_fails_the_check_naming_it() -> None:
    wide = json.dumps({"items": [{"id": i, "tags": ["a", "b"]} for i in range(40_000)]})
    rule = Assertion(source="json", operator="exists", path="$..missing")
    failed = first_failure([rule], Response(200, {}, wide.encode(), 1.0))
    assert failed == (
        f"assertion 1 (json $..missing exists): the JSONPath visited more than {STEPS} "
        "values of this body"
    )


def test_the_budget_is_shared_by_every_path_of_a_check() -> None:
    document = {"items": list(range(60_000))}
    budget = Budget()
    assert first("$..missing", {"items": list(range(30_000))}, budget) == (False, None)
    with pytest.raises(OverBudget):
        first("$..missing", document, budget)


def test_the_first_value_is_found_without_visiting_the_rest() -> None:
    budget = Budget(10)
    assert first("$..id", {"id": 1, "rest": list(range(100_000))}, budget) == (True, 1)


def test_a_path_is_parsed_once_however_many_checks_read_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    compiled.cache_clear()
    parsed: list[str] = []
    parse = json_paths.parse_jsonpath

    def counting(path: str) -> Any:
        parsed.append(path)
        return parse(path)

    monkeypatch.setattr(json_paths, "parse_jsonpath", counting)
    rule = Assertion(source="json", operator="equals", path="$.status", value='"ok"')
    for _ in range(50):
        assert first_failure([rule], Response(200, {}, b'{"status": "ok"}', 1.0)) is None
    assert parsed == ["$.status"]


def test_a_body_nested_far_deeper_than_python_recurses_is_walked_without_overflow() -> None:
    document: Any = 1
    for _ in range(5_000):
        document = [document]
    assert first("$..missing", document, Budget()) == (False, None)
