"""Distributed mode at a sustained rate, against the embedded service in the same run (issue 15).

Every role its own process on PostgreSQL and Redis: `upwatch serve --roles api`, `upwatch
scheduler`, `upwatch ingester`, `upwatch sender`, and one `upwatch worker --region CODE` per
``--regions`` (default two: `ra` and `rb`, half the monitors each). Creates ``--monitors`` HTTP
monitors at ``--interval`` seconds through the API (against the local target of
``bench/checks.py``), waits one interval, then measures for ``--seconds``:

- checks completed: rows in ``check_results`` with ``checked_at`` in the window, against
  monitors x seconds / interval;
- each check's delay against its monitor's most punctual check in the window (a lateness at
  millisecond resolution, as ``bench/checks.py`` reports it);
- CPU seconds per 1,000 checks summed over every Upwatch process (and, apart, PostgreSQL's
  backends and Redis), and RSS of each process sampled every ``--sample-seconds``: start,
  peak, end and growth per process, and the load average.

Then (unless ``--no-embedded``) runs ``bench/checks.py --db postgresql`` with the same monitors
and window for the embedded figure, and prints the ratio the issue asks for: distributed
CPU per 1,000 checks at most 1.5x the embedded one. Everything stays on 127.0.0.1.

    .venv/bin/python bench/distributed.py [--monitors 10000] [--interval 10] [--seconds 300]
                                          [--regions 2] [--setup-timeout 1200] [--no-embedded]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).parent))

from checks import (
    UPWATCH,
    cpu_of,
    emit,
    free_port,
    loadavg,
    log_tail,
    pg_admin,
    pg_backend_pids,
    process_tree,
    quantile,
    relative_delays,
    rows_postgresql,
    start_target,
    stop_target,
    tree_cpu_seconds,
    tree_kib,
)

PASSWORD = "bench password"
TARGET_RATIO = 1.5  # distributed CPU per 1,000 checks / the embedded figure


def role_env(workdir: Path, database_url: str, prefix: str) -> dict[str, str]:
    plans = workdir / "plans.toml"
    plans.write_text(
        "[plans.free]\n"
        'monitorCount = "unlimited"\n'
        "checkFrequencyMinutes = 0\n"
        'apiCallsPerDay = "unlimited"\n'
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("UPWATCH_")}
    env.update(
        UPWATCH_DATA_DIR=str(workdir / "data"),
        UPWATCH_DATABASE_URL=database_url,
        UPWATCH_REDIS_URL="redis://127.0.0.1:6379/14",
        UPWATCH_BROKER_PREFIX=prefix,
        UPWATCH_ALLOW_PRIVATE_TARGETS="true",
        UPWATCH_TARGETS_LOOPBACK_ONLY="true",
        UPWATCH_PLANS_FILE=str(plans),
        UPWATCH_API_METERING="false",
        UPWATCH_ADMIN_PASSWORD=PASSWORD,
        UPWATCH_SECRET_KEY="bench-" + "k" * 40,
    )
    return env


class Roles:
    def __init__(self, workdir: Path, env: dict[str, str]) -> None:
        self.workdir = workdir
        self.env = env
        self.processes: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, name: str, *command: str) -> subprocess.Popen[bytes]:
        with (self.workdir / f"{name}.log").open("wb") as log:
            process = subprocess.Popen(
                [UPWATCH, *command], cwd=self.workdir, env=self.env, stdout=log, stderr=log
            )
        self.processes[name] = process
        return process

    def alive(self) -> None:
        for name, process in self.processes.items():
            if process.poll() is not None:
                raise RuntimeError(f"{name} exited:\n{log_tail(self.workdir / f'{name}.log')}")

    def pids(self) -> dict[str, list[int]]:
        return {name: process_tree(p.pid) for name, p in self.processes.items()}

    def stop(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.terminate()
        for process in self.processes.values():
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()


async def setup(
    url: str, target: str, monitors: int, interval: int, regions: list[str], allowed: float
) -> tuple[float, list[str]]:
    limits = httpx.Limits(max_connections=16, max_keepalive_connections=16)
    async with httpx.AsyncClient(base_url=url, timeout=30, limits=limits) as client:
        login = await client.post(
            "/auth/login", json={"email": "bench@example.com", "password": PASSWORD}
        )
        login.raise_for_status()
        client.headers["Authorization"] = f"Bearer {login.json()['access_token']}"
        ids = []
        for code in regions:
            made = await client.post("/regions", json={"code": code, "name": code})
            made.raise_for_status()
            ids.append(made.json()["id"])
        project = await client.post("/projects", json={"name": "bench"})
        project.raise_for_status()
        project_id = project.json()["id"]
        started = time.monotonic()
        queue = iter(range(monitors))

        async def one() -> None:
            for n in queue:
                if time.monotonic() - started > allowed:
                    raise RuntimeError(f"setup did not finish in {allowed:.0f} s")
                response = await client.post(
                    "/monitors",
                    json={
                        "projectId": project_id,
                        "name": f"m{n}",
                        "type": "http",
                        "url": f"{target}/m/{n}",
                        "intervalSeconds": interval,
                        "regionIds": [ids[n % len(ids)]],
                    },
                )
                if response.status_code != 201:
                    raise RuntimeError(f"{response.status_code} {response.text[:300]}")
                if n and n % 1000 == 0:
                    emit("setup_progress", created=n, elapsed_s=round(time.monotonic() - started))

        await asyncio.gather(*(one() for _ in range(16)))
        return time.monotonic() - started, ids


def redis_pid() -> int | None:
    found = subprocess.run(
        ["pgrep", "-f", "redis-server 127.0.0.1:6379"], capture_output=True, text=True
    )
    pids = found.stdout.split()
    return int(pids[0]) if pids else None


def measure(args: argparse.Namespace, workdir: Path, target: str) -> dict[str, Any]:
    database = f"upwatch_bench_{uuid.uuid4().hex[:8]}"
    asyncio.run(pg_admin(f'CREATE DATABASE "{database}"'))
    database_url = f"postgresql://postgres@127.0.0.1:5432/{database}"
    prefix = f"bench-{uuid.uuid4().hex[:8]}"
    env = role_env(workdir, database_url, prefix)
    roles = Roles(workdir, env)
    regions = [f"r{chr(ord('a') + n)}" for n in range(args.regions)]
    try:
        created = subprocess.run(
            [UPWATCH, "admin", "create", "--email", "bench@example.com"],
            cwd=workdir, env=env, capture_output=True, text=True, check=False,
        )  # fmt: skip
        if created.returncode:
            raise RuntimeError(created.stderr)
        port = free_port()
        roles.start("api", "serve", "--roles", "api", "--port", str(port), "--log-level", "warning")
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            roles.alive()
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(f"{url}/readyz", timeout=1).status_code == 200:
                    break
            if time.monotonic() > deadline:
                raise RuntimeError("the API did not start")
            time.sleep(0.2)
        roles.start("scheduler", "scheduler")
        roles.start("ingester", "ingester")
        roles.start("sender", "sender")
        for code in regions:
            roles.start(f"worker-{code}", "worker", "--region", code)
        setup_s, _ids = asyncio.run(
            setup(url, target, args.monitors, args.interval, regions, args.setup_timeout)
        )
        emit("setup", setup_s=round(setup_s, 1), monitors=args.monitors)
        warm_until = time.monotonic() + args.interval
        while time.monotonic() < warm_until:
            roles.alive()
            time.sleep(1)

        pids = roles.pids()
        pg_pids = pg_backend_pids(database)
        redis = redis_pid()
        others0 = cpu_of(pg_pids + ([redis] if redis else []))
        per_role0 = {name: tree_cpu_seconds(tree) for name, tree in pids.items()}
        load0 = loadavg()
        start = time.time()
        rss: dict[str, list[tuple[float, float]]] = {name: [] for name in pids}
        while (now := time.time()) < start + args.seconds:
            roles.alive()
            for name, tree in roles.pids().items():
                kib = sum(tree_kib(tree, "VmRSS").values())
                rss[name].append((now - start, kib / 1024))
            time.sleep(min(args.sample_seconds, max(0.0, start + args.seconds - time.time())))
        end = time.time()
        per_role = {
            name: tree_cpu_seconds(tree) - per_role0[name] for name, tree in roles.pids().items()
        }
        others1 = cpu_of(pg_pids + ([redis] if redis else []))
        load1 = loadavg()
        # Let what was checked in the window be stored.
        time.sleep(5)
        rows = rows_postgresql(database, start, end)
    finally:
        roles.stop()
        with contextlib.suppress(Exception):
            asyncio.run(pg_admin(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)'))
    expected = args.monitors * args.seconds / args.interval
    used = sum(per_role.values())
    delays = relative_delays(rows.times, args.interval)
    pg_used = sum(others1[p] - others0[p] for p in others1 if p in others0 and p != redis)
    redis_used = (others1.get(redis, 0) - others0.get(redis, 0)) if redis else 0.0
    growth = {
        name: round(samples[-1][1] - samples[0][1], 1) for name, samples in rss.items() if samples
    }
    return {
        "monitors": args.monitors,
        "interval_s": args.interval,
        "window_s": args.seconds,
        "regions": regions,
        "expected_checks": round(expected),
        "rows_in_window": rows.total,
        "completion_pct": round(rows.total / expected * 100, 2),
        "relative_delay_p50_s": quantile(delays, 0.5),
        "relative_delay_p99_s": quantile(delays, 0.99),
        "relative_delay_max_s": delays[-1] if delays else None,
        "cpu_s": round(used, 2),
        "cpu_s_per_1000_checks": round(used / rows.total * 1000, 4) if rows.total else None,
        "cpu_s_by_role": {name: round(v, 2) for name, v in per_role.items()},
        "postgres_cpu_s": round(pg_used, 2),
        "redis_cpu_s": round(redis_used, 2),
        "rss_start_mb": {n: round(s[0][1], 1) for n, s in rss.items() if s},
        "rss_peak_mb": {n: round(max(v for _, v in s), 1) for n, s in rss.items() if s},
        "rss_growth_mb": growth,
        "loadavg_start": load0,
        "loadavg_end": load1,
    }


def embedded(args: argparse.Namespace) -> dict[str, Any]:
    command = [
        sys.executable, str(Path(__file__).with_name("checks.py")),
        "--monitors", str(args.monitors), "--interval", str(args.interval),
        "--seconds", str(args.seconds), "--db", "postgresql", "--service-cores", "0,1",
        "--setup-timeout", str(args.setup_timeout), "--bare-seconds", "30",
    ]  # fmt: skip
    emit("embedded_started", command=" ".join(command))
    found = subprocess.run(command, capture_output=True, text=True, check=False)
    for line in found.stdout.splitlines():
        with contextlib.suppress(json.JSONDecodeError):
            event = json.loads(line)
            if event.get("event") == "service":
                return dict(event)
    raise RuntimeError(f"bench/checks.py gave no figures:\n{found.stdout[-2000:]}")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--monitors", type=int, default=10_000)
    parser.add_argument("--interval", type=int, default=10)
    parser.add_argument("--seconds", type=int, default=300)
    parser.add_argument("--regions", type=int, default=2)
    parser.add_argument("--setup-timeout", type=float, default=1200)
    parser.add_argument("--sample-seconds", type=float, default=10)
    parser.add_argument("--no-embedded", action="store_true")
    args = parser.parse_args()
    command = " ".join([".venv/bin/python", "bench/distributed.py", *sys.argv[1:]])
    target_port = free_port()
    target_process = start_target(target_port)
    try:
        with tempfile.TemporaryDirectory(prefix="upwatch-distributed-") as workdir:
            result = measure(args, Path(workdir), f"http://127.0.0.1:{target_port}")
    finally:
        stop_target(target_process)
    emit("distributed", **result)
    print(f"\ncommand: {command}")
    print(
        f"  checks completed      {result['rows_in_window']} / {result['expected_checks']} "
        f"({result['completion_pct']} %)"
    )
    print(
        f"  delay p50/p99/max     {result['relative_delay_p50_s']} / "
        f"{result['relative_delay_p99_s']} / {result['relative_delay_max_s']} s"
    )
    print(
        f"  CPU-s per 1,000       {result['cpu_s_per_1000_checks']} (Upwatch processes), "
        f"PostgreSQL {result['postgres_cpu_s']} s, Redis {result['redis_cpu_s']} s in window"
    )
    print(f"  CPU-s by role         {result['cpu_s_by_role']}")
    print(f"  RSS start / peak MB   {result['rss_start_mb']} / {result['rss_peak_mb']}")
    print(f"  RSS growth MB         {result['rss_growth_mb']}")
    print(f"  load average          {result['loadavg_start']} -> {result['loadavg_end']}")
    if args.no_embedded:
        return 0
    base = embedded(args)
    ratio = result["cpu_s_per_1000_checks"] / base["cpu_s_per_1000_checks"]
    emit("embedded", **{k: v for k, v in base.items() if k != "event"})
    print(
        f"  embedded CPU-s/1,000  {base['cpu_s_per_1000_checks']} "
        f"(+ PostgreSQL {base.get('postgres_cpu_s')} s), completed {base['completion_pct']} %"
    )
    verdict = "PASS" if ratio <= TARGET_RATIO else "MISS"
    print(f"  ratio                 {ratio:.2f} (target <= {TARGET_RATIO})  {verdict}")
    return 0 if verdict == "PASS" else 2


if __name__ == "__main__":
    sys.exit(main())
