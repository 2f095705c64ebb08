"""One sign-in's flow between leaving for the provider and coming back: its state, nonce, PKCE
verifier and the page to go to afterwards.

They travel in a cookie, encrypted and authenticated with a key derived from the service key
(Fernet: AES-CBC with an HMAC, and a timestamp that bounds its age), rather than in a row: an
abandoned sign-in then leaves nothing to clean up, any API process can finish a flow another
began, and the verifier is unreadable to anything that sees the cookie in transit to the
browser. The cookie is scoped to /app, HttpOnly, SameSite=Lax (the provider's redirect back
is a top-level GET, which Lax lets through), and lives ten minutes.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
from dataclasses import dataclass
from datetime import datetime
from typing import Final

from cryptography.fernet import Fernet, InvalidToken

FLOW_COOKIE: Final = "upwatch_sso"
FLOW_SECONDS: Final = 600


@dataclass(frozen=True, slots=True)
class Flow:
    state: str
    nonce: str
    verifier: str
    next: str

    @classmethod
    def begin(cls, wanted: str) -> Flow:
        # RFC 7636 §4.1: 43 to 128 characters; 32 random bytes give 43.
        return cls(
            secrets.token_urlsafe(32), secrets.token_urlsafe(32), secrets.token_urlsafe(48), wanted
        )


class Flows:
    """Seals a flow into the cookie's value and opens it again."""

    def __init__(self, key: str) -> None:
        derived = hashlib.sha256(b"upwatch sso flow\0" + key.encode()).digest()
        self._fernet = Fernet(base64.urlsafe_b64encode(derived))

    def seal(self, flow: Flow, now: datetime) -> str:
        payload = json.dumps([flow.state, flow.nonce, flow.verifier, flow.next]).encode()
        return self._fernet.encrypt_at_time(payload, int(now.timestamp())).decode()

    def open(self, value: str | None, now: datetime) -> Flow | None:
        """The flow ``value`` holds, or None if it is forged, malformed or too old."""
        if not value or len(value) > 4096:
            return None
        try:
            payload = self._fernet.decrypt_at_time(
                value.encode(), FLOW_SECONDS, int(now.timestamp())
            )
            state, nonce, verifier, wanted = json.loads(payload)
        except (InvalidToken, ValueError, TypeError, UnicodeError):
            return None
        fields = (state, nonce, verifier, wanted)
        if not all(isinstance(part, str) for part in fields):
            return None
        return Flow(state, nonce, verifier, wanted)
