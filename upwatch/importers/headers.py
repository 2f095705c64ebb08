"""Request headers of an imported monitor: values that look like credentials become secrets."""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping
from typing import Any, Final
from urllib.parse import unquote, urlsplit, urlunsplit

from upwatch.importers.output import Imported
from upwatch.importers.report import Item
from upwatch.monitors.secrets import ALWAYS_SECRET

# Header names that carry credentials beyond those Upwatch always keeps secret.
_CREDENTIAL: Final = re.compile(r"token|key|secret|auth|password|session", re.IGNORECASE)


def monitor_headers(
    imported: Imported, item: Item, key: str, given: Mapping[str, Any]
) -> dict[str, Any]:
    """``headers`` (and ``secretHeaders``) of a monitor entry, credentials as ``{env: NAME}``."""
    headers: dict[str, Any] = {}
    marked: list[str] = []
    for name, value in given.items():
        name, text = str(name), str(value)
        if name.lower() in ALWAYS_SECRET or _CREDENTIAL.search(name):
            headers[name] = imported.secret(item, "monitors", key, f"header {name}", text)
            if name.lower() not in ALWAYS_SECRET:
                marked.append(name)
        else:
            headers[name] = text
    fields: dict[str, Any] = {"headers": headers} if headers else {}
    if marked:
        fields["secretHeaders"] = marked
    return fields


def without_credentials(url: str) -> tuple[str, str | None]:
    """``url`` without a ``user:password@`` part, and that part as a basic ``Authorization``
    value (a file must not hold the password in the URL)."""
    parts = urlsplit(url)
    if parts.password is None and parts.username is None:
        return url, None
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = host + (f":{parts.port}" if parts.port is not None else "")
    pair = f"{unquote(parts.username or '')}:{unquote(parts.password or '')}"
    value = "Basic " + base64.b64encode(pair.encode()).decode()
    return urlunsplit(parts._replace(netloc=netloc)), value
