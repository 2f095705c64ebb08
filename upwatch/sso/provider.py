"""The OpenID provider, as this service's client at it: discovery, the authorization request,
the token exchange, the ID token's checks, and userinfo.

The issuer is set by the operator (``UPWATCH_OIDC_ISSUER``), never by a user, so it is
reached with a plain HTTP client rather than the guarded one that refuses private addresses:
an identity provider on the operator's own network is the usual case. Nothing a provider
answers is ever repeated to the browser or the log: a refusal says what was wrong in words of
its own, never the code, a token or the secret.
"""

from __future__ import annotations

import hmac
import json
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import quote, urlencode

from upwatch.config import Settings
from upwatch.kit.languages import N_

# httpx (with the rich and pygments of its command line), authlib and joserfc weigh 10 MB in
# every process that serves the console; they are imported by the sign-ins that use them.
if TYPE_CHECKING:
    import httpx
    from joserfc.jwk import KeySet

log = logging.getLogger(__name__)

# How long discovery and keys are used before they are read again. Keys are also read again
# at once when an ID token names a key not among them (the provider rotated its keys).
DISCOVERY_SECONDS: Final = 3600.0
TIMEOUT_SECONDS: Final = 10.0
# Most ID tokens are signed with RS256 (the default of OpenID Connect); "none" and the HMAC
# algorithms are never accepted.
ALGORITHMS: Final = (
    "RS256",
    "RS384",
    "RS512",
    "PS256",
    "PS384",
    "PS512",
    "ES256",
    "ES384",
    "EdDSA",
)
# The provider's clock and this service's may differ by this much.
LEEWAY_SECONDS: Final = 60
MAX_ANSWER_BYTES: Final = 1_000_000


class SignInRefused(Exception):
    """A sign-in the provider's answer does not allow; ``reason`` is a short word for the
    audit log, the message is what the visitor reads."""

    status = 400

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


class ProviderUnavailable(SignInRefused):
    """The provider could not be reached or answered nonsense: not the visitor's fault."""

    status = 502


@dataclass(frozen=True, slots=True)
class Discovery:
    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    jwks_uri: str
    userinfo_endpoint: str
    token_auth_methods: tuple[str, ...]


@dataclass
class _Known:
    discovery: Discovery
    keys: KeySet
    read_at: float


# One entry per issuer for the process: the provider's metadata rarely changes.
_known: dict[str, _Known] = {}


def redirect_uri(settings: Settings) -> str:
    return f"{settings.public_url}/app/sso/callback"


def code_challenge(verifier: str) -> str:
    from authlib.oauth2.rfc7636 import create_s256_code_challenge

    challenge: str = create_s256_code_challenge(verifier)
    return challenge


class OpenIdProvider:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.issuer = settings.oidc_issuer

    async def _get_json(self, client: httpx.AsyncClient, url: str, what: str) -> dict[str, Any]:
        import httpx

        try:
            response = await client.get(url, headers={"Accept": "application/json"})
        except httpx.HTTPError as exc:
            log.warning("single sign-on: the provider's %s is unreachable: %s", what, type(exc))
            raise ProviderUnavailable(
                N_("The sign-in provider cannot be reached; try again later."), "unreachable"
            ) from None
        return _json_of(response, what)

    async def _read(self, client: httpx.AsyncClient) -> _Known:
        meta = await self._get_json(
            client, f"{self.issuer}/.well-known/openid-configuration", "discovery document"
        )
        try:
            discovery = Discovery(
                issuer=str(meta["issuer"]),
                authorization_endpoint=str(meta["authorization_endpoint"]),
                token_endpoint=str(meta["token_endpoint"]),
                jwks_uri=str(meta["jwks_uri"]),
                userinfo_endpoint=str(meta.get("userinfo_endpoint") or ""),
                token_auth_methods=tuple(
                    meta.get("token_endpoint_auth_methods_supported") or ("client_secret_basic",)
                ),
            )
        except (KeyError, TypeError):
            discovery = None
        # OpenID Connect Discovery §4.3: the document names the issuer it was fetched for.
        if discovery is None or discovery.issuer.rstrip("/") != self.issuer:
            log.warning("single sign-on: the discovery document does not describe the issuer")
            raise ProviderUnavailable(
                N_("The sign-in provider is misconfigured; tell the operator."), "discovery"
            )
        keys = await self._keys(client, discovery)
        known = _Known(discovery, keys, time.monotonic())
        _known[self.issuer] = known
        return known

    async def _keys(self, client: httpx.AsyncClient, discovery: Discovery) -> KeySet:
        from joserfc.errors import JoseError
        from joserfc.jwk import KeySet

        document = await self._get_json(client, discovery.jwks_uri, "key set")
        try:
            return KeySet.import_key_set(document)  # type: ignore[arg-type]
        except (JoseError, ValueError, KeyError, TypeError):
            log.warning("single sign-on: the provider's key set cannot be read")
            raise ProviderUnavailable(
                N_("The sign-in provider is misconfigured; tell the operator."), "keys"
            ) from None

    async def known(self, client: httpx.AsyncClient) -> _Known:
        cached = _known.get(self.issuer)
        if cached is not None and time.monotonic() - cached.read_at < DISCOVERY_SECONDS:
            return cached
        return await self._read(client)

    async def authorization_url(
        self, client: httpx.AsyncClient, state: str, nonce: str, verifier: str
    ) -> str:
        known = await self.known(client)
        query = urlencode(
            {
                "response_type": "code",
                "client_id": self.settings.oidc_client_id,
                "redirect_uri": redirect_uri(self.settings),
                "scope": self.settings.oidc_scopes,
                "state": state,
                "nonce": nonce,
                "code_challenge": code_challenge(verifier),
                "code_challenge_method": "S256",
            }
        )
        endpoint = known.discovery.authorization_endpoint
        return f"{endpoint}{'&' if '?' in endpoint else '?'}{query}"

    async def claims(
        self,
        client: httpx.AsyncClient,
        code: str,
        verifier: str,
        nonce: str,
        now: int,
        iss: str | None = None,
    ) -> dict[str, Any]:
        """The signed-in person's claims for ``code``: the ID token's, once its signature,
        issuer, audience, expiry and nonce hold, completed from userinfo where the provider
        keeps e-mail and groups out of the ID token (as the code flow lets it)."""
        known = await self.known(client)
        # RFC 9207: a provider that names itself in the redirect names this issuer, or the
        # code came from another provider (a mix-up attack) and is not sent on.
        if iss is not None and iss != known.discovery.issuer:
            raise SignInRefused(
                N_("This sign-in came from another provider; start again."), "issuer"
            )
        answer = await self._exchange(client, known.discovery, code, verifier)
        id_token = answer.get("id_token")
        if not isinstance(id_token, str):
            raise ProviderUnavailable(N_("The sign-in provider sent no identity."), "no_id_token")
        claims = await self._verified(client, known, id_token, nonce, now)
        access_token = answer.get("access_token")
        wanted = {"email", "email_verified"}
        if self.settings.oidc_admin_claim:
            wanted.add(self.settings.oidc_admin_claim.partition("=")[0])
        if (
            not wanted <= claims.keys()
            and known.discovery.userinfo_endpoint
            and isinstance(access_token, str)
        ):
            info = await self._userinfo(client, known.discovery, access_token)
            # OpenID Connect Core §5.3.2: userinfo about another subject is not used.
            if info.get("sub") == claims["sub"]:
                claims = {**info, **claims}
        return claims

    async def _exchange(
        self, client: httpx.AsyncClient, discovery: Discovery, code: str, verifier: str
    ) -> dict[str, Any]:
        import httpx

        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": redirect_uri(self.settings),
            "code_verifier": verifier,
        }
        auth: httpx.Auth | None = None
        client_id, secret = self.settings.oidc_client_id, self.settings.oidc_client_secret
        if not secret:
            form["client_id"] = client_id  # a public client: PKCE is its only proof
        elif (
            "client_secret_basic" not in discovery.token_auth_methods
            and "client_secret_post" in discovery.token_auth_methods
        ):
            form |= {"client_id": client_id, "client_secret": secret}
        else:
            # RFC 6749 §2.3.1: both are form-encoded before they are joined.
            auth = httpx.BasicAuth(quote(client_id, safe=""), quote(secret, safe=""))
        try:
            response = await client.post(
                discovery.token_endpoint,
                data=form,
                auth=auth or httpx.USE_CLIENT_DEFAULT,
                headers={"Accept": "application/json"},
            )
        except httpx.HTTPError as exc:
            log.warning("single sign-on: the token endpoint is unreachable: %s", type(exc))
            raise ProviderUnavailable(
                N_("The sign-in provider cannot be reached; try again later."), "unreachable"
            ) from None
        if response.status_code == 400:
            # invalid_grant and its kin: a code used twice, expired, or not this flow's.
            log.info("single sign-on: the provider refused the code (%s)", _error_of(response))
            raise SignInRefused(
                N_("The sign-in could not be completed; start again."), "code_refused"
            )
        return _json_of(response, "token answer")

    async def _verified(
        self, client: httpx.AsyncClient, known: _Known, id_token: str, nonce: str, now: int
    ) -> dict[str, Any]:
        from joserfc import jwt
        from joserfc.errors import InvalidKeyIdError, JoseError

        try:
            try:
                token = jwt.decode(id_token, known.keys, algorithms=list(ALGORITHMS))
            except InvalidKeyIdError:
                known.keys = await self._keys(client, known.discovery)
                token = jwt.decode(id_token, known.keys, algorithms=list(ALGORITHMS))
            claims = dict(token.claims)
            jwt.JWTClaimsRegistry(
                now=now,
                leeway=LEEWAY_SECONDS,
                iss={"essential": True, "value": known.discovery.issuer},
                sub={"essential": True},
                exp={"essential": True},
                iat={"essential": True},
            ).validate(claims)
        except (JoseError, ValueError, TypeError) as exc:
            log.info("single sign-on: an ID token was refused (%s)", type(exc).__name__)
            raise SignInRefused(
                N_("The sign-in provider's answer could not be verified; start again."), "id_token"
            ) from None
        audience = claims.get("aud")
        audiences = [audience] if isinstance(audience, str) else audience
        client_id = self.settings.oidc_client_id
        if not isinstance(audiences, list) or client_id not in audiences:
            raise SignInRefused(
                N_("The sign-in provider's answer is for another service."), "audience"
            )
        # OpenID Connect Core §3.1.3.7: with several audiences, azp names this client.
        if len(audiences) > 1 and claims.get("azp") != client_id:
            raise SignInRefused(
                N_("The sign-in provider's answer is for another service."), "audience"
            )
        if not isinstance(claims.get("sub"), str) or not claims["sub"]:
            raise SignInRefused(N_("The sign-in provider named nobody."), "subject")
        if not _same(claims.get("nonce"), nonce):
            raise SignInRefused(
                N_("The sign-in provider's answer is not for this sign-in; start again."), "nonce"
            )
        return claims

    async def _userinfo(
        self, client: httpx.AsyncClient, discovery: Discovery, access_token: str
    ) -> dict[str, Any]:
        import httpx

        try:
            response = await client.get(
                discovery.userinfo_endpoint,
                headers={"Authorization": f"Bearer {access_token}", "Accept": "application/json"},
            )
        except httpx.HTTPError as exc:
            log.warning("single sign-on: the userinfo endpoint is unreachable: %s", type(exc))
            raise ProviderUnavailable(
                N_("The sign-in provider cannot be reached; try again later."), "unreachable"
            ) from None
        return _json_of(response, "userinfo answer")


def http_client() -> httpx.AsyncClient:
    import httpx

    return httpx.AsyncClient(timeout=TIMEOUT_SECONDS, follow_redirects=False, trust_env=False)


def _same(given: object, expected: str) -> bool:
    return isinstance(given, str) and hmac.compare_digest(given.encode(), expected.encode())


def _error_of(response: httpx.Response) -> str:
    """The OAuth error code alone (e.g. invalid_grant): never its description, which a
    provider may fill with what it was sent."""
    try:
        error = response.json().get("error")
    except (ValueError, AttributeError):
        return "no error code"
    return error[:40] if isinstance(error, str) and error.isascii() else "no error code"


def _json_of(response: httpx.Response, what: str) -> dict[str, Any]:
    if response.status_code != 200 or len(response.content) > MAX_ANSWER_BYTES:
        log.warning("single sign-on: the provider's %s answered %s", what, response.status_code)
        raise ProviderUnavailable(
            N_("The sign-in provider answered with an error; try again later."), "provider_error"
        )
    try:
        document = json.loads(response.content)
    except ValueError:
        document = None
    if not isinstance(document, dict):
        log.warning("single sign-on: the provider's %s is not a JSON object", what)
        raise ProviderUnavailable(
            N_("The sign-in provider answered with an error; try again later."), "provider_error"
        )
    return document
