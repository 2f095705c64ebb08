"""Secret HTTP monitor headers: masked in every response, kept when sent back masked.

The convention of notification-provider secrets (``upwatch/notifications/channels.py``): a
response shows ``****`` plus at most the last four characters; an update that sends that mask
back for the same header keeps the stored value; but a masked secret is not carried to a new
destination (another scheme, host or port of `url`), or a member could point the monitor at
a server of their own and receive the credential with the next check.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from yarl import URL

from upwatch.kit.security import SECRET_MASK
from upwatch.notifications.channels import mask_value

# Credentials by definition; the user marks any other header with `secretHeaders`.
ALWAYS_SECRET = frozenset({"authorization", "cookie", "proxy-authorization"})


class SecretNotKept(ValueError):
    """A masked secret header was sent back for a new destination."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


def secret_names(marked: Iterable[str]) -> frozenset[str]:
    """Lower-cased names of the headers whose values are secret."""
    return ALWAYS_SECRET | {name.lower() for name in marked}


def unique(names: Iterable[str]) -> list[str]:
    """Each name once, whatever its letter case (the first spelling stays)."""
    first: dict[str, str] = {}
    for name in names:
        first.setdefault(name.lower(), name)
    return list(first.values())


def masked(headers: Mapping[str, str], marked: Iterable[str]) -> dict[str, str]:
    secret = secret_names(marked)
    return {
        name: mask_value(value) if name.lower() in secret else value
        for name, value in headers.items()
    }


def _origin(url: str | None) -> tuple[str, str, int | None] | None:
    if url is None:
        return None
    try:
        parsed = URL(url)
        # Inside: decoding a punycode host can fail too (a URL stored before hosts were checked).
        return (parsed.scheme, (parsed.host or "").lower(), parsed.port)
    except (ValueError, TypeError):
        return None


def keep_secrets(
    submitted: Mapping[str, str],
    stored: Mapping[str, str],
    marked: Iterable[str],
    old_url: str | None,
    new_url: str | None,
) -> dict[str, str]:
    """The headers to store: each secret sent back as its mask is the stored value again.

    Raises ``SecretNotKept`` when a kept secret would go to another origin than before.
    """
    secret = secret_names(marked)
    merged: dict[str, str] = {}
    kept: list[str] = []
    for name, value in submitted.items():
        old = stored.get(name)
        if name.lower() in secret and old is not None and value == mask_value(old):
            merged[name] = old
            kept.append(name)
        else:
            merged[name] = value
    if kept and _origin(old_url) != _origin(new_url):
        raise SecretNotKept(kept[0])
    return merged


def moved_with_secrets(
    stored: Mapping[str, str], marked: Iterable[str], old_url: str | None, new_url: str | None
) -> str | None:
    """The first stored secret header that a new `url` alone would carry to another origin."""
    if _origin(old_url) == _origin(new_url):
        return None
    secret = secret_names(marked)
    return next((name for name in stored if name.lower() in secret), None)


# ---- secrets of a type's own settings, and the password in a database URL ------------------


def masked_settings(settings: Mapping[str, object], names: Iterable[str]) -> dict[str, object]:
    """``settings`` with the values of the secret ``names`` masked."""
    secret = set(names)
    return {
        name: mask_value(value) if name in secret and isinstance(value, str) else value
        for name, value in settings.items()
    }


def kept_setting(submitted: object, stored: object) -> object:
    """A secret setting to store: its mask sent back is the stored value again."""
    if isinstance(stored, str) and submitted == mask_value(stored):
        return stored
    return submitted


def mask_url_password(url: str | None) -> str | None:
    """``scheme://user:****@host/...``: the password of a connection URL masked."""
    if not url:
        return url
    try:
        parsed = URL(url)
    except (ValueError, TypeError):
        return SECRET_MASK
    if parsed.password is None:
        return url
    return str(parsed.with_password(SECRET_MASK))


def url_password(url: str | None) -> str | None:
    """The password of a connection URL (None without one): what of a database URL is secret."""
    if not url:
        return None
    try:
        return URL(url).password
    except (ValueError, TypeError):
        return None


def kept_url_password(submitted: str | None, stored: str | None) -> str | None:
    """A connection URL to store: sent back with its password masked, for the same server and
    user, it takes the stored password again. Raises ``SecretNotKept`` when the mask would go
    to another server or user."""
    if not submitted or not stored:
        return submitted
    try:
        new, old = URL(submitted), URL(stored)
    except (ValueError, TypeError):
        return submitted
    if new.password != SECRET_MASK or old.password is None:
        return submitted
    same = (new.scheme, new.host, new.port, new.user) == (old.scheme, old.host, old.port, old.user)
    if not same:
        raise SecretNotKept("url")
    return str(new.with_password(old.password))
