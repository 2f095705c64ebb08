"""What a failing check saw, kept with its result: bounded and redacted.

Evidence is made on the failure path only (a check that passes keeps none), as a plain JSON
object with camelCase keys, the API's spelling:

- ``phase``: where the check was when it failed: ``dns``, ``connect``, ``tls``,
  ``first_byte`` (waiting for the response) or ``body`` (reading or judging it);
- ``errorClass``: the exception's class name, when an exception ended the check;
- ``addresses``: the addresses the network guard resolved (or the one connected to);
- ``tls``: the peer certificate's ``subject``, ``issuer`` and ``notAfter`` (the leaf only:
  Python 3.11 exposes no verified chain without private API);
- ``statusLine``, ``headers`` (a list of ``[name, value]``, in the order received) and
  ``body`` (the first 4 KB, decoded leniently; ``bodyTruncated`` when there was more).

Redaction: the probe layer does not know which request headers the user marked secret, so
every request header value (and a URL's password) counts as one. Wherever such a value
appears in a response header or the body it is replaced by ``MASK``; response headers that
carry credentials by nature (``Set-Cookie``, ``Authorization``, names with "token", "secret",
"session", "key", "password") are masked whole. Bounding: per-field caps first, then the whole
object is cut to ``LIMIT_BYTES`` of JSON (body first, then headers), with ``truncated`` set.
"""

from __future__ import annotations

import json
import ssl
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, Final

MASK: Final = "[redacted]"
BODY_BYTES: Final = 4096
LIMIT_BYTES: Final = 8192
_MOST_HEADERS: Final = 50
_MOST_ADDRESSES: Final = 16
_MOST_CHARS: Final = 500  # a header value, a status line, a certificate name
# Short values (a "1", "json") would mask ordinary words; secrets are longer.
_SHORTEST_SECRET: Final = 4

_SECRET_NAMES: Final = frozenset(
    {"set-cookie", "set-cookie2", "cookie", "authorization", "proxy-authorization"}
)
_SECRET_WORDS: Final = ("token", "secret", "session", "password", "api-key", "apikey")


def _cut(text: str, most: int = _MOST_CHARS) -> str:
    return text if len(text) <= most else text[:most] + "…"


def _secret_name(name: str) -> bool:
    lowered = name.lower()
    return lowered in _SECRET_NAMES or any(word in lowered for word in _SECRET_WORDS)


def _masked(text: str, secrets: Iterable[str]) -> str:
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, MASK)
    return text


def secret_values(
    request_headers: Iterable[tuple[str, str]], url_password: str | None = None
) -> tuple[str, ...]:
    """The values a response must not repeat: every request header's and the URL password,
    longest first so a value containing another is masked whole."""
    found = {value for _name, value in request_headers if len(value) >= _SHORTEST_SECRET}
    if url_password and len(url_password) >= _SHORTEST_SECRET:
        found.add(url_password)
    return tuple(sorted(found, key=len, reverse=True))


def redact_headers(
    headers: Iterable[tuple[str, str]], secrets: Iterable[str] = ()
) -> list[list[str]]:
    """Response headers as ``[name, value]`` pairs, credentials masked, at most 50."""
    kept = tuple(secrets)
    out: list[list[str]] = []
    for name, value in headers:
        if len(out) == _MOST_HEADERS:
            break
        shown = MASK if _secret_name(name) else _cut(_masked(value, kept))
        out.append([_cut(name, 100), shown])
    return out


def excerpt(body: bytes, secrets: Iterable[str] = ()) -> tuple[str, bool]:
    """The first ``BODY_BYTES`` of a body as text (invalid bytes replaced), secrets masked,
    and whether there was more."""
    text = body[:BODY_BYTES].decode("utf-8", "replace")
    return _masked(text, tuple(secrets)), len(body) > BODY_BYTES


def _name(parts: object) -> str | None:
    """An ``ssl`` certificate name (tuples of relative names) as ``commonName=x, ...``."""
    if not isinstance(parts, tuple):
        return None
    pairs = [
        f"{pair[0]}={pair[1]}"
        for relative in parts
        if isinstance(relative, tuple)
        for pair in relative
        if isinstance(pair, tuple) and len(pair) == 2
    ]
    return ", ".join(pairs) or None


def certificate(peercert: Mapping[str, object]) -> dict[str, str | None] | None:
    """Subject, issuer and ``notAfter`` (ISO 8601 UTC) of a verified peer certificate, as
    ``ssl`` reports it; None when nothing was reported (an unverified connection)."""
    if not peercert:
        return None
    not_after = peercert.get("notAfter")
    try:
        expiry = datetime.fromtimestamp(ssl.cert_time_to_seconds(str(not_after)), UTC)
        when: str | None = expiry.isoformat().replace("+00:00", "Z")
    except ValueError:
        when = None
    return {
        "subject": _name(peercert.get("subject")),
        "issuer": _name(peercert.get("issuer")),
        "notAfter": when,
    }


def build(
    phase: str,
    *,
    error: BaseException | None = None,
    addresses: Iterable[str] = (),
    status_line: str | None = None,
    headers: Iterable[tuple[str, str]] | None = None,
    body: bytes | None = None,
    tls: Mapping[str, str | None] | None = None,
    secrets: Iterable[str] = (),
) -> dict[str, Any]:
    """The evidence of one failure, redacted and bounded; parts not seen are left out."""
    kept = tuple(secrets)
    evidence: dict[str, Any] = {"phase": phase}
    if error is not None:
        evidence["errorClass"] = type(error).__name__
    listed = [_cut(a, 100) for a in addresses][:_MOST_ADDRESSES]
    if listed:
        evidence["addresses"] = listed
    if tls:
        evidence["tls"] = {k: None if v is None else _cut(v) for k, v in tls.items()}
    if status_line is not None:
        evidence["statusLine"] = _cut(status_line)
    if headers is not None:
        evidence["headers"] = redact_headers(headers, kept)
    if body is not None:
        evidence["body"], evidence["bodyTruncated"] = excerpt(body, kept)
    return bound(evidence)


def _size(evidence: Mapping[str, Any]) -> int:
    return len(json.dumps(evidence, separators=(",", ":")).encode())


def bound(evidence: dict[str, Any], limit: int = LIMIT_BYTES) -> dict[str, Any]:
    """``evidence`` cut to ``limit`` bytes of JSON: the body shortened first, then headers
    dropped from the end, then the addresses and certificate; ``truncated`` says so."""
    over = _size(evidence) - limit
    if over <= 0:
        return evidence
    cut = dict(evidence, truncated=True)
    body = cut.get("body")
    while isinstance(body, str) and body and _size(cut) > limit:
        # A character may take up to 6 bytes of JSON (an escape): cut by the excess at least.
        body = body[: max(0, len(body) - max(_size(cut) - limit, 1))]
        cut["body"] = body
        cut["bodyTruncated"] = True
    headers = list(cut.get("headers") or [])
    while headers and _size(cut) > limit:
        headers.pop()
        cut["headers"] = headers
    for key in ("addresses", "tls", "statusLine", "errorClass"):
        if _size(cut) <= limit:
            break
        cut.pop(key, None)
    return cut
