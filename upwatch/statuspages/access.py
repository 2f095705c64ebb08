"""Who may read a status page: its visibility (``public``, ``password``, ``members``) and its
optional address allowlist, decided once for every route of the page (JSON, HTML, feeds,
badges, the owner's CSS and script, subscriptions, the custom domain).

A visitor who may not read a page gets the answer of a missing page (404), which says
nothing of it; only a browser asking for a password page's HTML from an allowed address is
shown the password form, which names nothing of the page either. The password pass is a
cookie per page whose value is a keyed hash of the page and its password hash: nothing is
stored for it, and a new password (a new salt, so a new hash) voids every pass at once.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Literal

from fastapi import Depends, Response
from starlette.requests import Request

from upwatch.callers.apikeys import caller_of_key, is_api_key
from upwatch.callers.authentication import user_of_access_token
from upwatch.callers.repository import KeyDirectory
from upwatch.dependencies import RuntimeDep, client_address
from upwatch.kit.errors import NotFound, ProblemError, TooManyRequests, Unauthorized
from upwatch.projects.repository import ProjectRepository
from upwatch.runtime import Runtime

Visibility = Literal["public", "password", "members"]
VISIBILITIES: tuple[Visibility, ...] = ("public", "password", "members")
Verdict = Literal["show", "hidden", "password"]
# A pass outlives a browser session (a wall screen stays unlocked), not a password change.
PASS_SECONDS = 30 * 24 * 3600


@dataclass(frozen=True)
class Gate:
    """What a page's snapshot keeps of its access rules."""

    project_id: str = ""
    visibility: str = "public"  # a Visibility
    password_hash: str | None = None
    networks: tuple[str, ...] = ()

    @property
    def open(self) -> bool:
        """Anyone anywhere may read it: its answers may sit in shared caches."""
        return self.visibility == "public" and not self.networks


def in_networks(address: str, networks: Sequence[str]) -> bool:
    """``address`` (as the app determines the client's) is inside one of ``networks``; an
    address that is not an IP (a test client, a Unix socket) is inside none."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return any(ip in ipaddress.ip_network(n, strict=False) for n in networks)


def normal_network(text: str) -> str:
    """A CIDR as stored: host bits cleared (``10.1.2.3/8`` is ``10.0.0.0/8``), a bare
    address one host."""
    try:
        return str(ipaddress.ip_network(text.strip(), strict=False))
    except ValueError:
        raise ValueError(
            "not a network: write a CIDR such as 203.0.113.0/24 or 2001:db8::/32"
        ) from None


def verdict(gate: Gate, client: str, unlocked: bool, member: bool) -> Verdict:
    """The one rule: outside the allowlist nobody reads it (members neither: the list is
    the owner's wall around the page); inside, a public page is shown, a members page to
    members, a password page to members and to holders of its pass, and to others as the
    password form."""
    if gate.networks and not in_networks(client, gate.networks):
        return "hidden"
    if gate.visibility == "public" or member:
        return "show"
    if gate.visibility == "password":
        return "show" if unlocked else "password"
    return "hidden"


def cookie_name(page_id: str) -> str:
    return f"upwatch_page_{page_id}"


def pass_value(signing_key: str, page_id: str, password_hash: str) -> str:
    """The cookie value that opens a password page until its password changes."""
    message = f"status-page-pass:{page_id}:{password_hash}".encode()
    return hmac.new(signing_key.encode(), message, hashlib.sha256).hexdigest()


def holds_pass(signing_key: str, page_id: str, password_hash: str | None, cookie: str) -> bool:
    if password_hash is None or not cookie:
        return False
    # As bytes: a cookie with characters outside ASCII is a wrong pass, not a TypeError.
    expected = pass_value(signing_key, page_id, password_hash).encode()
    return hmac.compare_digest(expected, cookie.encode("utf-8", "surrogateescape"))


@dataclass
class Visitor:
    """A request to a page's route, as the gate reads it: its address, its pass cookies and
    its bearer token (a member's access token or an API key of the page's project)."""

    request: Request
    runtime: Runtime

    @property
    def address(self) -> str:
        # The address every throttle uses: uvicorn puts X-Forwarded-For there, only from the
        # proxies ``UPWATCH_FORWARDED_ALLOW_IPS`` trusts.
        return client_address(self.request)

    def unlocked(self, page_id: str, gate: Gate) -> bool:
        cookie = self.request.cookies.get(cookie_name(page_id), "")
        return holds_pass(self.runtime.settings.signing_key, page_id, gate.password_hash, cookie)

    async def member(self, gate: Gate) -> bool:
        """The bearer token's account may open the page's project (console rule: members,
        administrators, a key of the project). A bad token is simply no member."""
        header = self.request.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return False
        token = token.strip()
        async with self.runtime.db.readsession() as session:
            try:
                if is_api_key(token):
                    user, _key = await caller_of_key(
                        KeyDirectory(session), token, self.runtime.clock.now()
                    )
                else:
                    user = await user_of_access_token(session, self.runtime, token)
                # A member refused for want of a second factor is no member here.
                return await ProjectRepository(session).access(user, gate.project_id) is not None
            except ProblemError:
                return False

    async def verdict(self, page_id: str, gate: Gate) -> Verdict:
        if gate.open:
            return "show"
        unlocked = self.unlocked(page_id, gate)
        # The token is read only where it can change the answer (one query for it).
        outcome = verdict(gate, self.address, unlocked, member=False)
        if (
            outcome != "show"
            and verdict(gate, self.address, unlocked, member=True) == "show"
            and await self.member(gate)
        ):
            return "show"
        return outcome


def _visitor(request: Request, runtime: RuntimeDep) -> Visitor:
    return Visitor(request, runtime)


VisitorDep = Annotated[Visitor, Depends(_visitor)]


async def unlock(visitor: Visitor, page_id: str, gate: Gate, password: str) -> str:
    """The pass cookie's value for a right password of a password page; 404 for a page that
    takes none (or an address outside its allowlist), 401 for a wrong one, 429 past
    ``UPWATCH_LOGIN_FAILURES_ALLOWED`` wrong ones per client address and
    ``UPWATCH_LOGIN_WINDOW_SECONDS``, as logins are throttled."""
    if gate.visibility != "password" or gate.password_hash is None:
        raise NotFound("no such status page")
    if gate.networks and not in_networks(visitor.address, gate.networks):
        raise NotFound("no such status page")
    runtime = visitor.runtime
    window = runtime.throttles.page_password
    # Counted before the slow verification: concurrent guesses cannot share a free slot.
    wait = await window.take(visitor.address)
    if wait is not None:
        raise TooManyRequests("too many wrong passwords; try again later", retry_after=wait)
    if not await runtime.passwords.verify(gate.password_hash, password):
        raise Unauthorized("the password is wrong")
    await window.release(visitor.address)
    return pass_value(runtime.settings.signing_key, page_id, gate.password_hash)


def give_pass(request: Request, response: Response, page_id: str, value: str) -> None:
    """The pass as a cookie of this host: sent to every route of the page (its JSON, HTML,
    feeds and badges, and `/` of its custom domain), never to a script."""
    response.set_cookie(
        cookie_name(page_id),
        value,
        max_age=PASS_SECONDS,
        path="/",
        httponly=True,
        samesite="lax",
        secure=request.url.scheme == "https",
    )
