"""A status page in its language (the page's setting) or, where the owner allows it, in the
visitor's (``Accept-Language``, or the switcher's ``?lang=``): the HTML, the feeds' fixed
words, the badges and the small pages around it."""

from __future__ import annotations

import re
from datetime import timedelta
from email.header import decode_header, make_header
from email.message import Message
from typing import Any

import feedparser
import httpx
from fastapi import FastAPI

from tests.app_settings import overriding
from tests.conftest import Cast, InProject, Mailbox, assert_problem
from tests.factories import add_component, create_monitor, ingest, post_in_project
from upwatch.kit.clock import ManualClock
from upwatch.kit.languages import LANGUAGES, translations

settings_overrides = overriding(status_page_max_age_seconds=0)
VISITOR = "visitor@example.org"


def said(language: str, text: str) -> str:
    """``text`` as the catalog of ``language`` says it; a test of a translated page fails
    on an untranslated text, since it would then be the English."""
    translated = translations(language).gettext(text)
    assert translated != text, (language, text)
    return translated


async def _page_with_a_failing_component(
    client: httpx.AsyncClient, cast: Cast, app: FastAPI, clock: ManualClock, **fields: Any
) -> dict[str, Any]:
    page = await InProject(client, cast.alice, cast.project_id).page(slug="shop", **fields)
    monitor = await create_monitor(
        client,
        cast.alice,
        cast.project_id,
        name="Checkout",
        url="https://checkout.example/health",
        intervalSeconds=300,
    )
    await add_component(client, cast.alice, page["id"], monitor["id"])
    await ingest(app.state.engine, monitor["id"], clock.now() - timedelta(minutes=5), ok=False)
    return page


async def test_a_page_set_to_japanese_speaks_japanese_in_its_html_feeds_and_badges(
    client: httpx.AsyncClient, cast: Cast, app: FastAPI, clock: ManualClock
) -> None:
    await _page_with_a_failing_component(client, cast, app, clock, language="ja")

    page = await client.get("/s/shop", headers={"Accept-Language": "de"})
    assert page.status_code == 200
    assert page.headers["content-language"] == "ja"
    assert "vary" not in page.headers  # one language for everyone
    html = page.text
    assert '<html lang="ja"' in html
    for text in ("Components", "Active incidents", "Past incidents", "Subscribe", "Today"):
        assert said("ja", text) in html
    assert said("ja", "investigating") in html
    for english in ("Components", "Past incidents", "Powered by Upwatch", "90 days ago"):
        assert english not in html
    assert "lang=" not in html.split("</main>")[1]  # no switcher

    for kind in ("rss", "atom"):
        feed = await client.get(f"/s/shop/feed.{kind}")
        parsed = feedparser.parse(feed.content)
        assert parsed.feed.title == said("ja", "%(name)s status") % {"name": "Shop status"}
        (entry,) = parsed.entries
        assert entry.title.endswith(f"({said('ja', 'investigating')})")
    assert "<language>ja</language>" in (await client.get("/s/shop/feed.rss")).text

    badge = (await client.get("/s/shop/badge.svg")).text
    label = said("ja", "status")
    assert f">{label}</text>" in badge
    # Wide characters take a whole em of the 11 px font: the label's box is not cut short.
    left = int(re.search(r'<rect width="(\d+)" height="20" fill="#555"', badge)[1])  # type: ignore[index]
    assert left >= 11 * len(label) + 20


async def test_accept_language_picks_german_only_where_the_owner_allows_it(
    client: httpx.AsyncClient, cast: Cast, app: FastAPI, clock: ManualClock
) -> None:
    page = await _page_with_a_failing_component(client, cast, app, clock)
    assert (page["language"], page["visitorLanguage"]) == ("en", False)
    german = {"Accept-Language": "de-CH, de;q=0.9, en;q=0.5"}

    own = await client.get("/s/shop", headers=german)
    assert own.headers["content-language"] == "en"
    assert "Components" in own.text

    allowed = await client.patch(
        f"/status-pages/{page['id']}", headers=cast.alice.headers, json={"visitorLanguage": True}
    )
    assert allowed.status_code == 200, allowed.text
    assert allowed.json()["visitorLanguage"] is True
    answer = await client.get("/s/shop", headers=german)
    assert answer.headers["content-language"] == "de"
    assert answer.headers["vary"] == "Accept-Language"
    assert '<html lang="de"' in answer.text
    assert said("de", "Past incidents") in answer.text
    # A browser asking for none of the ten gets the page's language.
    other = await client.get("/s/shop", headers={"Accept-Language": "sv, nb;q=0.8"})
    assert other.headers["content-language"] == "en"

    # The switcher: a link per language, and the one chosen wins over the browser's.
    for code in LANGUAGES:
        assert f'href="?lang={code}"' in answer.text
    chosen = await client.get("/s/shop?lang=fr", headers=german)
    assert chosen.headers["content-language"] == "fr"
    assert said("fr", "Past incidents") in chosen.text
    unknown = await client.get("/s/shop?lang=xx", headers=german)
    assert unknown.headers["content-language"] == "de"

    # Each language has its own tag: a cached German copy is not confirmed for French.
    tag = answer.headers["etag"]
    assert tag != chosen.headers["etag"]
    again = await client.get("/s/shop", headers={**german, "If-None-Match": tag})
    assert again.status_code == 304
    french = await client.get("/s/shop?lang=fr", headers={"If-None-Match": tag})
    assert french.status_code == 200

    # The feeds and badges keep the page's language.
    feed = await client.get("/s/shop/feed.rss", headers=german)
    assert "<language>en</language>" in feed.text


async def test_a_page_language_is_one_of_the_ten_and_english_by_default(
    client: httpx.AsyncClient, cast: Cast, as_alice: InProject
) -> None:
    page = await as_alice.page()
    assert page["language"] == "en"
    for wrong in ("xx", "EN", "", None, 3):
        refused = await client.patch(
            f"/status-pages/{page['id']}", headers=cast.alice.headers, json={"language": wrong}
        )
        assert [e["field"] for e in assert_problem(refused, 422)["errors"]] == ["language"]
    for language in LANGUAGES:
        changed = await client.patch(
            f"/status-pages/{page['id']}", headers=cast.alice.headers, json={"language": language}
        )
        assert changed.json()["language"] == language
    public = await client.get(f"/status-pages/public/slug/{page['slug']}")
    assert public.json()["language"] == "ko"


async def test_the_password_form_and_the_subscription_answers_are_in_the_visitors_language(
    client: httpx.AsyncClient, cast: Cast, as_alice: InProject
) -> None:
    page = await as_alice.page(
        slug="shop", language="es", visibility="password", password="open sesame 42"
    )
    # Before the password the page's own setting is not shown: the browser's language is.
    form = await client.get("/s/shop", headers={"Accept-Language": "fr-FR,fr;q=0.9"})
    assert form.status_code == 401
    assert '<html lang="fr"' in form.text
    assert said("fr", "Password required") in form.text
    assert "Password required" not in form.text

    opened = await client.patch(
        f"/status-pages/{page['id']}", headers=cast.alice.headers, json={"visibility": "public"}
    )
    assert opened.status_code == 200, opened.text
    answered = await client.post(
        "/s/shop/subscribe-form",
        content="email=not-an-address",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert answered.status_code == 422
    assert said("es", "Not subscribed") in answered.text


async def test_a_subscriber_of_a_german_page_gets_its_e_mails_in_german(
    client: httpx.AsyncClient, cast: Cast, mailbox: Mailbox, as_alice: InProject
) -> None:
    page = await as_alice.page(slug="shop", language="de")
    monitor = await as_alice.monitor(
        url="https://shop.example/health", intervalSeconds=300, isActive=False
    )
    await add_component(client, cast.alice, page["id"], monitor["id"], name="Kasse")
    await client.post("/status-pages/public/slug/shop/subscribe", json={"email": VISITOR})
    (confirmation,) = await mailbox.wait_for(VISITOR)
    subject = said("de", "Confirm your subscription to %(page)s status updates")
    assert _subject(confirmation) == subject % {"page": "Shop status"}
    text = _text(confirmation)
    link = re.search(r"http://upwatch\.test(/s/shop/confirm\?\S+)", text)
    assert link, text
    assert "Someone, probably you" not in text
    await client.get(link[1])

    await post_in_project(
        client,
        cast.bob,
        cast.project_id,
        "/incidents",
        monitorId=monitor["id"],
        title="Kasse langsam",
    )
    _, opened = await mailbox.wait_for(VISITOR, count=2)
    # The owner's words as written, in the language's subject line.
    assert _subject(opened) == translations("de").gettext("%(page)s: %(title)s") % {
        "page": "Shop status",
        "title": "Kasse langsam",
    }
    body = _text(opened)
    assert said("de", "Status: %(status)s") % {"status": said("de", "investigating")} in body
    assert said("de", "Unsubscribe with one click: %(link)s").split("%")[0] in body
    assert "You get this because" not in body


def _subject(message: Message) -> str:
    return str(make_header(decode_header(message["Subject"])))


def _text(message: Message) -> str:
    payload = message.get_payload(decode=True)
    assert isinstance(payload, bytes)
    return payload.decode()
