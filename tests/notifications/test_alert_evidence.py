"""An alert's failure evidence: kept when the alert is stored and read back, sent in the
webhook payload, summed up in one line of the text alerts."""

from __future__ import annotations

from datetime import UTC, datetime

from upwatch.notifications.events import AlertEvent, EventKind, Failure

SEEN = {
    "phase": "first_byte",
    "addresses": ["192.0.2.10"],
    "statusLine": "HTTP/1.1 503 Service Unavailable",
    "body": "down for maintenance",
}


def _opened(failure: Failure) -> AlertEvent:
    return AlertEvent(
        kind=EventKind.OPENED,
        delivery_id="d1",
        occurred_at=datetime(2026, 11, 27, 1, 0, tzinfo=UTC),
        project_id="p1",
        project_name="Shop",
        monitor_id="m1",
        monitor_name="Checkout",
        failure=failure,
    )


def test_the_evidence_survives_the_stored_alert_and_reaches_the_webhook_payload() -> None:
    event = _opened(Failure(kind="status_code", message=None, status_code=503, evidence=SEEN))

    again = AlertEvent.from_json(event.to_json())

    assert again.failure is not None
    assert again.failure.evidence == SEEN
    assert again.payload()["failure"]["evidence"] == SEEN


def test_a_text_alert_sums_the_evidence_up_in_one_line() -> None:
    event = _opened(Failure(kind="status_code", message=None, status_code=503, evidence=SEEN))

    assert (
        "Evidence: failed at first_byte HTTP/1.1 503 Service Unavailable from 192.0.2.10"
        in event.lines()
    )


def test_an_alert_stored_before_evidence_existed_still_reads_and_says_nothing_of_it() -> None:
    stored = _opened(Failure(kind="timeout", message="no answer", status_code=None)).to_json()
    del stored["failure"]["evidence"]

    event = AlertEvent.from_json(stored)

    assert event.payload()["failure"]["evidence"] is None
    assert not any(line.startswith("Evidence:") for line in event.lines())
