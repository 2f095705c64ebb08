"""Apprise: the alert sent to one or more Apprise URLs (``discord://…``, ``ntfys://…``,
``json://…``), which reach a hundred services between them. Each URL holds its service's
credentials, so each is a secret: only its scheme is ever shown.

Apprise opens its own connections (with ``requests``, not the guarded aiohttp session), so the
address guard keeps its promise in two ways:

* only the schemes in ``SCHEMES`` are accepted: services Apprise reaches over HTTP(S) through
  ``requests``. Those that open sockets, processes or devices of their own (mail, XMPP, MQTT,
  IRC, syslog, desktop notifications, …) could reach what the guard forbids, and are refused;
* while Apprise sends, every connection ``urllib3`` opens in that thread resolves its host
  through the guard, is refused when any address is internal, and goes to the addresses the
  guard approved (no second lookup for DNS rebinding to exploit), redirects and proxies too.

On save, a URL whose host is the user's choice (a self-hosted service) has that host checked
like a webhook URL, so an internal address is refused at once rather than at the first alert.

Apprise is imported on the first use: it loads its plugins then, which a process that never
sends through it does not pay for.
"""

from __future__ import annotations

import asyncio
import logging
import re
import threading
import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, Final

from pydantic import AfterValidator, Field
from yarl import URL

from upwatch.kit.inputs import Input, worded
from upwatch.kit.languages import N_
from upwatch.kit.net import NetworkGuard, TargetRefused
from upwatch.notifications.channels.base import (
    MASK,
    Channel,
    DeliveryKit,
    FormField,
    Places,
    TransportError,
    retryable_status,
    scrub,
)
from upwatch.notifications.events import AlertEvent, EventKind

if TYPE_CHECKING:
    from apprise import NotifyBase

# The URL beginnings (schemes) Upwatch lets Apprise use: services it reaches over HTTP(S)
# with ``requests`` (tests/notifications/test_apprise_channel.py reads each plugin to check
# it still does). True marks a service on a host of the user's own, checked when saved.
SCHEMES: Final[Mapping[str, bool]] = {
    # Generic HTTP receivers and self-hosted services.
    **dict.fromkeys(("json://", "jsons://", "form://", "forms://", "xml://", "xmls://"), True),
    **dict.fromkeys(("apprise://", "apprises://"), True),
    **dict.fromkeys(
        ("gotify://", "gotifys://", "mmost://", "mmosts://", "rocket://", "rockets://"), True
    ),
    **dict.fromkeys(("nctalk://", "nctalks://", "ncloud://", "nclouds://"), True),
    **dict.fromkeys(
        ("hassio://", "hassios://", "signal://", "signals://", "bark://", "barks://"), True
    ),
    # ntfy and Matrix name either a host of the user's or the public service's: the guard
    # checks them when sending.
    **dict.fromkeys(("ntfy://", "ntfys://", "matrix://", "matrixs://"), False),
    # Hosted services at fixed addresses.
    **dict.fromkeys(
        (
            "discord://",
            "slack://",
            "workflow://",
            "workflows://",
            "tgram://",
            "pover://",
            "pbul://",
            "gchat://",
            "opsgenie://",
            "pagerduty://",
            "pagertree://",
            "splunk://",
            "victorops://",
            "signl4://",
            "ilert://",
            "squadcast://",
            "zulip://",
            "webex://",
            "wxteams://",
            "flock://",
            "ryver://",
            "line://",
            "prowl://",
            "join://",
            "psafer://",
            "psafers://",
            "spush://",
            "pushed://",
            "pushme://",
            "onesignal://",
            "ifttt://",
            "dingtalk://",
            "feishu://",
            "lark://",
            "wecombot://",
            "schan://",
            "twilio://",
            "mailgun://",
            "sendgrid://",
            "sparkpost://",
            "threema://",
            "revolt://",
            "notifiarr://",
            "betterstack://",
        ),
        False,
    ),
}
MAX_URLS: Final = 10
# A scheme, then anything without spaces or control characters; Apprise reads the rest.
URL_PATTERN: Final = worded(
    r"^[A-Za-z0-9]+://[^\u0000-\u0020\u007f-\u009f]*$",
    "an Apprise URL (scheme://…) without spaces or control characters",
)
# How Apprise's plugins log a refused request: "… error=503."
_STATUS_IN_LOG: Final = re.compile(r"error=(\d{3})\b")


def scheme_of(url: str) -> str:
    """``json://`` of ``json://host/path``: the key of ``SCHEMES``."""
    return url.split("://", 1)[0].lower() + "://"


def mask_url(url: str) -> str:
    """An Apprise URL as responses show it: its scheme only (tokens sit in its host too)."""
    return f"{scheme_of(url)}{MASK}" if "://" in url else MASK


_load_lock = threading.Lock()
_module: Any = None  # apprise, once its plugins are loaded


def _loaded() -> Any:
    """The ``apprise`` module with its plugins loaded, once per process.

    Some plugins import modules Python deprecates (``imghdr``); their warnings are Apprise's
    business, not the operator's, so they are silenced while the plugins load.
    """
    global _module
    with _load_lock:
        if _module is None:
            import apprise
            from apprise.manager_plugins import NotificationManager

            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                NotificationManager().schemas()  # type: ignore[no-untyped-call]
            _module = apprise
        return _module


def instantiate(url: str) -> NotifyBase | None:
    """The Apprise plugin ``url`` names, or None when Apprise cannot read it."""
    apprise = _loaded()
    asset = apprise.AppriseAsset(app_id="Upwatch", app_desc="Upwatch alerts")
    plugin: NotifyBase | None = apprise.Apprise.instantiate(
        url, asset=asset, suppress_exceptions=True
    )
    return plugin


def _readable(url: str) -> str:
    """Refuse (``ValueError``) a URL Upwatch does not let Apprise use; the messages name the
    scheme only, since the rest is a credential."""
    scheme = scheme_of(url)
    if MASK in url:
        # A masked URL is kept only when sent back in its place in an update.
        raise ValueError(f"this {scheme} URL is masked: give the URL itself")
    if scheme not in SCHEMES:
        raise ValueError(
            f"{scheme} is not one of the Apprise services Upwatch sends to "
            "(docs/notifications-apprise.md lists them)"
        )
    if instantiate(url) is None:
        raise ValueError(f"Apprise cannot read this {scheme} URL")
    return url


AppriseUrl = Annotated[
    str, Field(min_length=4, max_length=2048, pattern=URL_PATTERN), AfterValidator(_readable)
]


class AppriseConfig(Input):
    """Apprise: the alert sent to each URL; HTTP services only (docs/notifications-apprise.md)."""

    urls: list[AppriseUrl] = Field(
        min_length=1,
        max_length=MAX_URLS,
        description="Apprise URLs (https://github.com/caronc/apprise/wiki), each a secret "
        "shown as its scheme only; each gets every alert.",
    )


# --- The guard on Apprise's connections ---------------------------------------------------

_GUARD: ContextVar[NetworkGuard | None] = ContextVar("upwatch_apprise_guard", default=None)
_REFUSALS: ContextVar[list[str] | None] = ContextVar("upwatch_apprise_refusals", default=None)
_install_lock = threading.Lock()
_installed = False


class _Refused(OSError):
    """An OSError, so that urllib3 and the plugin take it for a failed connection."""


def _install_connection_guard() -> None:
    """Route urllib3's connections through the guard in threads that set ``_GUARD``; other
    threads' connections are left as they were."""
    global _installed
    with _install_lock:
        if _installed:
            return
        from urllib3.util import connection

        unguarded = connection.create_connection

        def guarded(address: tuple[str, int], *args: Any, **kwargs: Any) -> Any:
            guard = _GUARD.get()
            if guard is None:
                return unguarded(address, *args, **kwargs)
            host, port = address
            try:
                # The guard's own rules and lookup (this thread runs no event loop).
                addresses = asyncio.run(guard.resolve(host, port))
            except TargetRefused as exc:
                refusals = _REFUSALS.get()
                if refusals is not None:
                    refusals.append(str(exc))
                raise _Refused(str(exc)) from None
            failure: OSError | None = None
            for approved in addresses:
                try:
                    return unguarded((approved, port), *args, **kwargs)
                except OSError as exc:
                    failure = exc
            assert failure is not None  # the guard returns at least one address
            raise failure

        connection.create_connection = guarded
        _installed = True


@dataclass
class _Outcome:
    """What one URL's send left behind: the guard's refusals and the statuses logged."""

    refusals: list[str] = field(default_factory=list)
    statuses: list[int] = field(default_factory=list)


class _ThreadLog(logging.Handler):
    """Apprise's warnings from one thread (a plugin says a service's HTTP status only there)."""

    def __init__(self, outcome: _Outcome) -> None:
        super().__init__(logging.WARNING)
        self.thread = threading.get_ident()
        self.outcome = outcome

    def emit(self, record: logging.LogRecord) -> None:
        if record.thread == self.thread:
            found = _STATUS_IN_LOG.search(record.getMessage())
            if found:
                self.outcome.statuses.append(int(found[1]))


@contextmanager
def _guarded(guard: NetworkGuard, outcome: _Outcome) -> Iterator[None]:
    _install_connection_guard()
    logger = logging.getLogger("apprise")
    handler = _ThreadLog(outcome)
    logger.addHandler(handler)
    guard_token = _GUARD.set(guard)
    refusals_token = _REFUSALS.set(outcome.refusals)
    try:
        yield
    finally:
        _REFUSALS.reset(refusals_token)
        _GUARD.reset(guard_token)
        logger.removeHandler(handler)


def notify_type(event: AlertEvent) -> str:
    """Apprise's notify type: how the service colours or sounds the message."""
    if event.kind is EventKind.OPENED:
        return "failure" if event.severity in ("critical", "high") else "warning"
    return {EventKind.REMINDER: "warning", EventKind.RESOLVED: "success"}.get(event.kind, "info")


class Apprise(Channel):
    name = "apprise"
    label = N_("Apprise")
    places = Places(names=17, forms=17)
    plan = "pro"
    form = (FormField("urls", N_("Apprise URLs (comma-separated)"), "password", listed=True),)
    config_model = AppriseConfig
    secret_fields = ("urls",)

    async def send(self, config: Mapping[str, Any], event: AlertEvent, kit: DeliveryKit) -> None:
        urls = config.get("urls")
        if not isinstance(urls, list) or not urls:
            raise TransportError("Apprise: the channel has no urls", retryable=False)
        settings = kit.settings
        guard = NetworkGuard(
            allow_private=settings.allow_private_targets,
            loopback_only=settings.targets_loopback_only,
        )
        timeout = settings.alert_timeout_seconds
        # Apprise's sending blocks: it runs in a thread, the event loop carries on.
        failures = await asyncio.to_thread(self._send_all, urls, event, guard, timeout)
        if failures:
            retryable = any(retry for _, retry in failures)
            text = "; ".join(message for message, _ in failures)
            secrets = [str(url) for url in urls]
            raise TransportError(scrub(f"Apprise: {text}", secrets), retryable=retryable)

    def _send_all(
        self, urls: list[Any], event: AlertEvent, guard: NetworkGuard, timeout: float
    ) -> list[tuple[str, bool]]:
        """Send to each URL in this thread; (message, retryable) for each that failed."""
        failures = []
        for number, url in enumerate(urls, start=1):
            where = f"URL {number} ({scheme_of(str(url))})"
            plugin = instantiate(str(url)) if scheme_of(str(url)) in SCHEMES else None
            if plugin is None:
                failures.append((f"{where}: not a URL Upwatch sends to", False))
                continue
            plugin.socket_connect_timeout = timeout
            plugin.socket_read_timeout = timeout
            outcome = _Outcome()
            try:
                with _guarded(guard, outcome):
                    sent = plugin.notify(
                        body="\n".join(event.lines()),
                        title=event.headline,
                        notify_type=notify_type(event),
                        body_format="text",
                    )
            except Exception as exc:  # a plugin's own failure: named, never its text
                failures.append((f"{where}: Apprise failed ({type(exc).__name__})", True))
                continue
            if sent:
                continue
            if outcome.refusals:
                failures.append((f"{where}: the address is refused ({outcome.refusals[0]})", False))
            elif outcome.statuses:
                status = outcome.statuses[-1]
                failures.append((f"{where}: HTTP {status}", retryable_status(status)))
            else:
                failures.append((f"{where}: not delivered (no answer, or refused)", True))
        return failures

    def masked(self, config: Mapping[str, Any]) -> dict[str, Any]:
        shown = dict(config)
        if isinstance(shown.get("urls"), list):
            shown["urls"] = [mask_url(str(url)) for url in shown["urls"]]
        return shown

    def restore_secrets(self, merged: dict[str, Any], stored: Mapping[str, Any]) -> list[str]:
        """A URL sent back masked keeps the stored URL at the same place in the list."""
        new, old = merged.get("urls"), stored.get("urls")
        restored: list[str] = []
        if isinstance(new, list) and isinstance(old, list):
            kept = []
            for index, value in enumerate(new):
                if index < len(old) and value == mask_url(str(old[index])):
                    kept.append(old[index])
                    restored.append(f"urls.{index}")
                else:
                    kept.append(value)
            merged["urls"] = kept
        return restored

    def is_secret_path(self, path: str) -> bool:
        return path == "config.urls" or path.startswith("config.urls.")

    def urls(self, config: Mapping[str, Any]) -> list[tuple[str, str]]:
        """The self-hosted services' hosts, as http URLs the guard checks when saved."""
        checked = []
        for index, value in enumerate(config.get("urls") or []):
            if not SCHEMES.get(scheme_of(str(value)), False):
                continue
            try:
                parsed = URL(str(value))
                host = parsed.raw_host
                port = parsed.explicit_port
            except (ValueError, TypeError):
                continue  # validation said why
            if host:
                checked.append(
                    (f"urls.{index}", str(URL.build(scheme="http", host=host, port=port)))
                )
        return checked


CHANNEL = Apprise()
