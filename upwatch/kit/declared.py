"""Config as code, the server's part: the key a file gives each object, and secret references.

A declared object (monitor, notification provider, status page, maintenance window) carries a
``key`` of the file's choosing, unique per project, by which ``upwatch apply`` finds it again.

A file never holds a secret: it names an environment variable. The object stores, for each
secret field given that way, the variable's name and an Argon2id digest of the value, so a
later ``apply`` can tell an unchanged secret without the server ever showing it, and
``export`` can write the reference back (docs/config-as-code.md).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Annotated, Any, Final

from pydantic import BaseModel, Field
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from upwatch.kit.db import Base
from upwatch.kit.errors import Conflict, ValidationFailed
from upwatch.kit.inputs import worded
from upwatch.kit.security import SECRET_MASK, Passwords

KEY_PATTERN: Final = r"^[a-z0-9][a-z0-9_.-]{0,63}$"
ENV_NAME_PATTERN: Final = r"^[A-Za-z_][A-Za-z0-9_]{0,127}$"

DeclaredKey = Annotated[
    str,
    Field(
        min_length=1,
        max_length=64,
        pattern=worded(
            KEY_PATTERN,
            "lower-case letters, digits, '.', '_' and '-', starting with a letter or digit",
        ),
        description="The object's key in a config file (`upwatch apply`), unique per project",
        examples=["homepage"],
    ),
]
EnvName = Annotated[
    str,
    Field(
        pattern=worded(ENV_NAME_PATTERN, "an environment variable's name"),
        examples=["SLACK_WEBHOOK_URL"],
    ),
]
SecretPath = Annotated[str, Field(min_length=1, max_length=200, examples=["config.webhookUrl"])]
SecretRefsIn = Annotated[
    dict[SecretPath, EnvName],
    Field(
        # Each costs an Argon2id hash on write.
        max_length=25,
        description="Secret fields a config file gives by environment variable: the field's "
        "path (`config.webhookUrl`, `headers.Authorization`) to the variable's name. The "
        "server keeps the name and a digest of the value (`secretRefs` in responses). On "
        "update, left out or null keeps the names and refreshes the digests; `{}` removes them",
    ),
]


class SecretRefOut(BaseModel):
    env: str = Field(description="The environment variable the config file names")
    digest: str | None = Field(
        description="Argon2id digest of the value stored: a client verifies its own value "
        "against it to tell an unchanged secret. null for a read API key (it cannot apply)"
    )


# Whether this request's caller may read digests: every member may write the objects that
# hold them, a read API key may not (set with the caller, callers/dependencies.py).
digests_shown: ContextVar[bool] = ContextVar("digests_shown", default=True)


def shown_refs(stored: Mapping[str, Any] | None) -> dict[str, dict[str, str | None]]:
    """The references as this request's caller sees them."""
    shown = digests_shown.get()
    return {
        path: {"env": ref.get("env"), "digest": ref.get("digest") if shown else None}
        for path, ref in (stored or {}).items()
        if isinstance(ref, Mapping)
    }


def value_at(document: Mapping[str, Any], path: str) -> Any:
    """The value at a dotted ``path``; a key holding dots (a header name) is tried whole."""
    current: Any = document
    rest = path
    while isinstance(current, Mapping):
        if rest in current:
            return current[rest]
        head, dot, rest = rest.partition(".")
        if not dot or head not in current:
            return None
        current = current[head]
    return None


@dataclass(frozen=True)
class SecretWrite:
    """One write of an object holding secrets: its secret-holding part before and after, what
    the request itself sent of it (None: that part was not sent), and which paths are
    secret now."""

    before: Mapping[str, Any]
    after: Mapping[str, Any]
    sent: Mapping[str, Any] | None
    is_secret: Callable[[str], bool]


async def digested(
    passwords: Passwords,
    write: SecretWrite,
    names: Mapping[str, str] | None,
    previous: Mapping[str, Any],
) -> dict[str, dict[str, str]]:
    """The references to store: for each path, the variable and a digest of its value now.

    ``names`` None keeps the stored references whose field still holds a secret. A digest is
    kept while its value is the one it was made from, so an unchanged secret costs nothing.
    A new reference needs its value in the same request, in clear: a digest of a secret
    someone else stored would let a member test guesses at it offline.
    Raises ``ValidationFailed`` on a path that names no secret field of the object."""
    if names is None:
        names = {
            path: str(ref["env"])
            for path, ref in previous.items()
            if isinstance(ref, Mapping)
            and isinstance(value_at(write.after, path), str)
            and write.is_secret(path)
        }
    refs: dict[str, dict[str, str]] = {}
    for path, env in names.items():
        field = f"secretRefs.{path}"
        value = value_at(write.after, path)
        if not isinstance(value, str) or not write.is_secret(path):
            raise ValidationFailed.on(field, "names no secret field of this object")
        before = previous.get(path)
        old = before.get("digest") if isinstance(before, Mapping) else None
        if isinstance(old, str) and value_at(write.before, path) == value:
            refs[path] = {"env": env, "digest": old}
            continue
        given = value_at(write.sent, path) if write.sent is not None else None
        if not isinstance(given, str) or SECRET_MASK in given:
            raise ValidationFailed.on(field, "a new reference comes with its secret's value")
        refs[path] = {"env": env, "digest": await passwords.hash(value)}
    return refs


async def require_free_key(
    session: AsyncSession,
    model: type[Base],
    what: str,
    project_id: str,
    key: str | None,
    besides: str | None = None,
) -> None:
    """409 when another object of the project already has ``key``."""
    if key is None:
        return
    table = model.__table__
    query = select(table.c.id).where(table.c.project_id == project_id, table.c.key == key)
    if besides is not None:
        query = query.where(table.c.id != besides)
    if (await session.execute(query.limit(1))).first() is not None:
        raise Conflict(f"another {what} of this project has the key {key!r}")
