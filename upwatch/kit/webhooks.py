"""Signing outgoing webhooks per the Standard Webhooks specification (standardwebhooks.com).

Each signed request carries ``webhook-id`` (the message's id: the same for every attempt at
one delivery, so a receiver can drop a repeat), ``webhook-timestamp`` (this attempt's time in
seconds, so a receiver can refuse a delivery captured and replayed later) and
``webhook-signature`` (``v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">``). The
signing itself is the specification's reference code (the ``standardwebhooks`` package), so a
receiver that verifies with it agrees byte for byte.

The key: a secret in the specification's form (``whsec_`` and base64) is the decoded bytes, as
every Standard Webhooks library reads it; any other secret (plain strings, as secrets were
before this form was supported) is its UTF-8 bytes, which those libraries accept given as
bytes. Every webhook sender uses ``signed_headers``, so there is one way to sign.
"""

from __future__ import annotations

import base64
import binascii
import math
from datetime import UTC, datetime
from typing import Final

from standardwebhooks import Webhook

SECRET_PREFIX: Final = "whsec_"  # noqa: S105 (the format's prefix, not a secret)
# The specification asks for keys of 24 to 64 bytes (192 to 512 bits).
MIN_KEY_BYTES: Final = 24
MAX_KEY_BYTES: Final = 64

ID_HEADER: Final = "webhook-id"
TIMESTAMP_HEADER: Final = "webhook-timestamp"
SIGNATURE_HEADER: Final = "webhook-signature"
HEADERS: Final = (ID_HEADER, TIMESTAMP_HEADER, SIGNATURE_HEADER)


def secret_problem(secret: str) -> str | None:
    """Why a ``whsec_`` secret cannot be used (``None`` when it can, and for plain secrets)."""
    if not secret.startswith(SECRET_PREFIX):
        return None
    try:
        key = base64.b64decode(secret.removeprefix(SECRET_PREFIX), validate=True)
    except (binascii.Error, ValueError):
        return "a whsec_ secret must be base64 after the prefix"
    if not MIN_KEY_BYTES <= len(key) <= MAX_KEY_BYTES:
        return f"a whsec_ secret must encode {MIN_KEY_BYTES} to {MAX_KEY_BYTES} bytes"
    return None


def signing_key(secret: str) -> bytes:
    """The HMAC key ``secret`` stands for (see the module's notes)."""
    if secret.startswith(SECRET_PREFIX) and secret_problem(secret) is None:
        return base64.b64decode(secret.removeprefix(SECRET_PREFIX), validate=True)
    return secret.encode()


def signed_headers(
    secret: str, message_id: str, timestamp: datetime, body: bytes
) -> dict[str, str]:
    """The three Standard Webhooks headers for sending ``body`` (UTF-8, e.g. JSON) as message
    ``message_id`` at ``timestamp`` (an aware datetime; whole seconds are signed)."""
    # In UTC first: the reference code replaces the zone rather than converting to it.
    at = timestamp.astimezone(UTC)
    signature = Webhook(signing_key(secret)).sign(message_id, at, body.decode())
    seconds = math.floor(at.timestamp())
    return {ID_HEADER: message_id, TIMESTAMP_HEADER: str(seconds), SIGNATURE_HEADER: signature}
