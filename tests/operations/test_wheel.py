"""The package as people install it: the wheel built from the checkout, installed into a fresh
venv outside it, serving from another directory. A template, a static file or a migration left
out of the package fails here, not on a user's machine."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import PASSWORD
from tests.factories import bearer
from tests.live_server import LiveServer, clean_env

# Long, and needs no test database: run in the shorter lane (scripts/test).
pytestmark = [pytest.mark.db_independent, pytest.mark.second_lane]

ROOT = Path(__file__).resolve().parents[2]
# Building and installing take a registry's time, not the code's (a bound, not a speed).
INSTALL_SECONDS = float(os.environ.get("UPWATCH_TEST_INSTALL_SECONDS", "600"))


def run(*command: str | Path, cwd: Path) -> str:
    done = subprocess.run(  # noqa: S603
        [str(part) for part in command],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=INSTALL_SECONDS,
        env={k: v for k, v in os.environ.items() if not k.startswith(("UPWATCH_", "VIRTUAL_ENV"))},
        check=False,
    )
    assert done.returncode == 0, f"{command}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", out, ROOT, cwd=out)
    (built,) = out.glob("upwatch-*.whl")
    return built


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel with every extra and its dependencies from the registry, installed as
    docs/install.md says: by pipx (.ci/run installs it), else into a fresh venv by pip (the
    systemd path). Its ``upwatch``."""
    home = tmp_path_factory.mktemp("installed")
    pipx = shutil.which("pipx")
    if pipx is not None:
        run(
            "env",
            f"PIPX_HOME={home / 'pipx'}",
            f"PIPX_BIN_DIR={home / 'bin'}",
            pipx,
            "install",
            "--python",
            sys.executable,
            f"./{wheel.name}[all]",
            cwd=wheel.parent,
        )
        return home / "pipx" / "venvs" / "upwatch" / "bin" / "upwatch"
    run(sys.executable, "-m", "venv", home / "venv", cwd=home)
    pip = home / "venv" / "bin" / "pip"
    run(pip, "install", "--disable-pip-version-check", "--quiet", f"{wheel}[all]", cwd=home)
    return home / "venv" / "bin" / "upwatch"


@pytest.fixture(scope="module")
def server(installed: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    live = LiveServer(elsewhere, clean_env(), executable=str(installed)).start()
    yield live
    live.stop()


def test_the_wheel_carries_every_file_the_package_reads(wheel: Path) -> None:
    tracked = subprocess.run(
        ["git", "ls-files", "upwatch"],  # noqa: S607
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    if not tracked:
        pytest.skip("not a git checkout: the tracked files cannot be listed")
    data = {path for path in tracked if not path.endswith(".py")}
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        metadata = next(n for n in names if n.endswith(".dist-info/METADATA"))
        fields = archive.read(metadata).decode()
    assert data - names == set()
    assert {path for path in tracked if path.endswith(".py")} - names == set()
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert "License-Expression: AGPL-3.0-or-later" in fields
    for extra in ("postgres", "redis", "client"):
        assert f"Provides-Extra: {extra}" in fields


def test_the_installed_package_runs_from_its_own_files_not_the_checkout(installed: Path) -> None:
    python = installed.parent / "python"
    where = run(python, "-c", "import upwatch; print(upwatch.__file__)", cwd=installed.parent)
    assert ROOT not in Path(where.strip()).parents
    version = run(installed, "--version", cwd=installed.parent)
    from upwatch import __version__

    assert version.strip() == f"upwatch {__version__}"


def test_upwatch_serve_from_the_wheel_migrates_and_answers_the_console_a_status_page_and_the_docs(
    server: LiveServer,
) -> None:
    # Configured by the environment alone (UPWATCH_PORT, UPWATCH_LOG_LEVEL), started elsewhere.
    assert (server.cwd / "data" / "upwatch.db").is_file()
    with httpx.Client(base_url=server.url, timeout=30) as api:
        login = api.get("/app/login")
        assert login.status_code == 200
        assert "Sign in" in login.text
        css = api.get("/app/static/console.css")
        assert css.status_code == 200, "the console's static files are missing"
        assert api.get("/docs").status_code == 200
        signup = api.post("/auth/signup", json={"email": "wheel@example.com", "password": PASSWORD})
        headers = bearer(signup, 201)
        project = api.post("/projects", headers=headers, json={"name": "Shop"}).json()["id"]
        page = api.post(
            "/status-pages",
            headers=headers,
            json={"projectId": project, "name": "Shop", "slug": "shop-status"},
        )
        assert page.status_code == 201, page.text
        public = api.get("/s/shop-status")
        assert public.status_code == 200
        assert "Shop" in public.text
        assert api.get("/s/shop-status/badge.svg").status_code == 200
