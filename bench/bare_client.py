"""A bare aiohttp client: the reference `bench/checks.py` measures the monitoring engine against.

Sends GET ``{--target}/m/{n}`` for n in 0 .. ``--monitors`` - 1, each once per ``--interval``
seconds, the requests spread evenly (one every interval / monitors seconds, the rate of the
engine's monitors), through one ``aiohttp.ClientSession`` on uvloop when it is installed.
After ``--warmup`` seconds at that rate (connections opened, code paths warm) it measures for
``--seconds``: each request's time (``time.perf_counter()`` around the request and the read
of its body), its lateness (start against due time), this process's CPU seconds
(``getrusage``, all threads) from the window's start until its last request finished, and the
load average at both ends. Prints one JSON line on stdout and nothing else.

    .venv/bin/python bench/bare_client.py --target http://127.0.0.1:PORT --monitors 10000
                                          --interval 60 --seconds 300 [--warmup 5]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import resource
import time
from collections import Counter
from pathlib import Path
from typing import Any

import aiohttp


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def loadavg() -> list[float]:
    return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]


def quantile(ordered: list[float], q: float) -> float | None:
    """Nearest rank, as bench/checks.py computes the engine's figures."""
    if not ordered:
        return None
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    period = args.interval / args.monitors
    urls = [f"{args.target}/m/{n}" for n in range(args.monitors)]
    times_ms: list[float] = []
    lateness_s: list[float] = []
    ok = 0
    failures: Counter[str] = Counter()
    in_flight: set[asyncio.Task[None]] = set()
    timeout = aiohttp.ClientTimeout(total=args.timeout)

    async with aiohttp.ClientSession(timeout=timeout) as session:

        async def one(url: str, due: float, counted: bool) -> None:
            nonlocal ok
            started = time.perf_counter()
            status = None
            try:
                async with session.get(url) as response:
                    await response.read()
                    status = response.status
            except (aiohttp.ClientError, OSError, TimeoutError) as exc:
                if counted:
                    failures[type(exc).__name__] += 1
            elapsed = time.perf_counter() - started
            if not counted:
                return
            lateness_s.append(started - due)
            # Timed whenever a response arrived, as the engine records response_time_ms.
            if status is not None:
                times_ms.append(elapsed * 1000)
                if status == 200:
                    ok += 1
                else:
                    failures[f"status {status}"] += 1

        origin = time.perf_counter()
        window_start = origin + args.warmup
        window_end = window_start + args.seconds
        cpu0 = load0 = None
        index = 0
        while (due := origin + index * period) < window_end:
            wait = due - time.perf_counter()
            # Sleep to the due time; when behind, still yield so started requests progress.
            await asyncio.sleep(max(0.0, wait))
            counted = due >= window_start
            if counted and cpu0 is None:
                cpu0, load0 = cpu_seconds(), loadavg()
            task = asyncio.create_task(one(urls[index % args.monitors], due, counted))
            in_flight.add(task)
            task.add_done_callback(in_flight.discard)
            index += 1
        if in_flight:
            await asyncio.wait(in_flight)
        cpu = cpu_seconds() - (cpu0 or 0.0)
        wall = time.perf_counter() - window_start
        load1 = loadavg()

    times_ms.sort()
    lateness_s.sort()
    expected = args.monitors * args.seconds / args.interval
    return {
        "loop": asyncio.get_running_loop().__class__.__module__.split(".")[0],
        "window_s": args.seconds,
        "wall_s": round(wall, 3),
        "requests_sent": len(lateness_s),
        "expected": round(expected),
        "completed": ok,
        "completion_pct": round(ok / expected * 100, 2) if expected else None,
        "failures": dict(failures),
        "cpu_s": round(cpu, 3),
        "cpu_s_per_1000": round(cpu / ok * 1000, 4) if ok else None,
        "response_ms_p50": _round(quantile(times_ms, 0.50)),
        "response_ms_p90": _round(quantile(times_ms, 0.90)),
        "response_ms_p99": _round(quantile(times_ms, 0.99)),
        "lateness_p50_s": _round(quantile(lateness_s, 0.50)),
        "lateness_p99_s": _round(quantile(lateness_s, 0.99)),
        "lateness_max_s": _round(lateness_s[-1] if lateness_s else None),
        "max_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "loadavg_start": load0,
        "loadavg_end": load1,
    }


def _round(value: float | None, digits: int = 4) -> float | None:
    return None if value is None else round(value, digits)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", required=True, help="base URL, e.g. http://127.0.0.1:8080")
    parser.add_argument("--monitors", type=int, required=True)
    parser.add_argument("--interval", type=float, required=True)
    parser.add_argument("--seconds", type=float, required=True)
    parser.add_argument("--warmup", type=float, default=5.0)
    parser.add_argument("--timeout", type=float, default=30.0, help="per request")
    args = parser.parse_args()
    try:
        import uvloop
    except ImportError:
        result = asyncio.run(measure(args))
    else:
        result = uvloop.run(measure(args))
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
