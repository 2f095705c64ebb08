"""Jobs and reports as bytes for a broker between processes that do not trust each other.

JSON, checked on the way in: a worker in another region writes the result stream, so a result
is data to validate, never code to run (no pickle, unlike the embedded service's own link to
its child). Pydantic builds both directions from the dataclasses themselves, so a field added
to ``CheckSpec`` or ``Outcome`` travels without a change here; the bounds below are what the
database and the status machine need of them (finite numbers, ids that fit their columns, a
time zone, a time that is not far off), so one bad report is refused alone instead of failing
every batch it lands in.
"""

from __future__ import annotations

import json
import math
import re
from datetime import timedelta
from typing import TypeVar

from pydantic import TypeAdapter, ValidationError

from upwatch.engine.broker import CheckJob, CheckReport

_Entry = TypeVar("_Entry")

_JOB: TypeAdapter[CheckJob] = TypeAdapter(CheckJob)
_REPORT: TypeAdapter[CheckReport] = TypeAdapter(CheckReport)


class Malformed(ValueError):
    """An entry that is not a job or report of this version."""


def encode_job(job: CheckJob) -> bytes:
    return _JOB.dump_json(job)


def encode_report(report: CheckReport) -> bytes:
    return _REPORT.dump_json(report)


_ID = re.compile(r"^[A-Za-z0-9_-]{1,32}$")  # fits the 32-character id columns
_MAX_JOB_BYTES = 256 * 1024
_MAX_REPORT_BYTES = 64 * 1024
_MAX_ERROR_CHARS = 4000
# Twice what a probe keeps (probes/evidence.py): room for escapes, far under the report cap.
_MAX_EVIDENCE_BYTES = 16 * 1024
_LONGEST_TIMEOUT_SECONDS = 60.0  # the API's bound on a monitor's timeout
# A report from the future (a skewed clock, a forgery) would hold its monitor's schedule back.
_AHEAD = timedelta(minutes=5)
_BEHIND = timedelta(days=7)


def _json_size(value: object) -> int:
    return len(json.dumps(value, separators=(",", ":"), default=str).encode())


def _fine(value: float | None, most: float = 1e9) -> bool:
    return value is None or (math.isfinite(value) and 0 <= value <= most)


def _parsed(data: bytes, adapter: TypeAdapter[_Entry], most_bytes: int, what: str) -> _Entry:
    """The entry in ``data`` (``what`` names it in the refusal), its size checked before any
    parsing."""
    if len(data) > most_bytes:
        raise Malformed(f"{what} of {len(data)} bytes")
    try:
        return adapter.validate_json(data)
    except ValidationError as exc:
        raise Malformed(f"not {what}: {exc.error_count()} error(s)") from exc


def decode_job(data: bytes) -> CheckJob:
    job = _parsed(data, _JOB, _MAX_JOB_BYTES, "a check job")
    spec = job.spec
    if not (
        _ID.fullmatch(spec.id)
        and _ID.fullmatch(job.region_id)
        and (job.report_id is None or _ID.fullmatch(job.report_id))
        and math.isfinite(job.due_at)
        and 0 < spec.timeout_seconds <= _LONGEST_TIMEOUT_SECONDS
        and spec.interval_seconds >= 1
    ):
        raise Malformed("a check job out of bounds")
    return job


def decode_report(data: bytes, now: float) -> CheckReport:
    """A report, if it is one this service would have made ``now`` (epoch seconds)."""
    report = _parsed(data, _REPORT, _MAX_REPORT_BYTES, "a check report")
    outcome, checked = report.outcome, report.checked_at
    timings = outcome.timings
    if not (
        _ID.fullmatch(report.id)
        and _ID.fullmatch(report.monitor_id)
        and _ID.fullmatch(report.region_id)
        and math.isfinite(report.due_at)
        and math.isfinite(report.started_at)
        and checked.tzinfo is not None
        and _fine(outcome.response_time_ms)
        and (outcome.status_code is None or 100 <= outcome.status_code <= 999)
        and (outcome.error is None or len(outcome.error) <= _MAX_ERROR_CHARS)
        and (outcome.evidence is None or _json_size(outcome.evidence) <= _MAX_EVIDENCE_BYTES)
        # Evidence is what a failure saw: a passing check has none to store.
        and (outcome.evidence is None or not outcome.ok)
        and (timings is None or all(_fine(getattr(timings, n)) for n in timings.__slots__))
    ):
        raise Malformed("a check report out of bounds")
    moment = checked.timestamp()
    if not now - _BEHIND.total_seconds() <= moment <= now + _AHEAD.total_seconds():
        raise Malformed("a check report from a time far from now")
    return report
