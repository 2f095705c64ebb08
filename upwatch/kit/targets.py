"""What a monitor watches, in words: its URL, or its host and port.

In the base layer so the engine (the ``target`` label of ``upwatch_monitor_info``) and the
incidents (an alert's ``monitor_target``) render it alike.
"""

from __future__ import annotations

from typing import Protocol
from urllib.parse import urlsplit, urlunsplit

from upwatch.kit.security import SECRET_MASK


class Addressed(Protocol):
    """A monitor as far as its target goes (the model, or the ingester's plain copy)."""

    @property
    def url(self) -> str | None: ...

    @property
    def host(self) -> str | None: ...

    @property
    def port(self) -> int | None: ...


def target_of(monitor: Addressed) -> str | None:
    """What the monitor watches, in words; a password in its URL masked (a database URL's,
    a login in an http URL), since alerts and pages show this."""
    if monitor.url:
        return without_password(monitor.url)
    if monitor.host:
        return f"{monitor.host}:{monitor.port}" if monitor.port else monitor.host
    return None


def without_password(url: str) -> str:
    """``url`` with the password of its user info, if any, replaced by the mask."""
    scheme, sep, rest = url.partition("://")
    authority, at, after = rest.rpartition("@")
    if not sep or not at:
        return url
    user, colon, _password = authority.partition(":")
    return f"{scheme}://{user}:{SECRET_MASK}@{after}" if colon else url


def shown_target(target: str | None) -> str:
    """``target`` fit to show to whoever reads the metrics: a URL loses its user name and
    password, query and fragment (where credentials and tokens travel); the scheme, host,
    port and path stay. Empty when there is none, or when it is not a URL one can read."""
    if not target:
        return ""
    if "://" not in target:
        return target  # host or host:port
    scheme, _, rest = target.partition("://")
    # Everything up to the last "@" goes before parsing: a password with an unescaped "/",
    # "?" or "#" would otherwise end the authority early and leave part of it in the path.
    # (A path with an "@" of its own loses its start: a label, not a leak.)
    rest = rest.rpartition("@")[2]
    try:
        parts = urlsplit(f"{scheme}://{rest}")
    except ValueError:
        return ""
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))
