"""A software WebAuthn authenticator for tests over HTTP: real P-256 keys, real CBOR, the
``none`` attestation, answers shaped as the console's script posts them. The browser tests
use Chromium's own virtual authenticator instead."""

from __future__ import annotations

import base64
import hashlib
import json
import os
from typing import Any

import cbor2
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec

# Flags of authenticator data: user present, user verified, attested credential data.
UP, UV, AT = 0x01, 0x04, 0x40


def b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def unb64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class SoftAuthenticator:
    """One credential. ``counts``: whether it keeps a signature counter (many passkeys
    synced between devices always say 0)."""

    def __init__(
        self, origin: str = "http://upwatch.test", rp_id: str = "upwatch.test", counts: bool = True
    ) -> None:
        self.origin = origin
        self.rp_id = rp_id
        self.counts = counts
        self.count = 0
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.credential_id = os.urandom(32)
        self.user_handle = b""

    @property
    def id(self) -> str:
        return b64url(self.credential_id)

    def _cose_key(self) -> bytes:
        numbers = self.key.public_key().public_numbers()
        x, y = numbers.x.to_bytes(32, "big"), numbers.y.to_bytes(32, "big")
        return cbor2.dumps({1: 2, 3: -7, -1: 1, -2: x, -3: y})

    def _client_data(self, kind: str, challenge: str) -> bytes:
        return json.dumps(
            {"type": kind, "challenge": challenge, "origin": self.origin, "crossOrigin": False}
        ).encode()

    def _auth_data(self, flags: int, count: int, attested: bytes = b"") -> bytes:
        rp_hash = hashlib.sha256(self.rp_id.encode()).digest()
        return rp_hash + bytes([flags]) + count.to_bytes(4, "big") + attested

    def create(self, options: dict[str, Any]) -> str:
        """The answer to registration options, as JSON."""
        self.user_handle = unb64url(options["user"]["id"])
        attested = (
            bytes(16) + len(self.credential_id).to_bytes(2, "big") + self.credential_id
        ) + self._cose_key()
        auth_data = self._auth_data(UP | UV | AT, self.count, attested)
        attestation = cbor2.dumps({"fmt": "none", "attStmt": {}, "authData": auth_data})
        client_data = self._client_data("webauthn.create", options["challenge"])
        return json.dumps(
            {
                "id": self.id,
                "rawId": self.id,
                "type": "public-key",
                "response": {
                    "clientDataJSON": b64url(client_data),
                    "attestationObject": b64url(attestation),
                    "transports": ["internal", "carrier-pigeon"],
                },
                "clientExtensionResults": {},
            }
        )

    def get(
        self, options: dict[str, Any], *, count: int | None = None, verified: bool = True
    ) -> str:
        """The answer to sign-in options, as JSON (``count``: say this counter instead)."""
        if count is None and self.counts:
            self.count += 1
        said = self.count if count is None else count
        auth_data = self._auth_data(UP | (UV if verified else 0), said)
        client_data = self._client_data("webauthn.get", options["challenge"])
        signed = auth_data + hashlib.sha256(client_data).digest()
        signature = self.key.sign(signed, ec.ECDSA(hashes.SHA256()))
        return json.dumps(
            {
                "id": self.id,
                "rawId": self.id,
                "type": "public-key",
                "response": {
                    "clientDataJSON": b64url(client_data),
                    "authenticatorData": b64url(auth_data),
                    "signature": b64url(signature),
                    "userHandle": b64url(self.user_handle),
                },
                "clientExtensionResults": {},
            }
        )
