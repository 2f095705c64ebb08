"""The registry: one probe per monitor type, found by ``run_check``; probes sit below the engine."""

from __future__ import annotations

import ast
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import get_args

import pytest

import upwatch.probes
from upwatch.engine.checks import ProbeKit, run_check
from upwatch.engine.targets import MonitorSpec
from upwatch.kit.net import NetworkGuard, guarded_session
from upwatch.monitors.schemas import MonitorOut
from upwatch.probes.outcome import ErrorKind
from upwatch.probes.registry import PROBES, UnknownMonitorType, probe_for

NOW = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


def spec(type_: str, **fields: object) -> MonitorSpec:
    values: dict[str, object] = {
        "id": "mon_1",
        "project_id": "prj_1",
        "type": type_,
        "url": None,
        "method": "GET",
        "headers": (),
        "body": None,
        "expected_status_codes": (),
        "keyword": None,
        "host": None,
        "port": None,
        "record_type": None,
        "expected_value": None,
        "interval_seconds": 60,
        "timeout_seconds": 5.0,
        "region_ids": (),
        "created_at": NOW - timedelta(minutes=1),
        "last_checked_at": None,
        "last_ping_at": None,
    }
    values.update(fields)
    return MonitorSpec(**values)  # type: ignore[arg-type]


@pytest.fixture
async def kit() -> AsyncIterator[ProbeKit]:
    guard = NetworkGuard(allow_private=True)
    async with guarded_session(guard) as http:
        yield ProbeKit(guard=guard, http=http)


def test_every_monitor_type_the_api_accepts_has_exactly_one_probe() -> None:
    assert list(PROBES) == list(get_args(MonitorOut.model_fields["type"].annotation))


def test_an_unknown_type_has_no_probe_and_says_which_type() -> None:
    with pytest.raises(UnknownMonitorType, match="unknown monitor type 'gopher'"):
        probe_for("gopher")


async def test_running_a_check_of_an_unknown_type_fails_clearly(kit: ProbeKit) -> None:
    with pytest.raises(ValueError, match="unknown monitor type 'gopher'"):
        await run_check(spec("gopher"), kit, NOW)


async def test_a_check_runs_the_probe_of_its_type(kit: ProbeKit, open_port: int) -> None:
    outcome = await run_check(spec("tcp", host="127.0.0.1", port=open_port), kit, NOW)

    assert outcome.ok, outcome.error
    assert outcome.details["address"] == "127.0.0.1"


async def test_a_heartbeat_check_reads_the_clock_it_is_given(kit: ProbeKit) -> None:
    late = await run_check(spec("heartbeat"), kit, NOW + timedelta(hours=1))
    on_time = await run_check(spec("heartbeat"), kit, NOW)

    assert late.error_kind is ErrorKind.MISSED_HEARTBEAT
    assert on_time.ok


async def test_dns_checks_are_refused_where_only_loopback_is_reached() -> None:
    guard = NetworkGuard(allow_private=True, loopback_only=True)
    async with guarded_session(guard) as http:
        outcome = await run_check(spec("dns", host="upwatch.dev"), ProbeKit(guard, http), NOW)

    assert outcome.error_kind is ErrorKind.REFUSED_TARGET


def test_probes_import_nothing_above_them() -> None:
    """Only the kit and the probes themselves: never the engine, the models or a domain."""
    package = Path(upwatch.probes.__file__).parent
    for module in package.glob("*.py"):
        for node in ast.walk(ast.parse(module.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            for name in names:
                if name == "upwatch" or name.startswith("upwatch."):
                    assert name.startswith(("upwatch.kit", "upwatch.probes")), (module, name)
