"""Mail servers on loopback for the smtp, imap and pop3 monitor types: aiosmtpd on the test's
own event loop, and Debian's dovecot as a subprocess with a config of the test's own."""

from __future__ import annotations

import asyncio
import getpass
import os
import pwd
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

import pytest
import trustme
from aiosmtpd.smtp import SMTP, AuthResult, LoginPassword

USER = "alice"
PASSWORD = 's3cret-Pw"x\\y'  # a quote and a backslash: IMAP must quote them
TlsMode = Literal["starttls", "implicit", "none"]

# Debian puts it in /usr/sbin, outside a user's PATH.
_DOVECOT = shutil.which("dovecot", path=f"{os.environ.get('PATH', '')}{os.pathsep}/usr/sbin")
NO_DOVECOT = "dovecot is not installed (apt-get install dovecot-imapd dovecot-pop3d)"


def server_context(ca: trustme.CA, not_after: datetime | None = None) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1", "localhost", not_after=not_after).configure_cert(context)
    return context


class _Accounts:
    async def handle_DATA(self, server: SMTP, session: Any, envelope: Any) -> str:  # noqa: N802
        return "250 OK"


def _authenticate(
    server: SMTP, session: Any, envelope: Any, mechanism: str, data: Any
) -> AuthResult:
    ok = isinstance(data, LoginPassword) and (data.login, data.password) == (
        USER.encode(),
        PASSWORD.encode(),
    )
    return AuthResult(success=ok, handled=False)


@dataclass
class SmtpServers:
    """Starts aiosmtpd servers; stopped ones stop accepting at once."""

    ca: trustme.CA
    servers: list[asyncio.Server]

    async def start(self, tls: TlsMode = "starttls", not_after: datetime | None = None) -> int:
        context = server_context(self.ca, not_after)

        def session() -> SMTP:
            return SMTP(
                _Accounts(),
                hostname="mail.upwatch.test",
                tls_context=context if tls == "starttls" else None,
                require_starttls=tls == "starttls",
                authenticator=_authenticate,
                # Implicit TLS is TLS already, which aiosmtpd cannot see from the transport.
                auth_require_tls=tls == "starttls",
            )

        loop = asyncio.get_running_loop()
        server = await loop.create_server(
            session, "127.0.0.1", 0, ssl=context if tls == "implicit" else None
        )
        self.servers.append(server)
        return int(server.sockets[0].getsockname()[1])

    async def stop(self, port: int) -> None:
        for server in self.servers:
            if server.sockets and server.sockets[0].getsockname()[1] == port:
                server.close()  # new connections are refused from now on


@asynccontextmanager
async def smtp_servers_of(ca: trustme.CA) -> AsyncIterator[SmtpServers]:
    """aiosmtpd servers with certificates from ``ca``, all stopped on leaving."""
    servers = SmtpServers(ca, [])
    yield servers
    for server in servers.servers:
        server.close()
        await server.wait_closed()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Dovecot:
    """One dovecot with IMAP and POP3 listeners, plain and implicit TLS, on loopback."""

    home: Path
    ca: trustme.CA
    ports: dict[str, int]
    process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        assert _DOVECOT is not None
        leaf = self.ca.issue_cert("127.0.0.1", "localhost")
        leaf.private_key_pem.write_to_path(str(self.home / "key.pem"))
        leaf.cert_chain_pems[0].write_to_path(str(self.home / "cert.pem"))
        (self.home / "users").write_text(f"{USER}:{{PLAIN}}{PASSWORD}::::::\n")
        me = getpass.getuser()
        if os.getuid() == 0:
            # As root, dovecot runs its parts as its own users (login processes refuse root,
            # and so does a mail user): they read the files, so the home is readable by all.
            login_user, internal_user, chroot = "dovenull", "dovecot", "login"
            mail_user = pwd.getpwnam("nobody")
            uid, gid = mail_user.pw_uid, mail_user.pw_gid
            self.home.chmod(0o755)
            (self.home / "mail").mkdir()
            os.chown(self.home / "mail", uid, gid)
        else:
            # Anyone else: every part as the test's own user, without chroot (it needs root).
            login_user, internal_user, chroot = me, me, ""
            uid, gid = os.getuid(), os.getgid()
        listeners = {
            "imap-login": (("imap", "imap", False), ("imaps", "imaps", True)),
            "pop3-login": (("pop3", "pop3", False), ("pop3s", "pop3s", True)),
        }
        services = "\n".join(
            f"service {service} {{\n  chroot = {chroot}\n"
            + "".join(
                f"  inet_listener {name} {{\n    port = {self.ports[key]}\n"
                f"    ssl = {'yes' if secure else 'no'}\n  }}\n"
                for name, key, secure in found
            )
            + "}"
            for service, found in listeners.items()
        )
        (self.home / "dovecot.conf").write_text(
            f"""protocols = imap pop3
listen = 127.0.0.1
base_dir = {self.home}/run
state_dir = {self.home}/state
log_path = /dev/stderr
default_login_user = {login_user}
default_internal_user = {internal_user}
first_valid_uid = 1
ssl = yes
ssl_cert = <{self.home}/cert.pem
ssl_key = <{self.home}/key.pem
auth_mechanisms = plain login
# A wrong password is answered at once, not after the usual two seconds.
auth_failure_delay = 0
passdb {{
  driver = passwd-file
  args = scheme=PLAIN username_format=%u {self.home}/users
}}
userdb {{
  driver = static
  args = uid={uid} gid={gid} home={self.home}/mail/%u
}}
mail_location = maildir:{self.home}/mail/%u
{services}
"""
        )
        with (self.home / "dovecot.log").open("wb") as log:
            self.process = subprocess.Popen(  # noqa: S603 - the test's own config
                [_DOVECOT, "-F", "-c", str(self.home / "dovecot.conf")],
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    async def wait_ready(self) -> None:
        """Until every listener accepts (or dovecot died, with its log)."""
        for port in self.ports.values():
            async with asyncio.timeout(30):
                while not await _accepts(port):
                    if self.process is not None and self.process.poll() is not None:
                        log = (self.home / "dovecot.log").read_text(errors="replace")
                        raise RuntimeError(f"dovecot exited: {log}")
                    await asyncio.sleep(0.05)

    async def stop(self) -> None:
        """At once: dovecot's own shutdown waits seconds for its processes, and a test has
        nothing to keep. Its processes are a group of their own (``start``), killed whole;
        done once no port accepts (a dying child may hold a listener a moment longer)."""
        if self.process is None:
            return
        os.killpg(self.process.pid, signal.SIGKILL)
        await asyncio.to_thread(self.process.wait)
        self.process = None
        for port in self.ports.values():
            async with asyncio.timeout(30):
                while True:
                    if not await _accepts(port):
                        break
                    await asyncio.sleep(0.02)


async def _accepts(port: int) -> bool:
    try:
        _reader, writer = await asyncio.open_connection("127.0.0.1", port)
    except OSError:
        return False
    writer.close()
    await writer.wait_closed()
    return True


@asynccontextmanager
async def running_dovecot(ca: trustme.CA) -> AsyncIterator[Dovecot]:
    """A dovecot ready on free ports; without dovecot the test is skipped (or fails, with
    ``UPWATCH_REQUIRE_DOVECOT=1``).

    Its files are in a directory of its own under the system's temporary directory, not in
    pytest's ``tmp_path``: that one is private to the test's user, which dovecot's own users
    (when the tests run as root) cannot enter."""
    if _DOVECOT is None:
        if os.environ.get("UPWATCH_REQUIRE_DOVECOT") == "1":  # as in CI
            pytest.fail(NO_DOVECOT)
        pytest.skip(NO_DOVECOT)
    with tempfile.TemporaryDirectory(prefix="upwatch-dovecot-") as home:
        ports = {key: free_port() for key in ("imap", "imaps", "pop3", "pop3s")}
        server = Dovecot(Path(home), ca, ports)
        server.start()
        try:
            await server.wait_ready()
            yield server
        finally:
            await server.stop()
