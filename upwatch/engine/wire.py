"""Jobs and reports as bytes for a broker between processes that do not trust each other.

JSON, checked on the way in: a worker in another region writes the result stream, so a result
is data to validate, never code to run (no pickle, unlike the embedded service's own link to
its child). Pydantic builds both directions from the dataclasses themselves, so a field added
to ``CheckSpec`` or ``Outcome`` travels without a change here.
"""

from __future__ import annotations

from pydantic import TypeAdapter, ValidationError

from upwatch.engine.broker import CheckJob, CheckReport

_JOB: TypeAdapter[CheckJob] = TypeAdapter(CheckJob)
_REPORT: TypeAdapter[CheckReport] = TypeAdapter(CheckReport)


class Malformed(ValueError):
    """An entry that is not a job or report of this version."""


def encode_job(job: CheckJob) -> bytes:
    return _JOB.dump_json(job)


def decode_job(data: bytes) -> CheckJob:
    try:
        return _JOB.validate_json(data)
    except ValidationError as exc:
        raise Malformed(f"not a check job: {exc.error_count()} error(s)") from exc


def encode_report(report: CheckReport) -> bytes:
    return _REPORT.dump_json(report)


def decode_report(data: bytes) -> CheckReport:
    try:
        return _REPORT.validate_json(data)
    except ValidationError as exc:
        raise Malformed(f"not a check report: {exc.error_count()} error(s)") from exc
