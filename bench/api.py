"""Cost of API call metering on an authenticated request.

Starts the real service (`upwatch serve`, one process, SQLite) with metering on and with it
off, in alternating rounds, and loads `GET /users/me` with wrk (Debian package `wrk`) over
loopback. Prints, per mode, requests per second, p50/p99 latency, and the service process's
CPU time per request (read from /proc), then the metering cost.

    .venv/bin/python bench/api.py [--rounds 3] [--seconds 10] [--connections 16]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

UPWATCH = str(Path(sys.executable).parent / "upwatch")
TICKS = os.sysconf("SC_CLK_TCK")
TASKSET = shutil.which("taskset")
PIN_SERVICE = [TASKSET, "-c", "0"] if TASKSET and (os.cpu_count() or 1) > 1 else []
PIN_LOAD = [TASKSET, "-c", "1"] if PIN_SERVICE else []


@dataclass
class Round:
    metering: bool
    requests: int
    rps: float
    p50_ms: float
    p99_ms: float
    cpu_us_per_request: float
    non_2xx: int


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime + stime


def start_server(workdir: Path, metering: bool) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    plans = workdir / "plans.toml"
    plans.write_text('[plans.free]\napiCallsPerDay = "unlimited"\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("UPWATCH_")}
    env.update(
        UPWATCH_DATA_DIR=str(workdir / "data"),
        UPWATCH_PLANS_FILE=str(plans),
        UPWATCH_API_METERING="true" if metering else "false",
        UPWATCH_TARGETS_LOOPBACK_ONLY="true",
    )
    # The service on core 0 and wrk on core 1: neither steals the other's CPU mid-round.
    process = subprocess.Popen(
        [*PIN_SERVICE, UPWATCH, "serve", "--port", str(port), "--log-level", "warning"],
        cwd=workdir,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            if httpx.get(f"{url}/readyz", timeout=1).status_code == 200:
                return process, url
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise RuntimeError("the service did not start")


def wrk(
    url: str, token: str, seconds: int, connections: int
) -> tuple[int, float, float, float, int]:
    output = subprocess.run(
        [
            *PIN_LOAD,
            "wrk",
            "-t2",
            f"-c{connections}",
            f"-d{seconds}s",
            "--latency",
            "-H",
            f"Authorization: Bearer {token}",
            f"{url}/users/me",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout

    def latency(label: str) -> float:
        match = re.search(rf"^\s+{label}%\s+([\d.]+)(us|ms|s)\s*$", output, re.MULTILINE)
        assert match, output
        value, unit = float(match.group(1)), match.group(2)
        return value / 1000 if unit == "us" else value * 1000 if unit == "s" else value

    requests = int(re.search(r"(\d+) requests in", output).group(1))  # type: ignore[union-attr]
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1))  # type: ignore[union-attr]
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    return requests, rps, latency("50"), latency("99"), int(bad.group(1)) if bad else 0


def one_round(metering: bool, seconds: int, connections: int) -> Round:
    with tempfile.TemporaryDirectory() as tmp:
        process, url = start_server(Path(tmp), metering)
        try:
            signup = httpx.post(
                f"{url}/auth/signup",
                json={"email": "bench@example.com", "password": "bench password"},
            )
            token = signup.json()["access_token"]
            wrk(url, token, 2, connections)  # warm-up
            before = cpu_seconds(process.pid)
            requests, rps, p50, p99, bad = wrk(url, token, seconds, connections)
            used = cpu_seconds(process.pid) - before
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=30)
    return Round(metering, requests, rps, p50, p99, used / requests * 1e6, bad)


def metering_path_us(samples: int = 50_000) -> float:
    """Microseconds the metering step adds to one request, timed in-process (no network)."""
    import asyncio
    import dataclasses

    from fastapi import Response

    from upwatch.callers.metering import MemoryMeter, admit_request, utc_day
    from upwatch.kit.clock import Clock
    from upwatch.kit.plans import FREE
    from upwatch.runtime import PlanCache

    class Runtime:  # just the parts admit_request reads
        clock = Clock()
        plan_cache = PlanCache(clock)
        meter = MemoryMeter(None, clock, 5)  # type: ignore[arg-type]

    runtime = Runtime()
    runtime.plan_cache.put("u", dataclasses.replace(FREE, apiCallsPerDay=10**12))
    runtime.meter._totals[("u", utc_day(runtime.clock.now()))] = 0

    async def timed() -> float:
        started = time.perf_counter()
        for _ in range(samples):
            await admit_request(None, runtime, "u", Response())  # type: ignore[arg-type]
        with_metering = time.perf_counter() - started
        started = time.perf_counter()
        for _ in range(samples):
            Response()
        return (with_metering - (time.perf_counter() - started)) / samples * 1e6

    return asyncio.run(timed())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--connections", type=int, default=16)
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        sys.exit("wrk is needed: apt-get install wrk")

    rounds: list[Round] = []
    for n in range(args.rounds):
        # Alternate which mode goes first, so drift on the machine hits both alike.
        for metering in (True, False) if n % 2 == 0 else (False, True):
            result = one_round(metering, args.seconds, args.connections)
            rounds.append(result)
            print(json.dumps(result.__dict__))

    def summary(metering: bool) -> dict[str, float]:
        mine = [r for r in rounds if r.metering is metering]
        return {
            "rps": statistics.median(r.rps for r in mine),
            "p50_ms": statistics.median(r.p50_ms for r in mine),
            "p99_ms": statistics.median(r.p99_ms for r in mine),
            "cpu_us_per_request": statistics.median(r.cpu_us_per_request for r in mine),
            "non_2xx": sum(r.non_2xx for r in mine),
        }

    on, off = summary(True), summary(False)
    # Each round's two runs were back to back: their ratio cancels slow drift of the machine.
    paired = []
    for first, second in zip(rounds[0::2], rounds[1::2], strict=True):
        metered, plain = (first, second) if first.metering else (second, first)
        paired.append(
            (metered.cpu_us_per_request - plain.cpu_us_per_request) / plain.cpu_us_per_request * 100
        )
    print()
    print(
        f"{'metering':<10}{'req/s':>10}{'p50 ms':>10}{'p99 ms':>10}{'CPU us/req':>12}{'non-2xx':>9}"
    )
    for label, row in (("on", on), ("off", off)):
        print(
            f"{label:<10}{row['rps']:>10.0f}{row['p50_ms']:>10.2f}{row['p99_ms']:>10.2f}"
            f"{row['cpu_us_per_request']:>12.0f}{row['non_2xx']:>9.0f}"
        )
    throughput_cost = (off["rps"] - on["rps"]) / off["rps"] * 100
    cpu_cost = (
        (on["cpu_us_per_request"] - off["cpu_us_per_request"]) / off["cpu_us_per_request"] * 100
    )
    print(
        "paired CPU cost per round: "
        + ", ".join(f"{p:+.1f} %" for p in paired)
        + f" (median {statistics.median(paired):+.1f} %)"
    )
    print(
        f"\nmetering cost: {throughput_cost:+.1f} % throughput, {cpu_cost:+.1f} % CPU per request "
        f"(medians of {args.rounds} alternating rounds of {args.seconds} s, "
        f"{args.connections} connections)"
    )
    print(f"metering step timed in-process: {metering_path_us():.1f} us per request")


if __name__ == "__main__":
    main()
