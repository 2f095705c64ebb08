"""Checks on the raw request before any framework code parses it, and the retry of a request
that concurrent writes kept from running."""

from __future__ import annotations

import asyncio
import math
from urllib.parse import parse_qsl, unquote_to_bytes

from upwatch.kit.backoff import jittered_seconds
from upwatch.kit.error_handlers import RETRYABLE, problem_response
from upwatch.kit.errors import BadRequest, PayloadTooLarge, ProblemError, ValidationFailed
from upwatch.kit.metrics import ASGIApp, Message, Receive, Scope, Send
from upwatch.kit.origin import origin_of, request_origin


class RequestGuard:
    """Refuse bodies over the size limit (413) and NUL characters in the path or query (400).

    The body is read first, bounded: errors raised while the framework reads it would turn
    into a generic 400, and a 413 should say what is wrong.
    """

    def __init__(
        self, app: ASGIApp, max_body_bytes: int, retries: int = 0, retry_seconds: float = 0.05
    ) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.retries = retries
        self.retry_seconds = retry_seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_origin.set(origin_of(scope))
        raw_path = scope.get("raw_path") or scope["path"].encode()
        if b"\x00" in unquote_to_bytes(raw_path) + unquote_to_bytes(scope["query_string"]):
            await _send_problem(send, BadRequest("NUL characters are not allowed in the URL"))
            return
        # Every query parameter takes one value: a repeated one is refused rather than read
        # as its last value (the API has no list parameters).
        names = [name for name, _ in parse_qsl(scope["query_string"].decode("latin-1"), True)]
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            await _send_problem(
                send, ValidationFailed.on(repeated[0], "may be given once in the query")
            )
            return
        for name, value in scope.get("headers", []):
            if name == b"content-length" and value.isdigit() and int(value) > self.max_body_bytes:
                await _send_problem(send, PayloadTooLarge())
                return
        chunks: list[bytes] = []
        seen = 0
        more = True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                break
            chunk = message.get("body", b"")
            seen += len(chunk)
            if seen > self.max_body_bytes:
                await _send_problem(send, PayloadTooLarge())
                return
            chunks.append(chunk)
            more = message.get("more_body", False)
        body = b"".join(chunks)
        for attempt in range(self.retries + 1):
            if not await self._attempt(scope, body, receive, send, attempt < self.retries):
                return
            # Requests that collided retry at jittered times, so they do not collide again.
            await asyncio.sleep(jittered_seconds(attempt + 1, self.retry_seconds, math.inf))

    async def _attempt(
        self, scope: Scope, body: bytes, receive: Receive, send: Send, may_retry: bool
    ) -> bool:
        """Run the request once; True when its answer was a retryable 503 that was not sent
        (the transaction rolled back: nothing of it stayed)."""
        replayed = False
        # The scope itself, not a copy: outer middleware reads what routing put in it.
        state = scope.setdefault("state", {})
        state.pop(RETRYABLE, None)
        discarded = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        async def answer(message: Message) -> None:
            nonlocal discarded
            if message["type"] == "http.response.start":
                discarded = may_retry and message["status"] == 503 and bool(state.get(RETRYABLE))
            if not discarded:
                await send(message)

        await self.app(scope, replay, answer)
        return discarded


async def _send_problem(send: Send, error: ProblemError) -> None:
    response = problem_response(error)
    await send(
        {
            "type": "http.response.start",
            "status": response.status_code,
            "headers": response.raw_headers,
        }
    )
    await send({"type": "http.response.body", "body": response.body})
