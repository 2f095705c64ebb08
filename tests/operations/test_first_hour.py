"""What a new self-hoster meets first: the command line, the public URL, the API document."""

from __future__ import annotations

import logging
import os
import pty
import re
from pathlib import Path

import httpx
import pytest

from tests.conftest import PASSWORD
from tests.live_server import UPWATCH, LiveServer, clean_env, run_cli
from upwatch import __version__
from upwatch.cli import serve_settings


def test_upwatch_version_prints_the_version() -> None:
    result = run_cli(Path.cwd(), clean_env(), "--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"upwatch {__version__}"


def test_admin_create_takes_the_password_from_the_environment_and_prints_no_migration_steps(
    tmp_path: Path,
) -> None:
    env = clean_env(UPWATCH_ADMIN_PASSWORD=PASSWORD)
    result = run_cli(tmp_path, env, "admin", "create", "--email", "root@example.com")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "created admin root@example.com"
    assert "alembic" not in result.stderr
    assert "Running upgrade" not in result.stderr


def test_admin_create_names_the_field_in_its_errors(tmp_path: Path) -> None:
    short = run_cli(
        tmp_path, clean_env(), "admin", "create", "--email", "a@example.com", "--password", "short"
    )
    assert short.returncode == 2
    assert short.stderr.startswith("error: password: ")
    assert "8 characters" in short.stderr
    bad_email = run_cli(
        tmp_path, clean_env(), "admin", "create", "--email", "nobody", "--password", PASSWORD
    )
    assert bad_email.returncode == 2
    assert bad_email.stderr.startswith("error: email: ")


def test_admin_create_without_a_password_or_a_terminal_says_where_to_give_one(
    tmp_path: Path,
) -> None:
    result = run_cli(tmp_path, clean_env(), "admin", "create", "--email", "a@example.com")
    assert result.returncode == 2
    assert "UPWATCH_ADMIN_PASSWORD" in result.stderr


def _read_until(fd: int, marker: bytes, seen: bytearray) -> None:
    while marker not in seen:
        chunk = os.read(fd, 1024)
        if not chunk:
            raise AssertionError(f"no {marker!r} in {bytes(seen)!r}")
        seen.extend(chunk)


def test_admin_create_asks_for_the_password_twice_at_a_terminal(tmp_path: Path) -> None:
    env = clean_env()
    pid, terminal = pty.fork()
    if pid == 0:  # the child: the command, with the pseudo-terminal as its terminal
        os.chdir(tmp_path)
        os.execve(UPWATCH, [UPWATCH, "admin", "create", "--email", "root@example.com"], env)  # noqa: S606
    seen = bytearray()
    try:
        _read_until(terminal, b"Password: ", seen)
        os.write(terminal, PASSWORD.encode() + b"\n")
        _read_until(terminal, b"Password again: ", seen)
        os.write(terminal, PASSWORD.encode() + b"\n")
        _read_until(terminal, b"created admin root@example.com", seen)
    finally:
        _, status = os.waitpid(pid, 0)
        os.close(terminal)
    assert os.waitstatus_to_exitcode(status) == 0
    assert PASSWORD.encode() not in seen  # not echoed


def test_the_public_url_follows_the_port_serve_binds_when_it_is_not_set(tmp_path: Path) -> None:
    server = LiveServer(tmp_path, clean_env()).start()
    try:
        signup = httpx.post(
            f"{server.url}/auth/signup", json={"email": "alice@example.com", "password": PASSWORD}
        )
        headers = {"Authorization": f"Bearer {signup.json()['access_token']}"}
        project = httpx.post(f"{server.url}/projects", headers=headers, json={"name": "Jobs"})
        monitor = httpx.post(
            f"{server.url}/monitors",
            headers=headers,
            json={"projectId": project.json()["id"], "name": "Backup", "type": "heartbeat"},
        )
        assert monitor.status_code == 201, monitor.text
        assert monitor.json()["heartbeatUrl"].startswith(f"{server.url}/heartbeat/")
    finally:
        server.stop()


def test_serve_names_its_migrations_not_alembics_plugins_and_warns_of_a_shared_directory_once(
    tmp_path: Path,
) -> None:
    shared = tmp_path / "data"
    shared.mkdir(mode=0o755)
    shared.chmod(0o755)
    server = LiveServer(tmp_path, clean_env(UPWATCH_DATA_DIR=str(shared)), log_level="info")
    server.start().stop()
    log = server.log.read_text()
    assert "Running upgrade" in log
    assert "setup plugin" not in log
    assert log.count(f"{shared} has mode 755") == 1, log


def test_serve_at_log_level_warning_writes_no_info_lines(tmp_path: Path) -> None:
    server = LiveServer(tmp_path, clean_env(), log_level="warning")
    server.start().stop()
    log = server.log.read_text()
    assert "ready on" not in log
    assert " INFO " not in log, log


def test_a_wrong_setting_is_named_by_its_variable_and_help_still_answers(tmp_path: Path) -> None:
    env = clean_env(UPWATCH_LOG_FORMAT="xml")
    assert run_cli(tmp_path, env, "--help").returncode == 0
    result = run_cli(tmp_path, env, "migrate")
    assert result.returncode == 2
    assert result.stderr.startswith("upwatch: UPWATCH_LOG_FORMAT: "), result.stderr
    assert "Traceback" not in result.stderr


def test_serve_warns_once_when_the_public_url_is_unset_and_the_host_is_not_loopback(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("UPWATCH_PUBLIC_URL", raising=False)
    monkeypatch.chdir(Path(__file__).parent)  # no .env file here
    with caplog.at_level(logging.WARNING):
        assert serve_settings("127.0.0.1", 8765).public_url == "http://127.0.0.1:8765"
        assert serve_settings("::1", 8765).public_url == "http://[::1]:8765"
        assert not caplog.records
        wildcard = serve_settings("0.0.0.0", 8765)  # noqa: S104
    assert re.fullmatch(r"http://[^/:]+:8765", wildcard.public_url)
    [warning] = caplog.records
    assert "UPWATCH_PUBLIC_URL" in warning.getMessage()

    monkeypatch.setenv("UPWATCH_PUBLIC_URL", "https://status.example.com")
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        assert serve_settings("0.0.0.0", 8765).public_url == "https://status.example.com"  # noqa: S104
    assert not caplog.records


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
async def test_the_api_document_loads_nothing_from_outside_the_service(
    page: str, tmp_path: Path
) -> None:
    from upwatch.app import create_app
    from upwatch.config import Settings

    app = create_app(Settings(_env_file=None, data_dir=tmp_path, secret_key="k" * 40))  # type: ignore[call-arg]
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://upwatch.test") as client:
        html = (await client.get(page)).text
        assert not re.findall(r"(?:https?:)?//[\w.-]+", html), "an address outside the service"
        assets = re.findall(r'(?:src|href)="([^"]+)"', html)
        assert assets
        for asset in assets:
            assert asset.startswith("/docs/assets/")
            assert (await client.get(asset)).status_code == 200
    if page == "/docs":
        assert '"validatorUrl": null' in html  # no badge from the public validator


def test_scripts_serve_skips_the_install_when_the_dependencies_did_not_change(
    tmp_path: Path,
) -> None:
    """The install itself needs the package index; what is checked here is that a restart
    does not pay for it, and that each phase says what it does."""
    import hashlib
    import shutil
    import signal
    import subprocess
    import sys
    import time

    from tests.conftest import free_port

    root = Path(__file__).resolve().parents[2]
    (tmp_path / "scripts").mkdir()
    for script in ("serve", "install"):
        shutil.copy2(root / "scripts" / script, tmp_path / "scripts" / script)
    shutil.copy2(root / "pyproject.toml", tmp_path / "pyproject.toml")
    venv = tmp_path / ".venv"
    venv.mkdir()
    (venv / "bin").symlink_to(Path(sys.executable).parent)
    digest = hashlib.sha256((root / "pyproject.toml").read_bytes()).hexdigest()
    (venv / "upwatch-installed").write_text(f"{digest} dev\n")  # as scripts/test leaves it

    port = free_port()
    output = tmp_path / "serve.out"
    with output.open("wb") as sink:
        process = subprocess.Popen(  # noqa: S603
            ["/bin/bash", str(tmp_path / "scripts" / "serve"), "--port", str(port)],
            cwd=tmp_path,
            env=clean_env(),
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 60
        while not _ready(port):
            assert process.poll() is None, output.read_text()
            assert time.monotonic() < deadline, output.read_text()
            time.sleep(0.1)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=15)
    lines = output.read_text().splitlines()
    assert lines[0] == "== dependencies unchanged since the last install"
    assert lines[1].startswith(f"== starting upwatch serve --port {port}")
    assert "installing" not in output.read_text()


def _ready(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=1).status_code == 200
    except httpx.TransportError:
        return False
