"""Settings the way containers and service managers give them: secrets in files named by
``UPWATCH_<NAME>_FILE``, the address and log level by environment, SMTP over implicit TLS."""

from __future__ import annotations

import os
import ssl
import subprocess
from collections.abc import Iterator
from email.message import EmailMessage
from pathlib import Path

import pytest
import trustme
from aiosmtpd.controller import Controller

from tests.conftest import Mailbox, free_port
from tests.live_server import COMMAND_SECONDS, UPWATCH, clean_env
from upwatch.config import SECRET_SETTINGS, Settings, SettingsProblem
from upwatch.mail.sender import SmtpTransport


@pytest.fixture
def bare_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No UPWATCH_* variable and no .env file of the machine's reach these settings."""
    for name in list(os.environ):
        if name.startswith("UPWATCH_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)


@pytest.mark.usefixtures("bare_environment")
def test_every_secret_setting_is_read_from_the_file_its_FILE_variable_names(  # noqa: N802
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    values = {
        "database_url": "postgresql://upwatch:pw@db.internal/upwatch",
        "redis_url": "redis://:pw@cache.internal:6379/0",
        "secret_key": "k" * 40,
        "smtp_username": "mailer",
        "smtp_password": "s3cret with spaces ",
        "metrics_token": "scrape-token",
        "oidc_client_secret": "client-secret",
    }
    assert set(values) == set(SECRET_SETTINGS)
    for name, value in values.items():
        path = tmp_path / name
        path.write_text(value + "\n")  # as an editor or `echo` leaves it
        monkeypatch.setenv(f"UPWATCH_{name.upper()}_FILE", str(path))
    settings = Settings()
    for name, value in values.items():
        assert getattr(settings, name) == value


@pytest.mark.usefixtures("bare_environment")
def test_a_secret_given_both_in_the_environment_and_in_a_file_is_refused_by_name(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "key").write_text("f" * 40)
    monkeypatch.setenv("UPWATCH_SECRET_KEY", "e" * 40)
    monkeypatch.setenv("UPWATCH_SECRET_KEY_FILE", str(tmp_path / "key"))
    with pytest.raises(SettingsProblem, match="UPWATCH_SECRET_KEY or UPWATCH_SECRET_KEY_FILE"):
        Settings()


def test_an_unreadable_secret_file_stops_the_command_with_a_line_that_names_it(
    tmp_path: Path,
) -> None:
    env = clean_env(UPWATCH_SMTP_PASSWORD_FILE=str(tmp_path / "missing"))
    done = subprocess.run(  # noqa: S603
        [UPWATCH, "migrate"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=COMMAND_SECONDS,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"upwatch: UPWATCH_SMTP_PASSWORD_FILE: cannot read {tmp_path / 'missing'}: "
        "No such file or directory"
    )


@pytest.mark.usefixtures("bare_environment")
def test_the_address_and_log_level_come_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from upwatch.cli import serve_settings

    monkeypatch.setenv("UPWATCH_HOST", "::1")
    monkeypatch.setenv("UPWATCH_PORT", "8080")
    monkeypatch.setenv("UPWATCH_LOG_LEVEL", "warning")
    settings = serve_settings()
    assert (settings.host, settings.port, settings.log_level) == ("::1", 8080, "warning")
    assert settings.public_url == "http://[::1]:8080"
    flagged = serve_settings("127.0.0.1", 9000)  # flags win
    assert (flagged.host, flagged.port) == ("127.0.0.1", 9000)
    monkeypatch.setenv("UPWATCH_PORT", "70000")
    with pytest.raises(ValueError, match="port"):
        Settings()


def test_implicit_tls_and_starttls_together_are_refused_naming_both(tmp_path: Path) -> None:
    done = subprocess.run(  # noqa: S603
        [UPWATCH, "migrate"],
        cwd=tmp_path,
        env=clean_env(UPWATCH_SMTP_TLS="true", UPWATCH_SMTP_STARTTLS="true"),
        capture_output=True,
        text=True,
        timeout=COMMAND_SECONDS,
        check=False,
    )
    assert done.returncode == 2
    assert "UPWATCH_SMTP_TLS" in done.stderr
    assert "UPWATCH_SMTP_STARTTLS" in done.stderr
    assert "Value error" not in done.stderr


@pytest.fixture
def smtps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[int, Mailbox]]:
    """A real SMTP server speaking TLS from the first byte (SMTPS), with a certificate of a
    test authority the client trusts through SSL_CERT_FILE, as an operator's private one."""
    authority = trustme.CA()
    authority_file = tmp_path / "ca.pem"
    authority.cert_pem.write_to_path(str(authority_file))
    monkeypatch.setenv("SSL_CERT_FILE", str(authority_file))
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    authority.issue_cert("127.0.0.1").configure_cert(context)
    mailbox = Mailbox()
    port = free_port()
    controller = Controller(mailbox, hostname="127.0.0.1", port=port, ssl_context=context)
    controller.start()
    yield port, mailbox
    controller.stop()


async def test_mail_goes_out_over_implicit_tls(smtps: tuple[int, Mailbox], tmp_path: Path) -> None:
    port, mailbox = smtps
    settings = Settings(data_dir=tmp_path, smtp_host="127.0.0.1", smtp_port=port, smtp_tls=True)
    email = EmailMessage()
    email["From"] = "upwatch@example.com"
    email["To"] = "ops@example.com"
    email["Subject"] = "over TLS"
    email.set_content("sent over SMTPS")
    await SmtpTransport(settings).send_email(email)
    (received,) = mailbox.to("ops@example.com")
    assert received["Subject"] == "over TLS"


@pytest.mark.usefixtures("bare_environment")
def test_a_setting_that_needs_a_missing_extra_names_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import importlib.util

    found = importlib.util.find_spec
    absent = {"asyncpg", "redis"}
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name in absent else found(name, *a)
    )
    monkeypatch.setenv("UPWATCH_DATABASE_URL", "postgresql://upwatch@db.internal/upwatch")
    with pytest.raises(ValueError, match=r"pip install 'upwatch\[postgres\]'"):
        Settings()
    monkeypatch.delenv("UPWATCH_DATABASE_URL")
    monkeypatch.setenv("UPWATCH_REDIS_URL", "redis://cache.internal:6379/0")
    with pytest.raises(ValueError, match=r"pip install 'upwatch\[redis\]'"):
        Settings()


@pytest.mark.usefixtures("bare_environment")
def test_a_FILE_variable_in_the_env_file_is_read_like_one_in_the_environment(  # noqa: N802
    tmp_path: Path,
) -> None:
    (tmp_path / "dburl").write_text("postgresql://upwatch@db.internal/upwatch\n")
    (tmp_path / ".env").write_text(f"UPWATCH_DATABASE_URL_FILE={tmp_path / 'dburl'}\n")
    assert Settings().database_url == "postgresql://upwatch@db.internal/upwatch"


@pytest.mark.usefixtures("bare_environment")
def test_a_secret_file_that_is_not_text_and_a_broken_url_are_refused_without_their_contents(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "key").write_bytes(b"\xff\xfe" + b"k" * 40)
    monkeypatch.setenv("UPWATCH_SECRET_KEY_FILE", str(tmp_path / "key"))
    with pytest.raises(SettingsProblem, match="is not UTF-8 text"):
        Settings()
    monkeypatch.delenv("UPWATCH_SECRET_KEY_FILE")
    # An unescaped "@" in the password: the parse breaks inside it.
    monkeypatch.setenv("UPWATCH_DATABASE_URL", "postgresql://u:p@ss:Hunter2@127.0.0.1:5432/db")
    with pytest.raises(ValueError, match="percent-encoded") as refused:
        Settings()
    assert "Hunter2" not in str(refused.value)
