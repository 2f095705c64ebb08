"""Creating the first administrator from the command line."""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter, ValidationError

from upwatch.accounts.repository import UserRepository
from upwatch.config import Settings
from upwatch.kit.db import Database
from upwatch.kit.errors import field_errors
from upwatch.kit.plans import PlanCatalog
from upwatch.kit.schemas import Email, Password
from upwatch.kit.security import Passwords
from upwatch.migrations import upgrade
from upwatch.models import User
from upwatch.notifications.channels import plan_channels


def _valid(field: str, kind: Any, value: str) -> str:
    """The value, or a ValueError that names the field as the API would."""
    try:
        valid: str = TypeAdapter(kind).validate_python(value)
    except ValidationError as exc:
        message = field_errors(exc.errors())[0].message
        raise ValueError(f"{field}: {message}") from exc
    return valid


async def create_admin(
    settings: Settings, email: str, password: str, role: str
) -> tuple[bool, str]:
    """Create the account with ``role``, or add the role to an existing one.

    Returns whether the account is new, and its normalised e-mail address.
    """
    email = _valid("email", Email, email)
    password = _valid("password", Password, password)
    db = Database(settings)
    try:
        await upgrade(db.engine)
        async with db.sessionmaker() as session:
            users = UserRepository(session)
            user = await users.get_by_email(email)
            created = user is None
            password_hash = await Passwords(settings).hash(password)
            if user is None:
                user = User(
                    email=email,
                    password_hash=password_hash,
                    roles=["user", role],
                    is_email_verified=True,
                    settings={},
                )
                await users.add(
                    user,
                    PlanCatalog.load(
                        settings.plans_file, settings.edition, channels=plan_channels()
                    ).default_plan,
                )
            else:
                user.roles = list(dict.fromkeys([*user.roles, role]))
                user.password_hash = password_hash
                user.token_version += 1
            await session.commit()
            return created, email
    finally:
        await db.dispose()
