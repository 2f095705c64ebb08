"""MySQL/MariaDB probe: log in with the monitor's connection URL and run ``SELECT 1``."""

from __future__ import annotations

import asyncio
import ssl
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

DEFAULT_PORT = 3306
SCHEMES = ("mysql", "mariadb")
_TRUE, _FALSE = ("true", "1", "yes"), ("false", "0", "no")
# Server error codes: access denied (1044, 1045, 1698) and unknown database (1049).
_AUTH_CODES = {1044, 1045, 1698}
_CONNECT_CODE = 2003  # asyncmy's "can't connect", wrapping the OSError


def _tls() -> ssl.SSLContext:
    # Encrypted, not verified: the probe connects to the vetted address, and a certificate
    # names the host, not the address.
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


async def probe_mysql(url: str, timeout_seconds: float, guard: NetworkGuard) -> Outcome:
    """Connect to the vetted address of the URL's host and run ``SELECT 1``."""
    # Imported when a check runs: the probe worker process holds only the libraries its
    # monitors use (docs/architecture.md, "The probe worker's imports").
    import asyncmy
    from asyncmy.errors import MySQLError

    target = Target.parse(url, DEFAULT_PORT)
    wants_tls = target.query.get("ssl", "false").lower() in _TRUE
    clock = CheckClock()
    connection: Any = None

    def attempt(address: str) -> Any:
        return asyncmy.connect(
            host=address,
            port=target.port,
            user=target.user or "root",
            password=target.password or "",
            database=target.database,
            ssl=_tls() if wants_tls else None,
            connect_timeout=timeout_seconds,
        )

    try:
        async with asyncio.timeout(timeout_seconds):
            try:
                connection, address = await reach(target, guard, clock, attempt)
            except MySQLError as exc:
                cause = exc.__cause__
                if exc.args and exc.args[0] == _CONNECT_CODE and isinstance(cause, OSError):
                    raise cause from None
                raise
            async with connection.cursor() as cursor:
                await cursor.execute("SELECT 1")
                await cursor.fetchone()
            version = connection.get_server_info()
    except (*CONNECT_ERRORS, TargetRefused) as exc:
        return scrubbed(unreached(exc, clock, timeout_seconds), target)
    except MySQLError as exc:
        code = exc.args[0] if exc.args else None
        said = exc.args[1] if len(exc.args) > 1 else str(exc)
        if code in _AUTH_CODES:
            outcome = refused(ErrorKind.AUTH, f"authentication failed: {said}", clock)
        elif isinstance(code, int) and code < 2000:
            # Below 2000 are the server's own errors; from 2000 the client's.
            outcome = refused(ErrorKind.DATABASE, f"the server said: {said}", clock)
        else:
            outcome = refused(ErrorKind.PROTOCOL, f"not a MySQL server: {said}", clock)
        return scrubbed(outcome, target)
    finally:
        if connection is not None:
            connection.close()
    return up(clock, {"address": address, "serverVersion": str(version)})


class MysqlProbe:
    async def check(self, spec: CheckSpec, kit: ProbeKit, now: datetime) -> Outcome:
        assert spec.url is not None
        return await probe_mysql(spec.url, spec.timeout_seconds, kit.guard)


class MysqlConfig(Input):
    url: url_type(SCHEMES, "mysql://monitor:secret@db.example.com:3306/app?ssl=true")  # type: ignore[valid-type]

    @model_validator(mode="after")
    def _known_ssl(self) -> MysqlConfig:
        given = Target.parse(self.url, DEFAULT_PORT).query.get("ssl", "false").lower()
        if given not in _TRUE + _FALSE:
            raise ValueError("ssl must be true or false")
        return self


KIND = MonitorKind(
    name="mysql",
    label=N_("MySQL / MariaDB"),
    rank=14,
    config=MysqlConfig,
    probe=MysqlProbe(),
    form=(
        FormField(
            "url", N_("Connection URL"), hint="e.g. mysql://monitor:secret@db.example.com/app"
        ),
    ),
    url_password_secret=True,
    url_schemes=SCHEMES,
)
