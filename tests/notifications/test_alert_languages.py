"""Alerts in the reader's language (docs/languages.md): a project's providers get the
project's ``alertLanguage``, a member's personal channels the member's own ``language``;
every text of an alert (headline, lines, facts, durations) speaks it."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from tests.app_settings import QUICK_ALERTS, overriding, plans
from tests.conftest import Cast, Mailbox, assert_problem, subject_of, text_of
from tests.factories import Target, create_provider
from tests.notifications.test_personal_alerts import PLANS, _outage_and_recovery, _settings
from tests.receivers import Receiver
from upwatch.kit.clock import Clock
from upwatch.kit.languages import LANGUAGES, SOURCE, translations
from upwatch.notifications.events import AlertEvent, EventKind, Failure, format_duration

settings_overrides = overriding(QUICK_ALERTS, plans_file=plans(PLANS), allow_private_targets=True)


@pytest.fixture
def clock() -> Clock:
    return Clock()  # the sender runs on real time


def said(language: str, text: str, **values: object) -> str:
    """``text`` as the catalog of ``language`` says it, once known to be translated."""
    translated = translations(language).gettext(text)
    assert translated != text, (language, text)
    return translated % values if values else translated


def said_with_any(template: str, **values: str) -> str:
    """A pattern of ``template`` with ``values`` put in and any other placeholder open."""
    parts = re.split(r"(%\(\w+\)[sd])", template)
    return "".join(
        re.escape(values[part[2:-2]])
        if part[2:-2] in values
        else (".+" if part.startswith("%(") else re.escape(part))
        for part in parts
    )


async def test_providers_speak_the_projects_language_and_members_their_own(
    client: httpx.AsyncClient, cast: Cast, receiver: Receiver, target: Target, mailbox: Mailbox
) -> None:
    changed = await client.patch(
        f"/projects/{cast.project_id}", headers=cast.alice.headers, json={"alertLanguage": "de"}
    )
    assert changed.status_code == 200, changed.text
    assert changed.json()["alertLanguage"] == "de"
    await create_provider(
        client,
        cast.alice.headers,
        cast.project_id,
        type="webhook",
        name="Team",
        config={"url": receiver.url("/team")},
    )
    # Bob reads French, and hears of the project's incidents by e-mail.
    await _settings(
        client, cast.bob, language="fr", notifications={"email": True}, emailConfig={"to": []}
    )
    mail_before = len(mailbox.messages)

    await _outage_and_recovery(client, cast, target)

    team = [r.json() for r in receiver.to("/team")]
    assert [body["event"] for body in team] == ["incident.opened", "incident.resolved"]
    assert team[0]["summary"] == said("de", "DOWN: %(name)s", name="Checkout")
    assert re.fullmatch(
        said_with_any(said("de", "UP: %(name)s is back after %(length)s"), name="Checkout"),
        team[1]["summary"],
    ), team[1]["summary"]
    bob = [m for m in mailbox.messages[mail_before:] if m["To"] == "bob@example.com"]
    assert [subject_of(m) for m in bob][:1] == [said("fr", "DOWN: %(name)s", name="Checkout")]
    assert said("fr", "Project: %(project)s", project="Shop") in text_of(bob[0])


async def test_a_project_refuses_an_alert_language_it_does_not_speak(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    refused = await client.patch(
        f"/projects/{cast.project_id}", headers=cast.alice.headers, json={"alertLanguage": "xx"}
    )
    assert_problem(refused, 422)
    read = await client.get(f"/projects/{cast.project_id}", headers=cast.alice.headers)
    assert read.json()["alertLanguage"] == "en"


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_text_of_an_alert_speaks_its_language(language: str) -> None:
    start = datetime(2026, 11, 27, 10, 0, tzinfo=UTC)
    event = AlertEvent(
        kind=EventKind.REMINDER,
        delivery_id="d",
        occurred_at=start + timedelta(hours=3, minutes=4),
        project_id="p",
        project_name="Shop",
        monitor_name="Checkout",
        incident_id="i",
        failure=Failure(kind="timeout", message=None, status_code=None),
        since=start,
        language=language,
    )
    english = replace(event, language=SOURCE)
    if language == SOURCE:
        assert event.headline == "STILL DOWN: Checkout for 3h 4m, not acknowledged"
        return
    length = format_duration(3 * 3600 + 4 * 60, language)
    assert length != "3h 4m"
    assert event.headline == said(
        language,
        "STILL DOWN: %(name)s for %(length)s, not acknowledged",
        name="Checkout",
        length=length,
    )
    # Each line and fact is the catalog's text, and the alert as a whole is not English.
    _ = translations(language).gettext
    assert event.lines() == [
        _("Monitor: %(monitor)s") % {"monitor": "Checkout"},
        _("Project: %(project)s") % {"project": "Shop"},
        _("What failed: %(what)s") % {"what": said(language, "timed out")},
        _("Down since: %(moment)s") % {"moment": "2026-11-27T10:00:00Z"},
    ]
    assert event.lines() != english.lines()
    assert [name for name, _value in event.facts()] == [
        _("Monitor"),
        _("Project"),
        _("Severity"),
        _("Down since"),
    ]
    assert event.summary() == said(
        language, "The incident is still open and no one has acknowledged it."
    )


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_long_outage_keeps_its_days_in_every_language(language: str) -> None:
    # Ten days and five hours: not "1 week", not rounded to a larger unit.
    length = format_duration(10 * 86400 + 5 * 3600 + 7, language)
    assert "10" in length, length
    assert "5" in length, length
    assert "1" not in length.replace("10", ""), length
    assert len(length.split()) >= 2, length
