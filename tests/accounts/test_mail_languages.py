"""E-mails to a person speak their ``language`` setting (docs/languages.md): the password
reset, being added to a project, an invitation (the invitee's language where they have an
account, else the inviter's), the notice of data about to expire."""

from __future__ import annotations

from datetime import UTC, date, datetime

import httpx

from tests.conftest import Cast, Mailbox, SignUp, subject_of, text_of
from tests.factories import change_settings
from upwatch.kit import languages
from upwatch.kit.languages import translations
from upwatch.models import RetentionNotice
from upwatch.retention.job import _notice_mail


def said(language: str, text: str, **values: object) -> str:
    translated = translations(language).gettext(text)
    assert translated != text, (language, text)
    return translated % values if values else translated


async def test_a_password_reset_mail_speaks_the_accounts_language(
    client: httpx.AsyncClient, sign_up: SignUp, mailbox: Mailbox
) -> None:
    account = await sign_up("anna@example.com")
    assert (await change_settings(client, account, language="fr")).status_code == 200
    asked = await client.post("/auth/forgot-password", json={"email": account.email})
    assert asked.status_code < 300, asked.text
    (mail,) = await mailbox.wait_for(account.email)
    assert subject_of(mail) == said("fr", "Reset your Upwatch password")
    assert said(
        "fr",
        "The link works once. If you did not ask for this, ignore this e-mail; "
        "your password stays as it is.",
    ) in text_of(mail)
    assert "/reset-password?token=" in text_of(mail)


async def test_an_invitation_speaks_the_inviters_language_to_an_address_without_account(
    client: httpx.AsyncClient, cast: Cast, mailbox: Mailbox
) -> None:
    assert (await change_settings(client, cast.alice, language="ja")).status_code == 200
    invited = await client.post(
        f"/projects/{cast.project_id}/users",
        headers=cast.alice.headers,
        json={"email": "newcomer@example.com"},
    )
    assert invited.status_code == 201, invited.text
    (mail,) = await mailbox.wait_for("newcomer@example.com")
    inviter = "Alice"
    assert subject_of(mail) == said(
        "ja", "%(inviter)s invited you to %(project)s on Upwatch", inviter=inviter, project="Shop"
    )


def test_the_notice_of_expiring_data_speaks_the_owners_language() -> None:
    now = datetime(2026, 11, 27, tzinfo=UTC)
    notice = RetentionNotice(
        id="n",
        user_id="u",
        data_type="check_results",
        expiry_date=date(2026, 12, 4),
        cutoff=date(2026, 11, 7),
        retention_days=30,
        count=3,
        size_bytes=2048,
        created_at=now,
        updated_at=now,
    )
    subject, body = _notice_mail([notice], 30, "fr")
    plural = translations("fr").ngettext(
        "Data older than %(days)d day is deleted on %(day)s",
        "Data older than %(days)d days is deleted on %(day)s",
        30,
    )
    assert plural != "Data older than %(days)d days is deleted on %(day)s"
    assert subject == plural % {"days": 30, "day": languages.day(date(2026, 12, 4), "fr")}
    assert said("fr", "check results") in body
    english_subject, _body = _notice_mail([notice], 30, "en")
    assert english_subject == "Data older than 30 days is deleted on 2026-12-04"
