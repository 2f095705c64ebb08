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
from typing import Annotated, Any, Final

from pydantic import BaseModel, Field
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from upwatch.kit.db import Base
from upwatch.kit.errors import Conflict, ValidationFailed
from upwatch.kit.inputs import worded
from upwatch.kit.security import Passwords

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
    digest: str = Field(
        description="Argon2id digest of the value stored: a client verifies its own value "
        "against it to tell an unchanged secret"
    )


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


async def digested(
    passwords: Passwords,
    document: Mapping[str, Any],
    names: Mapping[str, str],
    previous: Mapping[str, Any],
    is_secret: Callable[[str], bool],
) -> dict[str, dict[str, str]]:
    """The references to store: for each path, the variable and a digest of its value now.

    A digest is kept while it still matches, so an unchanged secret costs one verification.
    Raises ``ValidationFailed`` on a path that names no secret field of the object."""
    refs: dict[str, dict[str, str]] = {}
    for path, env in names.items():
        value = value_at(document, path)
        if not isinstance(value, str) or not is_secret(path):
            raise ValidationFailed.on(f"secretRefs.{path}", "names no secret field of this object")
        before = previous.get(path)
        old = before.get("digest") if isinstance(before, Mapping) else None
        if isinstance(old, str) and await passwords.verify(old, value):
            digest = old
        else:
            digest = await passwords.hash(value)
        refs[path] = {"env": env, "digest": digest}
    return refs


def kept_names(stored: Mapping[str, Any], document: Mapping[str, Any]) -> dict[str, str]:
    """The stored references whose field still holds a value (a removed field drops its)."""
    return {
        path: ref["env"]
        for path, ref in stored.items()
        if isinstance(ref, Mapping) and isinstance(value_at(document, path), str)
    }


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
