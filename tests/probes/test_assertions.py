"""HTTP assertions: each source and operator against a real response and as pure rules, a
failure message that names the assertion, refused assertions, and a pattern that would run
for ever stopped by its time limit."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from collections.abc import AsyncIterator
from typing import Any
from unittest.mock import ANY

import pytest
import regex
from aiohttp import web
from hypothesis import given
from hypothesis import strategies as st

from tests.probes.test_probes_http import Target, check, serve
from upwatch.engine.broker import CheckJob
from upwatch.engine.wire import decode_job, encode_job
from upwatch.kit.net import NetworkGuard
from upwatch.probes import judging
from upwatch.probes.assertions import (
    Assertion,
    BadAssertion,
    Response,
    assertion_of,
    first_failure,
    validate,
    validate_all,
)
from upwatch.probes.http import HttpCheck
from upwatch.probes.outcome import ErrorKind

DOCUMENT = {"status": "ok", "version": 3, "checks": [{"name": "db", "up": True}], "tags": ["a"]}


@pytest.fixture
async def api() -> AsyncIterator[Target]:
    async def health(_request: web.Request) -> web.Response:
        return web.json_response(DOCUMENT, headers={"X-Build": "2026.11"})

    app = web.Application()
    app.router.add_get("/health", health)
    runner, port = await serve(app)
    yield Target(url=f"http://127.0.0.1:{port}", port=port)
    await runner.cleanup()


def given_as(**stored: Any) -> Assertion:
    return assertion_of(stored)


async def test_a_response_that_meets_every_assertion_is_up(api: Target) -> None:
    assertions = (
        given_as(source="json", path="$.status", operator="equals", value="ok"),
        given_as(source="json", path="$.checks[0].up", operator="equals", value=True),
        given_as(source="json", path="$.version", operator="greaterThanOrEqual", value=3),
        given_as(source="json", path="$.tags", operator="contains", value="a"),
        given_as(source="json", path="$.missing", operator="notExists"),
        given_as(source="header", path="X-Build", operator="matches", value=r"^\d{4}\.\d+$"),
        given_as(source="header", path="content-type", operator="contains", value="json"),
        given_as(source="body", operator="contains", value='"db"'),
        given_as(source="statusCode", operator="equals", value=200),
        given_as(source="responseTime", operator="lessThan", value=10_000),
    )
    outcome = await check(
        NetworkGuard(allow_private=True), HttpCheck(url=f"{api.url}/health", assertions=assertions)
    )
    assert outcome.ok, outcome.error


async def test_the_first_assertion_that_fails_names_itself_and_what_was_found(api: Target) -> None:
    assertions = (
        given_as(source="statusCode", operator="equals", value=200),
        given_as(source="json", path="$.checks[0].name", operator="equals", value="cache"),
        given_as(source="json", path="$.status", operator="equals", value="nope"),
    )
    outcome = await check(
        NetworkGuard(allow_private=True), HttpCheck(url=f"{api.url}/health", assertions=assertions)
    )
    assert not outcome.ok
    assert outcome.error_kind is ErrorKind.ASSERTION
    assert outcome.error == (
        'assertion 2 (json $.checks[0].name equals "cache") failed: got a text of 2 characters'
    )


def response(body: bytes = b"", **headers: str) -> Response:
    return Response(status=200, headers=headers, body=body, response_time_ms=42.0)


def test_a_body_that_is_not_json_fails_a_json_assertion_saying_so() -> None:
    failed = first_failure(
        [given_as(source="json", path="$.a", operator="exists")], response(b"<html>")
    )
    assert failed == "assertion 1 (json $.a exists) failed: the body is not JSON"


def test_a_body_larger_than_the_probe_reads_is_not_judged_on_its_first_part() -> None:
    partial = Response(200, {}, b'{"a": 1', 1.0, body_complete=False)
    failed = first_failure([given_as(source="body", operator="contains", value="z")], partial)
    assert failed is not None
    assert "larger than the probe reads" in failed


@pytest.mark.parametrize(
    "body",
    [
        b"[" * 100_000 + b"]" * 100_000,  # nests deeper than the parser recurses
        b'{"a": ' + b"9" * 5000 + b"}",  # more digits than Python reads as a number
    ],
)
def test_a_body_no_comparison_can_take_fails_the_check_instead_of_stopping_the_probe(
    body: bytes,
) -> None:
    failed = first_failure(
        [given_as(source="json", path="$.a", operator="lessThan", value=5)], response(body)
    )
    assert failed is not None
    assert failed.startswith("assertion 1 (json $.a lessThan 5)")


def test_a_quoted_finding_never_repeats_text_from_the_response() -> None:
    echoed = json.dumps({"headers": {"Authorization": "Bearer s3cret-token"}}).encode()
    rule = given_as(source="json", path="$.headers.Authorization", operator="equals", value="x")
    failed = first_failure([rule], response(echoed))
    assert failed is not None
    assert "s3cret" not in failed
    assert failed.endswith("got a text of 19 characters")


def test_a_pattern_that_backtracks_for_ever_is_stopped_and_fails_the_check() -> None:
    slow = given_as(source="body", operator="matches", value="(x+x+)+y")
    failed = first_failure([slow], response(b"x" * 50_000))
    assert failed is not None
    assert "took longer than" in failed


scalars = st.none() | st.booleans() | st.integers(-1000, 1000) | st.text(max_size=10)


@given(st.dictionaries(st.from_regex(r"[a-z]{1,6}", fullmatch=True), scalars, min_size=1))
def test_equals_holds_for_the_value_at_the_path_and_not_equals_does_not(
    document: dict[str, Any],
) -> None:
    body = json.dumps(document).encode()
    for key, value in document.items():
        same = given_as(source="json", path=f"$.{key}", operator="equals", value=value)
        other = given_as(source="json", path=f"$.{key}", operator="notEquals", value=value)
        assert first_failure([same], response(body)) is None
        failed = first_failure([other], response(body))
        assert failed is not None
        assert failed.startswith("assertion 1 (json $.")


@given(st.integers(-(10**6), 10**6), st.integers(-(10**6), 10**6))
def test_orderings_compare_numbers_as_numbers(actual: int, bound: int) -> None:
    body = json.dumps({"n": actual}).encode()
    for operator, holds in (
        ("lessThan", actual < bound),
        ("lessThanOrEqual", actual <= bound),
        ("greaterThan", actual > bound),
        ("greaterThanOrEqual", actual >= bound),
    ):
        rule = given_as(source="json", path="$.n", operator=operator, value=bound)
        assert (first_failure([rule], response(body)) is None) == holds


@pytest.mark.parametrize(
    ("stored", "field"),
    [
        ({"source": "json", "path": "$.a * $.b", "operator": "exists"}, "path"),  # arithmetic
        ({"source": "json", "path": "$[?(@.a =~ 'x')]", "operator": "exists"}, "path"),
        ({"source": "body", "operator": "matches", "value": "(?:x{4000}){4000}"}, "value"),
        ({"source": "json", "path": "$.a", "operator": "lessThan", "value": 10**400}, "value"),
        ({"source": "json", "path": "$.a", "operator": "equals", "value": float("nan")}, "value"),
        ({"source": "json", "operator": "equals", "value": 1}, "path"),
        ({"source": "json", "path": "$[", "operator": "exists"}, "path"),
        ({"source": "body", "path": "x", "operator": "contains", "value": "a"}, "path"),
        ({"source": "body", "operator": "matches", "value": "(unclosed"}, "value"),
        ({"source": "body", "operator": "exists"}, "operator"),
        ({"source": "statusCode", "operator": "lessThan", "value": "500"}, "value"),
        ({"source": "json", "path": "$.a", "operator": "exists", "value": 1}, "value"),
        ({"source": "json", "path": "$.a", "operator": "equals"}, "value"),
        ({"source": "header", "path": "x", "operator": "equals", "value": True}, "value"),
    ],
)
def test_an_assertion_that_cannot_be_evaluated_is_refused_naming_the_field(
    stored: dict[str, Any], field: str
) -> None:
    with pytest.raises(BadAssertion) as refused:
        validate(assertion_of(stored))
    assert refused.value.field == field


def test_assertions_travel_in_jobs_between_processes() -> None:
    from tests.engine.conftest import DAY
    from upwatch.probes.spec import CheckSpec

    spec = CheckSpec(
        "m1", "p1", "http", "http://127.0.0.1/", "GET", (), None, (), None, None, None, None,
        None, 60, 5.0, ("r",), DAY, None, None,
        assertions=(given_as(source="json", path="$.a", operator="equals", value=None),),
    )  # fmt: skip
    job = CheckJob(spec=spec, region_id="r", due_at=1.0)
    assert decode_job(encode_job(job)).spec.assertions == spec.assertions


def test_a_monitors_patterns_are_compiled_at_most_twice_however_many_it_lists(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Twenty patterns of (?:a{316}){316} took 2.6 s to validate: each cost 80 ms to compile."""
    compiled: list[str] = []
    compile_pattern = regex.compile

    def counting(pattern: str, *args: Any, **kwargs: Any) -> Any:
        compiled.append(pattern)
        return compile_pattern(pattern, *args, **kwargs)

    monkeypatch.setattr(regex, "compile", counting)
    pattern = "(?:a{9}){9}"  # cheap: refused for their number only
    rules = [given_as(source="body", operator="matches", value=f"{pattern}{i}") for i in range(20)]
    refused = validate_all(rules)
    assert refused is not None
    assert refused[0] == 2
    assert str(refused[1]) == "at most 2 matches assertions per monitor"
    assert len(compiled) <= 2
    costly = [given_as(source="body", operator="matches", value="(?:a{316}){316}")] * 20
    assert validate_all(costly) == (0, ANY)
    assert len(compiled) <= 2  # refused by its repeats, before compiling


async def test_judges_that_finish_nothing_in_time_fail_the_check_and_are_replaced(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rule = given_as(source="json", path="$.a", operator="equals", value=1)
    assert await judging.judged([rule], response(b'{"a": 2}')) == (
        "assertion 1 (json $.a equals 1) failed: got 2"
    )
    first = judging._judges.pool
    assert first is not None
    monkeypatch.setattr(judging, "JUDGE_SECONDS", 0.0)
    assert await judging.judged([rule], response(b'{"a": 1}')) == (
        "the assertions were not judged within 0s"
    )
    assert judging._judges.pool is None  # the next check starts new judges
    monkeypatch.undo()
    assert await judging.judged([rule], response(b'{"a": 1}')) is None
    assert judging._judges.pool is not first


async def test_new_judges_have_time_to_start_before_they_count_as_stuck(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rule = given_as(source="json", path="$.a", operator="equals", value=1)
    assert await judging.judged([rule], response(b'{"a": 1}')) is None
    pool = judging._judges.pool
    assert pool is not None
    judging._judges.replace(pool)  # the next check spawns new judges
    # A start slower than the stuck bound (a loaded machine) is not being stuck.
    monkeypatch.setattr(judging, "JUDGE_SECONDS", 0.0)
    assert await judging.judged([rule], response(b'{"a": 1}')) is None


async def test_a_judge_killed_fails_the_check_it_held_and_the_next_check_is_judged() -> None:
    rule = given_as(source="json", path="$.a", operator="equals", value=1)
    assert await judging.judged([rule], response(b'{"a": 1}')) is None
    pool = judging._judges.pool
    assert pool is not None
    for process in list(pool._processes.values()):
        os.kill(process.pid, signal.SIGKILL)
    assert await judging.judged([rule], response(b'{"a": 1}')) == (
        "the assertions could not be judged: their process ended"
    )
    assert await judging.judged([rule], response(b'{"a": 2}')) == (
        "assertion 1 (json $.a equals 1) failed: got 2"
    )


async def test_a_project_has_one_body_at_the_judges_at_a_time_and_others_take_turns(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A project with many costly monitors waits for its own: another project's check is
    judged after at most one of its bodies, not after all of them."""
    order: list[str] = []
    judge = judging._judge

    async def recorded(assertions: Any, answer: Response) -> str | None:
        order.append(answer.headers["project"])
        return await judge(assertions, answer)

    monkeypatch.setattr(judging, "_judge", recorded)
    rule = given_as(source="json", path="$.a", operator="exists")
    many = [judging.judged([rule], response(b"{}", project="busy"), "busy") for _ in range(6)]
    other = judging.judged([rule], response(b'{"a": 1}', project="other"), "other")
    results = await asyncio.gather(*many, other)
    assert results[-1] is None
    assert order.index("other") <= 1


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [
        # Verbose mode read {1 000} as a repeat of 1000 the count missed: 0.99 s and 351 MB.
        ("(?x)(?:x{1 000}){1 000}", "verbose mode"),
        ("(?ix:a)b", "verbose mode"),
        ("(?:x{1 000}){1 000}", "too costly"),  # whitespace in braces still counts
        # Few repeats of a long group: 125 MB for each such pattern, kept.
        ("(?:" + "[^a]" * 98 + "){5000}", "too costly"),
    ],
)
def test_a_pattern_whose_compiling_would_be_costly_is_refused_however_it_is_spelled(
    pattern: str, reason: str
) -> None:
    with pytest.raises(BadAssertion, match=reason):
        validate(given_as(source="body", operator="matches", value=pattern))
