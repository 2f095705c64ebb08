"""Settings read from ``UPWATCH_*`` environment variables (and an optional ``.env`` file)."""

from __future__ import annotations

import os
import secrets
from functools import cached_property
from pathlib import Path

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


def async_database_url(url: str) -> str:
    """Map the plain URLs operators write to the async drivers the service uses."""
    for plain, driver in (
        ("sqlite://", "sqlite+aiosqlite://"),
        ("postgresql://", "postgresql+asyncpg://"),
        ("postgres://", "postgresql+asyncpg://"),
    ):
        if url.startswith(plain):
            return driver + url[len(plain) :]
    return url


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="UPWATCH_", env_file=".env", extra="ignore", frozen=True
    )

    data_dir: Path = Path("data")
    database_url: str = ""
    secret_key: str = ""
    public_url: str = "http://127.0.0.1:8000"
    migrate_on_start: bool = True

    smtp_host: str = ""
    smtp_port: int = 25
    smtp_username: str = ""
    smtp_password: str = ""
    smtp_starttls: bool = False
    smtp_timeout_seconds: float = 10.0
    mail_from: str = "Upwatch <noreply@upwatch.local>"
    admin_email: str = ""

    allow_private_targets: bool = False
    plans_file: Path | None = None
    redis_url: str = ""

    access_token_minutes: int = 15
    refresh_token_days: int = 30
    reset_token_minutes: int = 60
    # Argon2id cost; the defaults are argon2-cffi's RFC 9106 low-memory profile.
    argon2_time_cost: int = Field(default=3, ge=1)
    argon2_memory_kib: int = Field(default=65536, ge=8)
    argon2_parallelism: int = Field(default=4, ge=1)

    login_failures_allowed: int = 10
    login_window_seconds: int = 15 * 60
    contact_submissions_allowed: int = 5
    contact_window_seconds: int = 10 * 60

    mail_poll_seconds: float = 5.0
    # 30 attempts with back-off capped at an hour span about a day of SMTP outage.
    mail_max_attempts: int = 30
    max_body_bytes: int = 1_048_576

    @field_validator("public_url")
    @classmethod
    def _strip_slash(cls, value: str) -> str:
        return value.rstrip("/")

    @cached_property
    def sqlalchemy_url(self) -> str:
        url = self.database_url or f"sqlite:///{self.data_dir / 'upwatch.db'}"
        return async_database_url(url)

    @property
    def is_sqlite(self) -> bool:
        return self.sqlalchemy_url.startswith("sqlite")

    @property
    def smtp_configured(self) -> bool:
        return bool(self.smtp_host)

    @cached_property
    def signing_key(self) -> str:
        """The JWT key: configured, or generated once and kept in the data directory."""
        if self.secret_key:
            return self.secret_key
        path = self.data_dir / "secret_key"
        if path.exists():
            return path.read_text().strip()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        key = secrets.token_urlsafe(48)
        # O_EXCL: when two processes start together, one key wins and both read it.
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            return path.read_text().strip()
        with os.fdopen(fd, "w") as handle:
            handle.write(key)
        return key

    def ensure_data_dir(self) -> None:
        if self.is_sqlite:
            self.data_dir.mkdir(parents=True, exist_ok=True)
