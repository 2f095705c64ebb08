"""Passkeys (WebAuthn): registering one to an account, signing in with one (instead of the
password, or as the second factor after it), listing and removing them (docs/passkeys.md).

The relying party is the host of ``UPWATCH_PUBLIC_URL``: a passkey is bound to that host, so
the console must be opened there. Each ceremony's challenge travels in a short-lived cookie
signed with the service key (``Ceremonies``), like the pending sign-in, not in a table; it is
made single-use by the credential itself: an assertion is taken only if its challenge was
issued after the credential's last use, in one conditional update (``PasskeyRepository.use``).
"""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
import ipaddress
import json
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit

from upwatch.accounts.repository import PasskeyRepository, UserRepository
from upwatch.audit import kinds
from upwatch.audit.service import record
from upwatch.kit.errors import (
    Conflict,
    NotFound,
    TooManyRequests,
    Unauthorized,
    ValidationFailed,
)
from upwatch.models import PasskeyCredential, User
from upwatch.runtime import DomainService, uses

# webauthn, with the OpenSSL and ASN.1 libraries it verifies attestations with, weighs 7 MB in
# every process that serves the API; it is imported by the passkey ceremonies that use it.
if TYPE_CHECKING:
    from webauthn.helpers.structs import PublicKeyCredentialDescriptor

RP_NAME: Final = "Upwatch"
CEREMONY_COOKIE: Final = "upwatch_passkey"
CEREMONY_LIFETIME: Final = timedelta(minutes=5)
# Enough for every device a person owns; a bound, so one account cannot grow without end.
MAX_PASSKEYS: Final = 20
# The browser's answer, JSON: a credential id of at most 1023 bytes and an attestation with
# its certificates fit well within this.
MAX_CREDENTIAL_CHARS: Final = 64_000

REGISTER: Final = "register"
SIGN_IN: Final = "sign_in"
SECOND_FACTOR: Final = "second_factor"


class PasskeySignInFailed(Unauthorized):
    """A passkey that does not sign in. The failure's audit event is kept though the request
    is refused."""

    keep_changes = True


class PasskeysUnavailable(Conflict):
    """The service's public address is no domain name (an IP address cannot be a relying
    party id), so no browser makes a passkey for it."""


@dataclass(frozen=True, slots=True)
class RelyingParty:
    id: str
    origin: str

    @classmethod
    def of(cls, public_url: str) -> RelyingParty:
        parts = urlsplit(public_url)
        host = (parts.hostname or "").lower()
        default = {"http": 80, "https": 443}.get(parts.scheme)
        port = f":{parts.port}" if parts.port and parts.port != default else ""
        shown = f"[{host}]" if ":" in host else host
        return cls(id=host, origin=f"{parts.scheme}://{shown}{port}")

    @property
    def usable(self) -> bool:
        """Only a domain name can be a relying party id (WebAuthn §5.1.3's valid domain)."""
        if not self.id:
            return False
        try:
            ipaddress.ip_address(self.id)
        except ValueError:
            return True
        return False


def _b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _unb64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@dataclass(frozen=True, slots=True)
class Ceremony:
    purpose: str
    # The account it is for ("" for a sign-in that does not know it yet).
    user_id: str
    challenge: bytes
    issued_at: datetime


class Ceremonies:
    """Issues and reads ceremonies (the value of ``CEREMONY_COOKIE``), signed with a key of
    their own derived from the service key."""

    def __init__(self, key: str) -> None:
        self._key = hashlib.sha256(b"upwatch passkey ceremony\0" + key.encode()).digest()

    def _mac(self, payload: str) -> str:
        return hmac.new(self._key, payload.encode(), hashlib.sha256).hexdigest()

    def issue(self, purpose: str, user_id: str, challenge: bytes, now: datetime) -> str:
        issued = int(now.timestamp() * 1_000_000)
        payload = f"{purpose}.{user_id}.{_b64url(challenge)}.{issued}"
        return f"{payload}.{self._mac(payload)}"

    def read(self, value: str | None, purpose: str, now: datetime) -> Ceremony | None:
        """The ceremony ``value`` holds, or None if forged, malformed, old or for another
        purpose."""
        if not value:
            return None
        payload, _, mac = value.rpartition(".")
        # As bytes: compare_digest raises on a str with characters beyond ASCII.
        if not hmac.compare_digest(mac.encode(), self._mac(payload).encode()):
            return None
        parts = payload.split(".")
        if len(parts) != 4 or parts[0] != purpose or not parts[3].isdigit():
            return None
        issued_at = datetime.fromtimestamp(int(parts[3]) / 1_000_000, UTC)
        if not now - CEREMONY_LIFETIME < issued_at <= now + timedelta(seconds=1):
            return None
        return Ceremony(parts[0], parts[1], _unb64url(parts[2]), issued_at)


def _parsed(credential: str) -> dict[str, Any]:
    """The browser's answer as a JSON object (refused as the field ``credential``)."""
    if len(credential) > MAX_CREDENTIAL_CHARS:
        raise ValidationFailed.on("credential", "the passkey's answer is too long")
    try:
        value = json.loads(credential)
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise ValidationFailed.on("credential", "not a passkey's answer (a JSON object)")
    return value


class PasskeyService(DomainService):
    passkeys = uses(PasskeyRepository)
    users = uses(UserRepository)

    @property
    def party(self) -> RelyingParty:
        return RelyingParty.of(self.runtime.settings.public_url)

    @property
    def ceremonies(self) -> Ceremonies:
        return Ceremonies(self.runtime.settings.signing_key)

    def _usable_party(self) -> RelyingParty:
        party = self.party
        if not party.usable:
            raise PasskeysUnavailable(
                "passkeys need the service at a domain name: UPWATCH_PUBLIC_URL names an IP "
                "address (docs/passkeys.md)"
            )
        return party

    # ---- the person's own passkeys ----

    async def listed(self, user: User) -> Sequence[PasskeyCredential]:
        return await self.passkeys.of_user(user.id)

    async def remove(self, user: User, passkey_id: str) -> PasskeyCredential:
        """Remove one of the caller's passkeys (another person's is not found: 404)."""
        found = await self.passkeys.get_of_user(user.id, passkey_id)
        if found is None:
            raise NotFound("no such passkey")
        await self.passkeys.delete(found)
        await record(
            self.session,
            kinds.PASSKEY_REMOVED,
            self.runtime.clock.now(),
            actor=user,
            target_type="passkey",
            target_id=found.id,
            target_label=found.name,
        )
        return found

    # ---- registration ----

    async def registration_options(self, user: User) -> tuple[str, str]:
        """The options for ``navigator.credentials.create`` (JSON) and the ceremony cookie."""
        from webauthn import generate_registration_options, options_to_json
        from webauthn.helpers.structs import (
            AuthenticatorSelectionCriteria,
            ResidentKeyRequirement,
            UserVerificationRequirement,
        )

        party = self._usable_party()
        mine = await self.passkeys.of_user(user.id)
        if len(mine) >= MAX_PASSKEYS:
            raise Conflict(f"an account holds at most {MAX_PASSKEYS} passkeys; remove one first")
        challenge = secrets.token_bytes(32)
        options = generate_registration_options(
            rp_id=party.id,
            rp_name=RP_NAME,
            # The user handle is the account id: opaque, stable, and how a discoverable
            # credential's assertion names its account.
            user_id=user.id.encode(),
            user_name=user.email,
            user_display_name=" ".join(filter(None, (user.first_name, user.last_name)))
            or user.email,
            challenge=challenge,
            exclude_credentials=[_descriptor(p) for p in mine],
            authenticator_selection=AuthenticatorSelectionCriteria(
                resident_key=ResidentKeyRequirement.PREFERRED,
                user_verification=UserVerificationRequirement.PREFERRED,
            ),
        )
        cookie = self.ceremonies.issue(REGISTER, user.id, challenge, self.runtime.clock.now())
        return options_to_json(options), cookie

    async def register(
        self, user: User, ceremony_cookie: str | None, name: str, credential: str
    ) -> PasskeyCredential:
        """Verify the browser's answer to the registration options and keep the passkey."""
        from webauthn import verify_registration_response

        party = self._usable_party()
        now = self.runtime.clock.now()
        name = name.strip()
        if not name or len(name) > 100 or not name.isprintable():
            raise ValidationFailed.on("name", "1 to 100 characters on one line")
        answer = _parsed(credential)
        ceremony = self.ceremonies.read(ceremony_cookie, REGISTER, now)
        if ceremony is None or ceremony.user_id != user.id:
            raise ValidationFailed.on(
                "credential", "this passkey request is too old or not yours: add it again"
            )
        try:
            verified = verify_registration_response(
                credential=answer,
                expected_challenge=ceremony.challenge,
                expected_rp_id=party.id,
                expected_origin=party.origin,
            )
        # The library parses what any client sends; whatever it raises on a malformed or
        # forged answer, the answer is refused, never a fault of the service.
        except Exception:
            raise ValidationFailed.on(
                "credential", "the passkey's answer could not be verified"
            ) from None
        credential_id = _b64url(verified.credential_id)
        if await self.passkeys.by_credential_id(credential_id) is not None:
            raise Conflict("this passkey is registered already")
        if await self.passkeys.count_of_user(user.id) >= MAX_PASSKEYS:
            raise Conflict(f"an account holds at most {MAX_PASSKEYS} passkeys; remove one first")
        response = answer.get("response")
        sent = response.get("transports") if isinstance(response, dict) else None
        known = _known_transports()
        transports = [t for t in sent if t in known] if isinstance(sent, list) else []
        stored = await self.passkeys.add(
            PasskeyCredential(
                user_id=user.id,
                credential_id=credential_id,
                public_key=verified.credential_public_key,
                sign_count=verified.sign_count,
                transports=sorted(set(transports)),
                name=name,
                created_at=now,
                last_used_at=None,
            )
        )
        await record(
            self.session,
            kinds.PASSKEY_ADDED,
            now,
            actor=user,
            target_type="passkey",
            target_id=stored.id,
            target_label=stored.name,
        )
        return stored

    # ---- signing in ----

    async def sign_in_options(self, user: User | None) -> tuple[str, str]:
        """Options for ``navigator.credentials.get`` and the ceremony cookie: for any
        discoverable passkey (``user`` None, signing in instead of the password), or for
        ``user``'s own passkeys (the second factor of a pending sign-in)."""
        from webauthn import generate_authentication_options, options_to_json
        from webauthn.helpers.structs import UserVerificationRequirement

        party = self._usable_party()
        challenge = secrets.token_bytes(32)
        allowed = [_descriptor(p) for p in await self.passkeys.of_user(user.id)] if user else []
        options = generate_authentication_options(
            rp_id=party.id,
            challenge=challenge,
            allow_credentials=allowed,
            user_verification=UserVerificationRequirement.PREFERRED,
        )
        purpose, user_id = (SECOND_FACTOR, user.id) if user else (SIGN_IN, "")
        cookie = self.ceremonies.issue(purpose, user_id, challenge, self.runtime.clock.now())
        return options_to_json(options), cookie

    async def sign_in(
        self,
        ceremony_cookie: str | None,
        credential: str,
        client: str,
        pending: User | None = None,
        first_factor: str = "password",
    ) -> User:
        """The account a passkey's assertion signs in: any account (no ``pending``), or only
        ``pending`` (its ``first_factor`` was right; this is its second factor). A failure is
        recorded and refused (401); failures count toward the client address's sign-in
        throttle like wrong passwords (429 past it)."""
        throttle = self.runtime.throttles.login_address
        wait = await throttle.take(client)
        if wait is not None:
            raise TooManyRequests("too many failed sign-ins; try again later", retry_after=wait)
        via = f"{first_factor}+passkey" if pending else "passkey"
        user = await self._signed_in(ceremony_cookie, credential, pending, via)
        await throttle.release(client)
        return user

    async def _signed_in(
        self, ceremony_cookie: str | None, credential: str, pending: User | None, via: str
    ) -> User:
        now = self.runtime.clock.now()
        purpose = SECOND_FACTOR if pending else SIGN_IN
        try:
            answer = _parsed(credential)
        except ValidationFailed:
            await self._failed(pending, via, "malformed")
            raise PasskeySignInFailed("the passkey's answer is malformed") from None
        ceremony = self.ceremonies.read(ceremony_cookie, purpose, now)
        if ceremony is None or (pending is not None and ceremony.user_id != pending.id):
            await self._failed(pending, via, "no challenge")
            raise PasskeySignInFailed("this sign-in request is too old: try again")
        raw_id = answer.get("id")
        found = (
            await self.passkeys.by_credential_id(raw_id)
            if isinstance(raw_id, str) and 0 < len(raw_id) <= 1400
            else None
        )
        if found is None or (pending is not None and found.user_id != pending.id):
            await self._failed(pending, via, "unknown passkey")
            raise PasskeySignInFailed("this passkey is not registered to an account here")
        user = await self.users.get(found.user_id)
        if user is None or not _handle_matches(answer, found.user_id):
            await self._failed(pending, via, "unknown passkey")
            raise PasskeySignInFailed("this passkey is not registered to an account here")
        from webauthn import verify_authentication_response

        party = self._usable_party()
        try:
            verified = verify_authentication_response(
                credential=answer,
                expected_challenge=ceremony.challenge,
                expected_rp_id=party.id,
                expected_origin=party.origin,
                credential_public_key=found.public_key,
                credential_current_sign_count=found.sign_count,
                # Standing in for the password, the passkey must have verified its holder.
                require_user_verification=pending is None,
            )
        # As in ``register``: any failure to parse or verify is a refused sign-in.
        except Exception:
            await self._failed(user, via, "not verified")
            raise PasskeySignInFailed("the passkey's answer could not be verified") from None
        # Counted and single-use in one statement: a counter that did not grow (a cloned
        # authenticator), or a challenge issued before the passkey's last use (a replay),
        # changes no row.
        if not await self.passkeys.use(
            found.id, found.sign_count, verified.new_sign_count, ceremony.issued_at, now
        ):
            await self._failed(user, via, "replayed or cloned")
            raise PasskeySignInFailed("this passkey's answer was used already")
        await record(
            self.session,
            kinds.SIGN_IN_SUCCEEDED,
            now,
            actor=user,
            via=via,
            target_type="passkey",
            target_id=found.id,
            target_label=found.name,
        )
        return user

    async def _failed(self, user: User | None, via: str, reason: str) -> None:
        await record(
            self.session,
            kinds.SIGN_IN_FAILED,
            self.runtime.clock.now(),
            actor=None,
            account_id=user.id if user else None,
            via=via,
            details={"reason": reason},
        )


@functools.cache
def _known_transports() -> frozenset[str]:
    from webauthn.helpers.structs import AuthenticatorTransport

    return frozenset(t.value for t in AuthenticatorTransport)


def _descriptor(passkey: PasskeyCredential) -> PublicKeyCredentialDescriptor:
    from webauthn.helpers.structs import AuthenticatorTransport, PublicKeyCredentialDescriptor

    known = _known_transports()
    transports = [AuthenticatorTransport(t) for t in passkey.transports if t in known]
    return PublicKeyCredentialDescriptor(
        id=_unb64url(passkey.credential_id), transports=transports or None
    )


def _handle_matches(answer: dict[str, Any], user_id: str) -> bool:
    """A discoverable passkey names its account (the user handle); when it does, it must be
    the account the credential is registered to."""
    response = answer.get("response")
    handle = response.get("userHandle") if isinstance(response, dict) else None
    if not handle:
        return True
    try:
        return isinstance(handle, str) and _unb64url(handle) == user_id.encode()
    except ValueError:
        return False
