"""The real ``upwatch serve`` in a child process, for tests that need a real server."""

from __future__ import annotations

import http.server
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

from tests.conftest import free_port

UPWATCH = str(Path(sys.executable).parent / "upwatch")
# Bounds a loaded machine may need raised (docs/testing.md): how long `upwatch serve` may take
# to become ready, and how long a one-off command may run.
START_SECONDS = float(os.environ.get("UPWATCH_TEST_START_SECONDS", "60"))
COMMAND_SECONDS = float(os.environ.get("UPWATCH_TEST_COMMAND_SECONDS", "60"))


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("UPWATCH_")}
    env.update(
        UPWATCH_ARGON2_TIME_COST="1",
        UPWATCH_ARGON2_MEMORY_KIB="64",
        UPWATCH_ARGON2_PARALLELISM="1",
        # Fuzzed monitors carry arbitrary targets: the server's probes reach loopback only.
        UPWATCH_TARGETS_LOOPBACK_ONLY="true",
        # Counts with each batch, as in the in-process tests (make_settings); a test of the
        # deferred flush sets its own.
        UPWATCH_AGGREGATE_FLUSH_SECONDS="0",
    )
    env.update(extra)
    return env


class LiveServer:
    def __init__(
        self,
        cwd: Path,
        env: dict[str, str],
        log_level: str = "warning",
        executable: str | None = None,
    ) -> None:
        self.cwd = cwd
        self.env = env
        self.log_level = log_level
        # Another installation's `upwatch` (the wheel test's venv), configured by environment
        # alone: UPWATCH_PORT and UPWATCH_LOG_LEVEL instead of flags.
        self.executable = executable
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None
        self.log = cwd / f"serve-{self.port}.log"

    def start(self) -> LiveServer:
        with self.log.open("ab") as log:
            command = [UPWATCH, "serve", "--port", str(self.port), "--log-level", self.log_level]
            env = self.env
            if self.executable is not None:
                command = [self.executable, "serve"]
                env = {**env, "UPWATCH_PORT": str(self.port), "UPWATCH_LOG_LEVEL": self.log_level}
            self.process = subprocess.Popen(  # noqa: S603
                command,
                cwd=self.cwd,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"upwatch serve exited:\n{self.log.read_text()}")
            try:
                if httpx.get(f"{self.url}/readyz", timeout=1).status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        self.stop()  # a server that never became ready is not left running behind the test
        raise RuntimeError(
            f"upwatch serve not ready within {START_SECONDS:g} s (UPWATCH_TEST_START_SECONDS):\n"
            f"{self.log.read_text()}"
        )

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None


def run_cli(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: S603
        [UPWATCH, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=COMMAND_SECONDS,
        check=False,
    )


ROOT_EMAIL = "root@example.com"


def create_root(cwd: Path, env: dict[str, str]) -> None:
    """`upwatch admin create --email root@example.com`, with the password of ``env``."""
    created = run_cli(cwd, env, "admin", "create", "--email", ROOT_EMAIL)
    assert created.returncode == 0, created.stderr


async def log_in_as_root(api: httpx.AsyncClient, password: str) -> dict[str, str]:
    """Headers of the administrator `upwatch admin create --email root@example.com` made."""
    login = await api.post("/auth/login", json={"email": ROOT_EMAIL, "password": password})
    assert login.status_code == 200, login.text
    return {"Authorization": f"Bearer {login.json()['access_token']}"}


async def define_regions(
    api: httpx.AsyncClient, headers: dict[str, str], *codes: str
) -> dict[str, str]:
    """Region id by code, each region made through the API."""
    ids = {}
    for code in codes:
        made = await api.post("/regions", headers=headers, json={"code": code, "name": code})
        assert made.status_code == 201, made.text
        ids[code] = made.json()["id"]
    return ids


async def watched_monitor(
    api: httpx.AsyncClient, headers: dict[str, str], url: str, **fields: object
) -> str:
    """The id of an HTTP monitor of ``url`` in a new project; ``fields`` add to its body."""
    project = await api.post("/projects", headers=headers, json={"name": "Shop"})
    assert project.status_code == 201, project.text
    body = {"projectId": project.json()["id"], "name": "Shop", "type": "http", "url": url}
    monitor = await api.post("/monitors", headers=headers, json={**body, **fields})
    assert monitor.status_code == 201, monitor.text
    return str(monitor.json()["id"])


class ThreadedTarget:
    """A real HTTP endpoint answering ``status`` (200) and ``body`` to any GET after ``delay``
    seconds, from threads of its own: a server process or a child's probes reach it while the
    test's event loop is busy or blocked."""

    def __init__(self, delay: float = 0.0, body: bytes = b"ok") -> None:
        pause = delay
        self.status = 200  # what it answers; a test sets 500 to make it fail
        target = self

        class Ok(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if pause:
                    time.sleep(pause)
                self.send_response(target.status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *_args: object) -> None:
                pass

        class Server(http.server.ThreadingHTTPServer):
            # socketserver listens with a backlog of 5: more connections at once wait for a
            # SYN retry (a second), which a test would read as the probe's time.
            request_queue_size = 128

        self.server = Server(("127.0.0.1", 0), Ok)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"

    def start(self) -> ThreadedTarget:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> ThreadedTarget:
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.stop()
