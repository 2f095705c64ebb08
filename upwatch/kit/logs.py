"""The service's log: one format for every logger (ours and uvicorn's), text or JSON.

``UPWATCH_LOG_FORMAT=text`` (the default) writes one readable line per record;
``json`` writes one JSON object per line for log collectors, with the record's fields
(``time``, ``level``, ``logger``, ``message``) and the ids an event carries (``event``,
``monitor_id``, ``incident_id``, ...) as keys of their own. uvicorn's loggers write through
the same handler: ``serve`` starts uvicorn without a logging configuration of its own.

Request paths in uvicorn's access lines have their secrets masked (the heartbeat token, and
the values of query parameters named like a credential: ``token``, ``access_token``,
``api_key``, ``key``, ``password``, ``secret``..., in any letter case or percent-encoding),
whatever the format: the address of a reset link a person opens on the API host, or a key a
script puts in a query string, must not put the secret in the log.
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote_plus

from pythonjsonlogger.core import RESERVED_ATTRS
from pythonjsonlogger.json import JsonFormatter

if TYPE_CHECKING:  # a worker process logs without loading the settings
    from upwatch.config import Settings

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"
MASK = "****"

# Query parameters whose values are credentials, by name once percent-decoded, lower-cased
# and without separators: api_key, apiKey, API-KEY and api%5Fkey alike. Clients put keys
# and passwords in query strings whatever the API documents. ``code`` is an OAuth
# authorization code (single sign-on's callback, docs/single-sign-on.md).
_SECRET_NAME = re.compile(r"token|secret|passw(?:or)?d|pwd|credential|signature|auth|key$|^code$")
_NAME_SEPARATORS = re.compile(r"[\s._-]")
_HEARTBEAT_TOKEN = re.compile(r"(/heartbeat/)[^/?#\s]+")


def _is_secret_parameter(name: str) -> bool:
    """Whether a query parameter of this name (as sent, possibly percent-encoded) carries a
    credential."""
    plain = _NAME_SEPARATORS.sub("", unquote_plus(name)).lower()
    return _SECRET_NAME.search(plain) is not None


def _masked_parameter(part: str) -> str:
    name, equals, value = part.partition("=")
    return f"{name}={MASK}" if equals and value and _is_secret_parameter(name) else part


def mask_tokens(path: str) -> str:
    """``path`` with a heartbeat token and the values of credential query parameters masked
    (``_is_secret_parameter``)."""
    path = _HEARTBEAT_TOKEN.sub(rf"\g<1>{MASK}", path)
    head, question, query = path.partition("?")
    if not question:
        return path
    # Separators kept in the split; a fragment (which clients should not send) is masked too.
    parts = re.split(r"([&;#])", query)
    return f"{head}?{''.join(_masked_parameter(part) for part in parts)}"


class AccessTokenMask(logging.Filter):
    """Masks tokens in the path of uvicorn's access lines (``client - "METHOD path ..." code``)."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) >= 3 and isinstance(args[2], str):
            record.args = (*args[:2], mask_tokens(args[2]), *args[3:])
        return True


def json_formatter() -> logging.Formatter:
    return JsonFormatter(
        "%(levelname)s %(name)s %(message)s",
        rename_fields={"levelname": "level", "name": "logger"},
        timestamp="time",  # ISO 8601 in UTC
        # uvicorn adds a coloured copy of some messages; collectors need only one.
        reserved_attrs=[*RESERVED_ATTRS, "color_message"],
    )


def configure_logging(settings: Settings, level: str = "info") -> None:
    """Log ``level`` and above to standard error in the configured format (once per process)."""
    configure_handler(settings.log_format, level)


def configure_handler(log_format: str, level: str = "info") -> None:
    """``configure_logging`` for a process without settings (a worker process)."""
    handler = logging.StreamHandler()
    if log_format == "json":
        handler.setFormatter(json_formatter())
    else:
        handler.setFormatter(logging.Formatter(TEXT_FORMAT))
    logging.basicConfig(level=level.upper(), handlers=[handler])
    # Alembic names each of its own plugins at INFO on every start; its migration steps stay.
    logging.getLogger("alembic.runtime.plugins").setLevel(logging.WARNING)
    access = logging.getLogger("uvicorn.access")
    if not any(isinstance(f, AccessTokenMask) for f in access.filters):
        access.addFilter(AccessTokenMask())


def log_event(
    logger: logging.Logger,
    event: str,
    message: str,
    *args: object,
    level: int = logging.INFO,
    **ids: Any,
) -> None:
    """One line of the service's story: ``message`` (with ``args``) for people, and ``event``
    with ``ids`` as fields of the record, which the JSON format writes as keys."""
    logger.log(level, message, *args, extra={"event": event, **ids}, stacklevel=2)
