"""TOTP (RFC 6238) codes and recovery codes: making them, sealing the shared secret, matching
what a person types. No I/O here; the rules about accounts are in accounts/twofactor.py.

The shared secret must be read back to check a code, so it cannot be hashed: it is stored
encrypted (Fernet: AES-128-CBC and HMAC-SHA256) with a key derived from the service's signing
key, so a copy of the database alone does not give anyone the codes."""

from __future__ import annotations

import base64
import hmac
import re
import secrets
from datetime import datetime
from typing import Final

import pyotp
from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from upwatch.kit.security import token_digest

ISSUER: Final = "Upwatch"
STEP_SECONDS: Final = 30
DIGITS: Final = 6
# A code of the step before or after the current one is accepted too: phone clocks drift and
# people type slowly. Wider would give a guesser more valid codes per attempt.
VALID_STEPS: Final = (-1, 0, 1)
RECOVERY_CODE_COUNT: Final = 10
# Crockford's base32: no i, l, o or u, so a code read off paper is typed right. Sixteen of
# these are 80 random bits, enough for an unsalted digest (kit/security.py token_digest).
_RECOVERY_ALPHABET: Final = "0123456789abcdefghjkmnpqrstvwxyz"
_RECOVERY_LENGTH: Final = 16
_TOTP_CODE: Final = re.compile(r"[0-9]{6}")
# What people put between the characters of a code, and the letters Crockford reads as digits.
_SEPARATORS: Final = str.maketrans({" ": None, "-": None, "\t": None})
_LOOK_ALIKES: Final = str.maketrans({"o": "0", "i": "1", "l": "1"})


class SecretBox:
    """Seals and opens TOTP secrets with a key derived from the service's signing key."""

    def __init__(self, signing_key: str) -> None:
        key = HKDF(
            algorithm=hashes.SHA256(), length=32, salt=None, info=b"upwatch totp secret"
        ).derive(signing_key.encode())
        self._fernet = Fernet(base64.urlsafe_b64encode(key))

    def seal(self, secret: str) -> str:
        return self._fernet.encrypt(secret.encode()).decode("ascii")

    def open(self, sealed: str) -> str | None:
        """The secret, or None when it was sealed with another key (the key was changed)."""
        try:
            return self._fernet.decrypt(sealed.encode("ascii")).decode()
        except (InvalidToken, ValueError):
            return None


def new_secret() -> str:
    """160 random bits in base32, as RFC 4226 recommends and authenticator apps expect."""
    return pyotp.random_base32()


def provisioning_uri(secret: str, email: str) -> str:
    """The ``otpauth://`` address an authenticator app reads from the QR code."""
    return pyotp.TOTP(secret, digits=DIGITS, interval=STEP_SECONDS).provisioning_uri(
        name=email, issuer_name=ISSUER
    )


def step_at(now: datetime) -> int:
    return int(now.timestamp()) // STEP_SECONDS


def is_totp_code(code: str) -> bool:
    """Six digits (spaces and hyphens aside): a TOTP code; anything else may be a recovery
    code."""
    return _TOTP_CODE.fullmatch(code.translate(_SEPARATORS)) is not None


def matching_step(secret: str, code: str, now: datetime, last_step: int | None) -> int | None:
    """The time step ``code`` is right for, near ``now`` and after ``last_step`` (a code of a
    step already used is a replay), or None."""
    code = code.translate(_SEPARATORS)
    otp = pyotp.TOTP(secret, digits=DIGITS, interval=STEP_SECONDS)
    current = step_at(now)
    for step in (current + offset for offset in VALID_STEPS):
        if last_step is not None and step <= last_step:
            continue
        if hmac.compare_digest(otp.generate_otp(step), code):
            return step
    return None


def new_recovery_codes() -> list[str]:
    """Ten codes as they are shown: ``xxxx-xxxx-xxxx-xxxx``."""
    codes = []
    for _ in range(RECOVERY_CODE_COUNT):
        raw = "".join(secrets.choice(_RECOVERY_ALPHABET) for _ in range(_RECOVERY_LENGTH))
        codes.append("-".join(raw[i : i + 4] for i in range(0, _RECOVERY_LENGTH, 4)))
    return codes


def recovery_digest(code: str) -> str:
    """The stored digest of a recovery code, however it was typed (case, hyphens, spaces,
    O for 0, I or L for 1)."""
    return token_digest(code.lower().translate(_SEPARATORS).translate(_LOOK_ALIKES))
