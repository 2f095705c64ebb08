"""PostgreSQL probe: log in with the monitor's connection URL and run ``SELECT 1``."""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any

from pydantic import model_validator

from upwatch.kit.inputs import Input
from upwatch.kit.languages import N_
from upwatch.kit.net import NetworkGuard, TargetRefused
from upwatch.probes.connect import CONNECT_ERRORS, CheckClock
from upwatch.probes.databases import Target, reach, refused, scrubbed, unreached, up, url_type
from upwatch.probes.kind import FormField, MonitorKind
from upwatch.probes.outcome import ErrorKind, Outcome
from upwatch.probes.probe import ProbeKit
from upwatch.probes.spec import CheckSpec

DEFAULT_PORT = 5432
SCHEMES = ("postgresql", "postgres")
# verify-ca and verify-full are left out: asyncpg checks the certificate against the address it
# connects to, and the probe connects to the vetted address, not to the name.
SSL_MODES = ("disable", "allow", "prefer", "require")


async def probe_postgres(url: str, timeout_seconds: float, guard: NetworkGuard) -> Outcome:
    """Connect to the vetted address of the URL's host and run ``SELECT 1``."""
    # Imported when a check runs: the probe worker process holds only the libraries its
    # monitors use (docs/architecture.md, "The probe worker's imports").
    import asyncpg

    target = Target.parse(url, DEFAULT_PORT)
    user = target.user or "postgres"
    clock = CheckClock()
    connection: Any = None

    def attempt(address: str) -> Any:
        # Every value given, so asyncpg reads nothing from the worker's environment or
        # ~/.pgpass (an empty password, not None, keeps the worker's own from being sent).
        return asyncpg.connect(
            host=address,
            port=target.port,
            user=user,
            password=target.password or "",
            database=target.database or user,
            ssl=target.query.get("sslmode", "prefer"),
            timeout=timeout_seconds,
        )

    try:
        async with asyncio.timeout(timeout_seconds):
            connection, address = await reach(target, guard, clock, attempt)
            await connection.fetchval("SELECT 1")
            version = str(connection.get_settings().server_version).split()[0]
    except (*CONNECT_ERRORS, TargetRefused) as exc:
        return scrubbed(unreached(exc, clock, timeout_seconds), target)
    except (asyncpg.InvalidPasswordError, asyncpg.InvalidAuthorizationSpecificationError) as exc:
        return scrubbed(refused(ErrorKind.AUTH, f"authentication failed: {exc}", clock), target)
    except asyncpg.PostgresError as exc:
        return scrubbed(refused(ErrorKind.DATABASE, f"the server said: {exc}", clock), target)
    except (asyncpg.InterfaceError, asyncpg.exceptions.InternalClientError) as exc:
        message = f"not a PostgreSQL server: {exc}"
        return scrubbed(refused(ErrorKind.PROTOCOL, message, clock), target)
    finally:
        if connection is not None:
            connection.terminate()
    return up(clock, {"address": address, "serverVersion": version})


class PostgresProbe:
    async def check(self, spec: CheckSpec, kit: ProbeKit, now: datetime) -> Outcome:
        assert spec.url is not None
        return await probe_postgres(spec.url, spec.timeout_seconds, kit.guard)


class PostgresConfig(Input):
    url: url_type(SCHEMES, "postgresql://monitor:secret@db.example.com:5432/app")  # type: ignore[valid-type]

    @model_validator(mode="after")
    def _known_sslmode(self) -> PostgresConfig:
        mode = Target.parse(self.url, DEFAULT_PORT).query.get("sslmode", "prefer")
        if mode not in SSL_MODES:
            raise ValueError(f"sslmode must be one of {', '.join(SSL_MODES)}")
        return self


KIND = MonitorKind(
    name="postgres",
    label=N_("PostgreSQL"),
    rank=13,
    config=PostgresConfig,
    probe=PostgresProbe(),
    form=(
        FormField(
            "url", N_("Connection URL"), hint="e.g. postgresql://monitor:secret@db.example.com/app"
        ),
    ),
    url_password_secret=True,
    url_schemes=SCHEMES,
)
