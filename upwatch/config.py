"""Settings read from ``UPWATCH_*`` environment variables (and an optional ``.env`` file)."""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import secrets
import stat
import tempfile
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from dotenv import dotenv_values
from pydantic import Field, field_validator, model_validator
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

log = logging.getLogger(__name__)

MIN_KEY_LENGTH = 32


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


# Settings that hold secrets: each may instead be read from a file named by UPWATCH_<NAME>_FILE
# (the convention of container secrets, e.g. /run/secrets/...). Not every setting: names such
# as UPWATCH_PLANS_FILE already end in _FILE.
SECRET_SETTINGS = (
    "database_url",
    "redis_url",
    "secret_key",
    "smtp_username",
    "smtp_password",
    "metrics_token",
    "oidc_client_secret",
)


class SettingsProblem(ValueError):
    """A setting that cannot be read at all (not a value that fails validation)."""


class SecretFiles(PydanticBaseSettingsSource):
    """``UPWATCH_<NAME>_FILE`` for each of ``SECRET_SETTINGS``, from the environment or the
    ``.env`` file: the file's text, without the line end editors add. Setting both the
    variable and its ``_FILE`` is refused: which one wins would be a guess."""

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False  # every value comes from __call__

    def _variables(self) -> dict[str, str | None]:
        env_file = self.config.get("env_file")
        dotenv = dotenv_values(env_file) if isinstance(env_file, str) else {}
        return {**dotenv, **os.environ}

    def __call__(self) -> dict[str, Any]:
        variables = self._variables()
        found: dict[str, Any] = {}
        for name in SECRET_SETTINGS:
            variable = f"UPWATCH_{name.upper()}"
            path = variables.get(f"{variable}_FILE")
            if not path:
                continue
            if variables.get(variable) is not None:
                raise SettingsProblem(f"set {variable} or {variable}_FILE, not both")
            try:
                found[name] = Path(path).read_text(encoding="utf-8").rstrip("\r\n")
            except OSError as exc:
                raise SettingsProblem(
                    f"{variable}_FILE: cannot read {path}: {exc.strerror}"
                ) from None
            except UnicodeDecodeError:
                raise SettingsProblem(f"{variable}_FILE: {path} is not UTF-8 text") from None
        return found


def parsed_database_url(url: str) -> URL:
    """The URL, or a ValueError that does not quote it: a password with an unescaped ``@``
    or ``/`` breaks the parse, and the text around the break would show part of it."""
    try:
        return make_url(async_database_url(url))
    except (ValueError, ArgumentError):
        raise ValueError(
            "not a database URL (scheme://user:password@host:port/name; characters such as "
            "@ / : # in the password must be percent-encoded, e.g. %40 for @)"
        ) from None


# What a setting needs installed beyond the base package: the extra that brings it.
def _missing_extra(module: str, extra: str, setting: str) -> str | None:
    if importlib.util.find_spec(module) is not None:
        return None
    return f"{setting} needs the '{extra}' extra: pip install 'upwatch[{extra}]'"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="UPWATCH_",
        env_file=".env",
        extra="ignore",
        frozen=True,
        # A refused value is never repeated in the error: it may be a secret.
        hide_input_in_errors=True,
    )

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (
            init_settings,
            env_settings,
            SecretFiles(settings_cls),
            dotenv_settings,
            file_secret_settings,
        )

    # Where `upwatch serve` listens (its --host and --port flags win), and the least severe
    # log lines written by every command (--log-level wins).
    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=1, le=65535)
    log_level: Literal["critical", "error", "warning", "info", "debug"] = "info"

    data_dir: Path = Path("data")
    database_url: str = ""
    secret_key: str = ""
    # Unset, `upwatch serve` derives it from the address it binds (cli.py).
    public_url: str = "http://127.0.0.1:8000"
    migrate_on_start: bool = True

    smtp_host: str = ""
    smtp_port: int = 25
    smtp_username: str = ""
    smtp_password: str = ""
    smtp_starttls: bool = False
    # Implicit TLS from the first byte (SMTPS, usually port 465), instead of STARTTLS.
    smtp_tls: bool = False
    smtp_timeout_seconds: float = 10.0
    mail_from: str = "Upwatch <noreply@upwatch.local>"
    admin_email: str = ""
    # text: one readable line per record; json: one JSON object per line, for log collectors.
    log_format: Literal["text", "json"] = "text"

    # Addresses of reverse proxies whose X-Forwarded-For is trusted for the client address
    # (uvicorn's forwarded_allow_ips, e.g. "127.0.0.1" or "*"); empty trusts none.
    forwarded_allow_ips: str = ""
    # The event loop `upwatch serve` answers HTTP on. asyncio's own loop serves every
    # connection in turn when the process is saturated; uvloop answered ~8 % more requests
    # but left 1-3 % of them waiting about a second (bench/statuspage.py --loop).
    http_loop: Literal["asyncio", "uvloop"] = "asyncio"
    allow_private_targets: bool = False
    # Test and benchmark environments: probes reach loopback only and never query DNS.
    targets_loopback_only: bool = False
    plans_file: Path | None = None
    # Domain monitors: one RDAP server answering every lookup instead of the bootstrap's, one
    # WHOIS server ("host" or "host:port") for the TLDs without RDAP (both for tests and
    # mirrors; probes/domain.py reads them from the environment at each check), and where
    # `upwatch rdap-refresh` downloads the IANA bootstrap file from.
    rdap_base_url: str = ""
    whois_server: str = ""
    rdap_bootstrap_url: str = "https://data.iana.org/rdap/dns.json"
    # hosted: the contract's free and pro plans. selfhosted: new accounts get a plan without
    # limits and the shortest interval the schema allows, and there is nothing to upgrade to.
    edition: Literal["hosted", "selfhosted"] = "hosted"
    # Who may create an account: anyone (open), only with a project invitation (invite), or
    # only administrators (closed; the first one with `upwatch admin create`), or only through
    # single sign-on (sso; needs UPWATCH_OIDC_ISSUER).
    signup: Literal["open", "invite", "closed", "sso"] = "open"
    # Single sign-on by OpenID Connect (docs/single-sign-on.md): the provider's issuer URL
    # (its /.well-known/openid-configuration is read from there), this service's client at
    # it, the scopes asked for, the button's label, and an optional "claim=value" whose
    # presence in the ID token (or userinfo) makes the account an administrator at each
    # sign-in, and whose absence takes the role away again.
    oidc_issuer: str = ""
    oidc_client_id: str = ""
    oidc_client_secret: str = ""
    oidc_scopes: str = "openid email profile"
    oidc_name: str = Field(default="single sign-on", min_length=1, max_length=60)
    oidc_admin_claim: str = Field(default="", pattern=r"^$|^[^=\s]{1,100}=[^=]{1,200}$")
    redis_url: str = ""
    # Distributed mode (docs/deployment.md): the key prefix of the broker's streams, so
    # several deployments can share one Redis, and how long a job or result a consumer read
    # may stay unacknowledged before another takes it over (longer than any check's timeout
    # plus the dispatch lead, or a slow check is run twice).
    # memory: `serve` runs the checks itself (the embedded default). redis: `serve` schedules
    # and stores, and `upwatch worker --region CODE` processes anywhere run the checks.
    broker: Literal["memory", "redis"] = "memory"
    broker_prefix: str = Field(default="upwatch", pattern=r"^[A-Za-z0-9_.-]{1,64}$")
    broker_reclaim_seconds: float = Field(default=90.0, gt=0)

    access_token_minutes: int = 15
    refresh_token_days: int = 30
    reset_token_minutes: int = 60
    # Argon2id cost; the defaults are argon2-cffi's RFC 9106 low-memory profile.
    argon2_time_cost: int = Field(default=3, ge=1)
    argon2_memory_kib: int = Field(default=65536, ge=8)
    argon2_parallelism: int = Field(default=4, ge=1)
    password_hash_concurrency: int = Field(default=4, ge=1)

    login_failures_allowed: int = 10
    login_window_seconds: int = 15 * 60
    contact_submissions_allowed: int = 5
    contact_window_seconds: int = 10 * 60
    # Status-page subscriptions a client address may ask for per window.
    subscribe_requests_allowed: int = Field(default=10, ge=1)
    subscribe_window_seconds: int = Field(default=10 * 60, ge=1)

    # Count authenticated requests per account and day, and refuse past apiCallsPerDay.
    api_metering: bool = True
    usage_flush_seconds: float = 5.0
    mail_poll_seconds: float = 5.0
    # 30 attempts with back-off capped at an hour span 12 to 24 hours of SMTP outage (the
    # jitter draws each wait from the upper half of its step), about 18 hours on average.
    mail_max_attempts: int = 30
    max_body_bytes: int = 1_048_576

    # Alert delivery: back-off doubles from the first delay up to the cap, each wait drawn from
    # the upper half of its step, and a receiver's Retry-After (429, 503) is waited out up to
    # the cap; after the last attempt an alert fails for good. The defaults span 25 to 50
    # minutes of receiver outage.
    alert_retry_seconds: float = Field(default=5.0, gt=0)
    alert_retry_max_seconds: float = Field(default=600.0, gt=0)
    alert_max_attempts: int = Field(default=12, ge=1)
    alert_timeout_seconds: float = Field(default=10.0, gt=0)
    alert_poll_seconds: float = Field(default=5.0, gt=0)
    # Status-page subscriber fan-out: subscribers expanded per transaction, and how long a
    # claimed notice is hidden from other processes (a fan-out that died is taken over then).
    subscriber_fanout_batch: int = Field(default=1000, ge=1, le=10_000)
    subscriber_fanout_claim_seconds: float = Field(default=60.0, gt=0)
    # How often the pager looks for escalation steps and reminders that came due.
    pager_poll_seconds: float = Field(default=15.0, gt=0)
    # A claimed alert is hidden this long: if the sender dies mid-send, it is retried after it.
    alert_claim_seconds: float = Field(default=120.0, gt=0)
    # Fixed API bases of the chat and paging services; tests point them at local servers.
    telegram_api_url: str = "https://api.telegram.org"
    pagerduty_events_url: str = "https://events.pagerduty.com"
    twilio_api_url: str = "https://api.twilio.com"
    # Set, it replaces both Opsgenie API hosts (api.opsgenie.com, api.eu.opsgenie.com).
    opsgenie_api_url: str = ""
    pushover_api_url: str = "https://api.pushover.net"

    # Background roles: restart back-off after a failure (doubling up to the cap, jittered), and
    # how long a role with work may make no progress before /readyz reports it (at least 3
    # periods).
    role_restart_seconds: float = Field(default=1.0, gt=0)
    role_restart_max_seconds: float = Field(default=30.0, gt=0)
    ready_stall_seconds: float = Field(default=60.0, gt=0)
    # A request that concurrent writes kept from running (SQLite's lock, a PostgreSQL
    # deadlock or serialization failure) runs again this many times, after conflict_retry_
    # seconds doubling, before it answers 503.
    conflict_retries: int = Field(default=6, ge=0, le=20)
    conflict_retry_seconds: float = Field(default=0.05, gt=0, le=5)
    # A check still queued this long after it was due makes /readyz answer 503: the workers
    # (or, holding them back, the database) cannot keep up with the schedule.
    ready_late_seconds: float = Field(default=30.0, gt=0)
    # Data retention (retention/): run the job in this process; how often it looks for owners
    # whose daily run is due; rows deleted per transaction, and the pause between two, so
    # checks and requests keep the database; how long a run's claim on an owner holds
    # without progress before another process may take the owner over.
    retention: bool = True
    retention_poll_seconds: float = Field(default=600.0, gt=0)
    retention_batch_rows: int = Field(default=5000, ge=1, le=100_000)
    retention_batch_pause_seconds: float = Field(default=0.05, ge=0, le=60)
    retention_claim_seconds: float = Field(default=300.0, gt=0)
    # all: `serve` runs every role (the embedded default). api: HTTP only, for a distributed
    # deployment whose other roles run as `upwatch scheduler`, `ingester`, `sender`,
    # `retention` (`upwatch serve --roles api` sets it).
    roles: Literal["all", "api"] = "all"
    # Run the monitoring engine (scheduler, workers, ingester) in this process; false makes an
    # API-only process, e.g. beside a separate engine.
    engine: bool = True
    # Child processes that run the engine's probes, each on a loop of its own, so a probe's
    # timing holds no wait for the service's other work (and a second core is put to work).
    # 0 runs the probes in the service's own process: lighter, but timings then include the
    # time the process spent on requests and on storing results.
    worker_processes: int = Field(default=1, ge=0, le=64)
    # Checks one worker (process) runs at once.
    check_concurrency: int = Field(default=500, ge=1, le=10_000)
    # Checks go to the workers up to this long before they are due, a few at a time, and start
    # on time there: fewer wake-ups and messages per check. 0 sends each when it is due.
    check_dispatch_lead_seconds: float = Field(default=0.5, ge=0, le=1.0)
    # The ingester stores what arrived within this long of a batch's first result in one
    # transaction (at most 1,000 results): longer means fewer transactions at low rates, and
    # statuses, incidents and alerts this much later.
    ingest_max_wait_seconds: float = Field(default=1.0, gt=0, le=10)
    # The day, hour and histogram counts of stored results are held in memory and added to
    # the database this often (and at shutdown), not in every batch's transaction; statistics
    # read from them lag by up to this much. A kill -9 loses nothing: the next start counts
    # the unflushed batches again from their stored results (docs/architecture.md). 0 writes them
    # with each batch.
    aggregate_flush_seconds: float = Field(default=10.0, ge=0, le=3600)
    # Workers report their region alive this often; a region is online while its last report
    # is younger than region_online_seconds.
    region_report_seconds: float = Field(default=15.0, gt=0)
    region_online_seconds: float = Field(default=60.0, gt=0)
    # A public status page is built at most once per this many seconds (and again after an
    # edit of the page): monitor states and incidents show on it within this time.
    status_page_max_age_seconds: float = Field(default=5.0, ge=0, le=3600)
    # Set: /metrics answers only requests with "Authorization: Bearer <this token>".
    metrics_token: str = ""
    # /metrics lists every tenant's monitor ids with their state: without a token it answers
    # no one (401) unless the operator opens it to anyone who can reach it with this.
    metrics_public: bool = False
    # The role processes (scheduler, ingester, sender, retention, worker) serve /metrics on
    # this port and address, under the same rule as the API's (token, or public); 0 serves
    # none. `upwatch serve` answers /metrics on its own port and ignores these.
    metrics_port: int = Field(default=0, ge=0, le=65535)
    metrics_host: str = "127.0.0.1"

    @field_validator(
        "public_url",
        "telegram_api_url",
        "pagerduty_events_url",
        "twilio_api_url",
        "opsgenie_api_url",
        "pushover_api_url",
        "oidc_issuer",
    )
    @classmethod
    def _strip_slash(cls, value: str) -> str:
        return value.rstrip("/")

    @property  # not cached: a copy with another database_url must not keep this one's
    def sqlalchemy_url(self) -> str:
        url = self.database_url or f"sqlite:///{self.data_dir / 'upwatch.db'}"
        return async_database_url(url)

    @property
    def is_sqlite(self) -> bool:
        return self.sqlalchemy_url.startswith("sqlite")

    @property
    def smtp_configured(self) -> bool:
        return bool(self.smtp_host)

    @model_validator(mode="after")
    def _broker_reachable(self) -> Settings:
        if self.smtp_tls and self.smtp_starttls:
            raise ValueError(
                "UPWATCH_SMTP_TLS (implicit TLS, port 465) and UPWATCH_SMTP_STARTTLS (port 587) "
                "exclude each other: set one"
            )
        missing = (self.redis_url and _missing_extra("redis", "redis", "UPWATCH_REDIS_URL")) or (
            self.sqlalchemy_url.startswith("postgresql")
            and _missing_extra("asyncpg", "postgres", "a PostgreSQL UPWATCH_DATABASE_URL")
        )
        if missing:
            raise ValueError(missing)
        if self.broker == "redis" and not self.redis_url:
            raise ValueError("UPWATCH_BROKER=redis needs UPWATCH_REDIS_URL")
        if self.roles == "api" and not self.redis_url:
            raise ValueError(
                "UPWATCH_ROLES=api needs UPWATCH_REDIS_URL (monitor changes reach the "
                "scheduler through it)"
            )
        return self

    @model_validator(mode="after")
    def _single_sign_on(self) -> Settings:
        if self.signup == "sso" and not self.oidc_issuer:
            raise ValueError("UPWATCH_SIGNUP=sso needs UPWATCH_OIDC_ISSUER")
        if self.oidc_issuer:
            if not self.oidc_issuer.startswith(("https://", "http://")):
                raise ValueError("UPWATCH_OIDC_ISSUER must be an https:// (or http://) URL")
            if not self.oidc_client_id:
                raise ValueError("UPWATCH_OIDC_ISSUER needs UPWATCH_OIDC_CLIENT_ID")
            if "openid" not in self.oidc_scopes.split():
                raise ValueError("UPWATCH_OIDC_SCOPES must include openid")
        return self

    @property
    def sso_configured(self) -> bool:
        return bool(self.oidc_issuer)

    @field_validator("database_url")
    @classmethod
    def _parses(cls, value: str) -> str:
        if value:
            parsed_database_url(value)
        return value

    @field_validator("secret_key")
    @classmethod
    def _long_enough(cls, value: str) -> str:
        if value and len(value) < MIN_KEY_LENGTH:
            raise ValueError(f"UPWATCH_SECRET_KEY must be at least {MIN_KEY_LENGTH} characters")
        return value

    @cached_property
    def signing_key(self) -> str:
        """The JWT key: configured, or generated once and kept in the data directory."""
        if self.secret_key:
            return self.secret_key
        path = self.data_dir / "secret_key"
        if not path.exists():
            _private_directory(self.data_dir)
            # Written whole to a private temporary file, then linked into place: a process
            # starting at the same moment sees either no key or the complete one, and when
            # two race, the first link wins and both read it.
            fd, temporary = tempfile.mkstemp(dir=self.data_dir, prefix=".secret_key.")
            try:
                with os.fdopen(fd, "w") as handle:
                    handle.write(secrets.token_urlsafe(48))
                with contextlib.suppress(FileExistsError):
                    os.link(temporary, path)
            finally:
                os.unlink(temporary)
        key = path.read_text().strip()
        if len(key) < MIN_KEY_LENGTH:
            raise RuntimeError(f"{path} holds no usable key; delete it to generate a new one")
        return key

    def ensure_data_dir(self) -> None:
        """Before SQLite opens anything: the data directory exists, private to this user (0700),
        and so does the database file (0600). SQLite gives the ``-wal`` and ``-shm`` files it
        creates beside a database the database file's mode, so they are 0600 as well.

        An existing directory or file keeps the mode its operator chose (a backup group may
        need to read it); the log warns when other users can reach it.
        """
        if not self.is_sqlite:
            return
        _private_directory(self.data_dir)
        database = make_url(self.sqlalchemy_url).database
        if database and database != ":memory:" and not database.startswith("file:"):
            _private_file(Path(database))


def _private_directory(path: Path) -> None:
    try:
        path.mkdir(mode=0o700, parents=True)
    except FileExistsError:
        _warn_if_shared(path)
    else:
        path.chmod(0o700)  # whatever the umask took away


def _private_file(path: Path) -> None:
    """Create an empty file 0600 (SQLite takes an empty file for a new database)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        for existing in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
            if existing.exists():
                _warn_if_shared(existing)
    except FileNotFoundError:
        pass  # no such directory: connecting fails with SQLite's own message
    else:
        os.fchmod(fd, 0o600)
        os.close(fd)


_warned: set[Path] = set()  # each path once per process, however many engines open it


def _warn_if_shared(path: Path) -> None:
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077 and path not in _warned:
        _warned.add(path)
        private = "700" if path.is_dir() else "600"
        log.warning(
            "%s has mode %03o: other users of this machine can reach Upwatch's data "
            "(accounts, tokens, keys); consider chmod %s %s",
            path,
            mode,
            private,
            path,
        )
