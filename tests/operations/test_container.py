"""The container image (Dockerfile) as self-hosters run it: built with Podman on the local
stand-in for python:3.x-slim (scripts/container-base; no registry is reachable here), started
with nothing but a named volume, serving what its wheel carries, as a user other than root,
with a healthcheck, and keeping accounts and projects in the volume across a restart.

Needs root and Podman. Without them these tests skip and say why, unless
UPWATCH_REQUIRE_CONTAINER=1 (CI): then scripts/container-base installs a missing Podman from
Debian's packages, and whatever still cannot run fails instead. Each step (the base images,
the build, a start) is bounded by UPWATCH_TEST_CONTAINER_SECONDS. The images stay for the next
run, which builds from the cache: only the layers of the project's own code when only it
changed. The compose.yaml tests at the end need no Podman.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.conftest import PASSWORD, free_port
from tests.factories import bearer
from upwatch.cli import parser

ROOT = Path(__file__).resolve().parents[2]
REQUIRED = os.environ.get("UPWATCH_REQUIRE_CONTAINER") == "1"
STEP_SECONDS = float(os.environ.get("UPWATCH_TEST_CONTAINER_SECONDS", "300"))
CONTAINER_DIR = Path(os.environ.get("UPWATCH_CONTAINER_DIR", "/var/cache/upwatch-containers"))
BASE_IMAGE = "localhost/python:3.11-slim"
IMAGE = "localhost/upwatch:test"

# The base images, the build and a start each take up to STEP_SECONDS in the first test.
# Long, and needs no test database: run in the shorter lane (scripts/test).
pytestmark = [
    pytest.mark.db_independent,
    pytest.mark.second_lane,
    pytest.mark.timeout(4 * STEP_SECONDS + 120),
]


def _unavailable() -> str | None:
    if not sys.platform.startswith("linux") or os.geteuid() != 0:
        return "the container tests need root on Linux (debootstrap and rootful podman)"
    if shutil.which("podman") is None and not REQUIRED:
        return (
            "podman is not installed (scripts/container-base installs it from Debian's "
            "packages; UPWATCH_REQUIRE_CONTAINER=1 does so)"
        )
    return None


def _podman_env() -> dict[str, str]:
    return {**os.environ, "CONTAINERS_CONF": str(CONTAINER_DIR / "containers.conf")}


def podman(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(  # noqa: S603
        ["podman", *args],  # noqa: S607
        env=_podman_env(),
        capture_output=True,
        text=True,
        timeout=STEP_SECONDS,
        check=False,
    )
    if check and done.returncode != 0:
        raise AssertionError(f"podman {' '.join(args)}: {done.stderr.strip()[-3000:]}")
    return done


def _host_index_arguments() -> list[str]:
    """The host's package index for pip in the build, when it has one a container can reach:
    an http(s) index from PIP_INDEX_URL, PIP_EXTRA_INDEX_URL or pip's configuration (not the
    file:// indexes of a machine's own disk, which are not inside the build)."""
    listed = subprocess.run(
        [sys.executable, "-m", "pip", "config", "list"],
        capture_output=True,
        text=True,
        timeout=STEP_SECONDS,
        check=False,
    ).stdout
    found = {
        (scope, option): value
        for scope, option, value in re.findall(
            r"^([^.\n]*)\.(index-url|extra-index-url)='([^']*)'$", listed, re.MULTILINE
        )
    }
    arguments = []
    for option, variable in (
        ("index-url", "PIP_INDEX_URL"),
        ("extra-index-url", "PIP_EXTRA_INDEX_URL"),
    ):
        # The environment over the files, as pip reads them.
        value = next(
            (
                found[scope, option]
                for scope in (":env:", "install", "global")
                if (scope, option) in found
            ),
            "",
        )
        urls = [url for url in value.split() if url.startswith(("https://", "http://"))]
        if urls:
            arguments += ["--build-arg", f"{variable}={' '.join(urls)}"]
    return arguments


def build_image() -> None:
    base = subprocess.run(  # noqa: S603
        [str(ROOT / "scripts" / "container-base")],
        env={**os.environ, "UPWATCH_CONTAINER_DIR": str(CONTAINER_DIR)},
        capture_output=True,
        text=True,
        timeout=STEP_SECONDS,
        check=False,
    )
    assert base.returncode == 0, f"scripts/container-base: {base.stdout}{base.stderr}"
    # The docker format keeps the HEALTHCHECK (the OCI format has none); the host's network
    # keeps netavark from adding iptables chains for a bridge.
    podman(
        "build",
        "--format",
        "docker",
        "--network",
        "host",
        "--build-arg",
        f"BASE_IMAGE={BASE_IMAGE}",
        *_host_index_arguments(),
        "-t",
        IMAGE,
        str(ROOT),
    )


@dataclass
class Container:
    name: str
    volume: str
    url: str

    def inspect(self) -> dict[str, object]:
        found: list[dict[str, object]] = json.loads(
            podman("container", "inspect", self.name).stdout
        )
        return found[0]

    def started_at(self) -> str:
        return podman("container", "inspect", "--format", "{{.State.StartedAt}}", self.name).stdout

    def logs(self) -> str:
        done = podman("logs", "--tail", "40", self.name, check=False)
        return done.stdout + done.stderr

    def wait_ready(self) -> None:
        """Until /readyz answers 200, failing at once with the logs if the container stops."""
        deadline = time.monotonic() + STEP_SECONDS
        with httpx.Client(timeout=5) as client:
            while True:
                try:
                    if client.get(f"{self.url}/readyz").status_code == 200:
                        return
                except httpx.TransportError:
                    pass
                state = self.inspect()["State"]
                assert isinstance(state, dict)
                if not state["Running"]:
                    raise AssertionError(f"the container stopped:\n{self.logs()}")
                if time.monotonic() > deadline:
                    raise AssertionError(f"not ready in {STEP_SECONDS:.0f} s:\n{self.logs()}")
                time.sleep(0.2)


@pytest.fixture(scope="module")
def container() -> Iterator[Container]:
    """The image, built (from the cache when only the code changed) and started with a named
    volume of its own at /data, on the host's network and a free port of 127.0.0.1."""
    reason = _unavailable()
    if reason:
        if REQUIRED:
            pytest.fail(f"{reason}; UPWATCH_REQUIRE_CONTAINER=1 makes this a failure")
        pytest.skip(reason)
    build_image()
    name = f"upwatch-test-{uuid.uuid4().hex[:12]}"
    port = free_port()
    running = Container(name, name, f"http://127.0.0.1:{port}")
    podman("volume", "create", running.volume)
    try:
        podman(
            "run",
            "--detach",
            "--name",
            name,
            "--network",
            "host",
            "--env",
            "UPWATCH_HOST=127.0.0.1",
            "--env",
            f"UPWATCH_PORT={port}",
            "--volume",
            f"{running.volume}:/data",
            IMAGE,
        )
        running.wait_ready()
        yield running
    finally:
        podman("rm", "--force", "--time", "10", name, check=False)
        podman("volume", "rm", "--force", running.volume, check=False)


def test_the_image_serves_the_console_and_the_api_docs_from_its_wheel(
    container: Container,
) -> None:
    with httpx.Client(base_url=container.url) as client:
        login = client.get("/app/login")
        assert login.status_code == 200, login.text
        assert login.headers["content-type"].startswith("text/html")
        assert "<form" in login.text
        # The page's stylesheet and script: the console's static files are in the wheel too.
        assets = re.findall(r'(?:href|src)="(/app/static/[^"]+)"', login.text)
        assert assets, login.text
        for asset in assets:
            assert client.get(asset).status_code == 200, asset
        docs = client.get("/docs")
        assert docs.status_code == 200
        assert "swagger" in docs.text.lower()


def test_the_service_in_the_container_runs_as_a_user_other_than_root(
    container: Container,
) -> None:
    uid = podman("exec", container.name, "id", "-u").stdout.strip()
    assert uid.isdigit()
    assert int(uid) != 0
    # Its data directory is its own and private: the volume took the image's /data.
    owner = podman("exec", container.name, "stat", "-c", "%u %a", "/data").stdout.split()
    assert owner == [uid, "700"]


def test_the_image_declares_a_healthcheck_that_passes_once_the_service_is_ready(
    container: Container,
) -> None:
    config = container.inspect()["Config"]
    assert isinstance(config, dict)
    test = config["Healthcheck"]["Test"]
    assert "/readyz" in " ".join(test)
    # Podman runs it on a systemd timer, absent here: run it now, as that timer would.
    assert podman("healthcheck", "run", container.name, check=False).returncode == 0
    state = container.inspect()["State"]
    assert isinstance(state, dict)
    assert state["Health"]["Status"] == "healthy"


def test_the_image_keeps_its_data_in_the_volume_across_a_restart(container: Container) -> None:
    email = "owner@example.com"
    with httpx.Client(base_url=container.url, timeout=30) as client:
        signup = client.post(
            "/auth/signup", json={"email": email, "password": PASSWORD, "firstName": "Olive"}
        )
        assert signup.status_code == 201, signup.text
        token = signup.json()["access_token"]
        created = client.post(
            "/projects",
            json={"name": "Payments", "description": "made before the restart"},
            headers={"Authorization": f"Bearer {token}"},
        )
        assert created.status_code == 201, created.text
        project = created.json()["id"]

        started = container.started_at()
        podman("restart", "--time", "30", container.name)
        assert container.started_at() != started  # a new process, on the same volume
        container.wait_ready()

        # The generated signing key stayed in the volume: a token from before still works.
        before = client.get("/projects", headers={"Authorization": f"Bearer {token}"})
        assert before.status_code == 200, before.text
        assert project in [p["id"] for p in before.json()]

        headers = bearer(client.post("/auth/login", json={"email": email, "password": PASSWORD}))
        kept = client.get(f"/projects/{project}", headers=headers)
        assert kept.status_code == 200, kept.text
        assert kept.json()["name"] == "Payments"
        assert kept.json()["description"] == "made before the restart"


def _compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((ROOT / "compose.yaml").read_text())
    return loaded


def test_compose_runs_the_embedded_default_alone_with_its_data_in_a_named_volume() -> None:
    compose = _compose()
    default = [name for name, service in compose["services"].items() if "profiles" not in service]
    assert default == ["upwatch"]
    upwatch = compose["services"]["upwatch"]
    assert upwatch["build"] == "."
    assert "upwatch-data:/data" in upwatch["volumes"]
    assert "upwatch-data" in compose["volumes"]
    assert any(port.endswith(":8000") for port in upwatch["ports"])
    assert upwatch["restart"] == "unless-stopped"
    assert "command" not in upwatch  # the image's own: upwatch serve


def test_compose_runs_each_distributed_role_with_a_command_the_cli_knows() -> None:
    services = _compose()["services"]
    distributed = {
        name: service
        for name, service in services.items()
        if "distributed" in service.get("profiles", ())
    }
    assert distributed["postgres"]["image"] == "postgres:17"
    assert distributed["redis"]["image"] == "redis:7"
    commands = {
        name: service["command"]
        for name, service in distributed.items()
        if service.get("image") == services["upwatch"]["image"]
    }
    assert sorted(command[1] for command in commands.values()) == [
        "ingester",
        "migrate",
        "retention",
        "scheduler",
        "scheduler",
        "sender",
        "serve",
        "worker",
    ]
    for name, command in commands.items():
        assert command[0] == "upwatch", name
        parser().parse_args(command[1:])  # exits (a failure here) on a command it does not know
    assert commands["api"][1:] == ["serve", "--roles", "api"]
    assert commands["worker-eu-west"][1:] == ["worker", "--region", "eu-west"]

    for name in commands:
        service = distributed[name]
        if name == "worker-eu-west":
            # The worker has its own Redis user and nothing of the central roles' secrets.
            assert [env["path"] for env in service["env_file"]] == ["worker.env"]
            assert "environment" not in service
        else:
            assert service["env_file"] == ["upwatch.env"], name
            assert service["environment"]["UPWATCH_BROKER"] == "redis", name
            if name != "migrate":
                assert service["depends_on"]["migrate"]["condition"] == (
                    "service_completed_successfully"
                )
