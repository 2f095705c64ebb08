"""The catalogs (upwatch/locales) cannot fall behind the code: every marked text is in the
template catalog, every language translates every one of them with the same placeholders,
and a page rendered in a pseudo-language shows no text that was not marked."""

from __future__ import annotations

import gettext
import re
from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser
from pathlib import Path

import pytest
from babel.messages.frontend import CommandLineInterface
from babel.messages.pofile import read_po

from upwatch.kit import languages
from upwatch.kit.languages import LANGUAGES, SOURCE, catalog_path
from upwatch.statuspages import render
from upwatch.statuspages.schemas import (
    PublicComponent,
    PublicDay,
    PublicGroup,
    PublicIncident,
    PublicIncidentUpdate,
    PublicMaintenance,
    PublicMessage,
    PublicStatusPage,
)

pytestmark = pytest.mark.db_independent

ROOT = Path(__file__).parents[2]
TEMPLATE = ROOT / "upwatch" / "locales" / "messages.pot"
PLACEHOLDER = re.compile(r"%\(\w+\)[sd]")
MARKUP = re.compile(r"<[^>]*>|&\w+;")
# Names of products, protocols and figures any language may keep as they are.
KEPT_NAMES: frozenset[str] = frozenset(
    {
        "%(minutes)s min",
        "Apdex (T = %(threshold)s ms)",
        "Apprise",
        "DNS",
        "Discord",
        "Google Chat",
        "Gotify",
        "HTTP(S)",
        "Matrix",
        "Mattermost",
        "Microsoft Teams",
        "MySQL / MariaDB",
        "Opsgenie",
        "PagerDuty",
        "Ping (ICMP)",
        "PostgreSQL",
        "Pushover",
        "Redis",
        "Rocket.Chat",
        "SMS (Twilio)",
        "Slack",
        "TLS",
        "Telegram",
        "URL",
        "WebSocket",
        "Webhook",
        "WhatsApp (Twilio)",
        "ntfy",
        "p95",
        "p99",
        "pro",
    }
)
# Words a language rightly writes as English does (reviewed, one language at a time): French
# "Description", German "Status", Brazilian Portuguese "status", Italian "Password".
SAME_AS_ENGLISH: dict[str, set[str]] = {
    "de": {
        "Code",
        "Details",
        "Domain",
        "Filter",
        "Heartbeat",
        "Host",
        "Monitor",
        "Monitor: %(monitor)s",
        "Name",
        "Passkeys",
        "Port",
        "Region",
        "Status",
    },
    "es": {
        "Error",
        "Host",
        "Local",
        "Monitor",
        "Monitor: %(monitor)s",
        "Plan",
        "Roles",
        "Total",
        "monitor",
        "no",
        "plan",
    },
    "fr": {
        "Action",
        "Actions",
        "Administration",
        "Assertions",
        "Code",
        "Console",
        "Description",
        "E-mail",
        "Incidents",
        "Maintenance",
        "Message",
        "Notifications",
        "Port",
        "Quorum",
        "Service",
        "Session",
        "Sessions",
        "Total",
        "Type",
        "incident",
        "invitation",
        "maintenance",
        "message",
        "page",
        "session",
    },
    "it": {
        "Console",
        "E-mail",
        "Heartbeat",
        "Host",
        "Monitor",
        "Monitor: %(monitor)s",
        "Password",
        "Quorum",
        "account",
        "monitor",
        "no",
        "passkey",
    },
    "pt": {
        "%(count)s item",
        "Console",
        "E-mail",
        "Heartbeat",
        "Host",
        "Local",
        "Monitor",
        "Monitor: %(monitor)s",
        "Status",
        "Total",
        "monitor",
        "status",
    },
}
# Texts of placeholders and punctuation alone are not counted.


def _ids(path: Path) -> set[str]:
    with path.open("rb") as source:
        return {m.id for m in read_po(source) if m.id}  # type: ignore[misc]


def test_the_template_catalog_holds_exactly_the_texts_marked_in_the_code(tmp_path: Path) -> None:
    fresh = tmp_path / "messages.pot"
    extract = ["pybabel", "-q", "extract", "--no-location", "-F", str(ROOT / "babel.cfg")]
    extract += [
        "-k",
        "worded:2",
    ]  # a request pattern's words (kit/inputs.py), as scripts/translations
    CommandLineInterface().run([*extract, "-o", str(fresh), str(ROOT)])
    assert _ids(fresh) == _ids(TEMPLATE), "run scripts/translations"


@pytest.mark.parametrize("language", [code for code in LANGUAGES if code != SOURCE])
def test_every_text_is_translated_with_the_same_placeholders(language: str) -> None:
    with catalog_path(language).open("rb") as source:
        catalog = read_po(source, locale=language)
    assert {m.id for m in catalog if m.id} == _ids(TEMPLATE), "run scripts/translations"
    for message in catalog:
        if not message.id:
            continue
        assert not message.fuzzy, f"{language}: {message.id!r} is fuzzy"
        # A plural text: each of the language's forms, against both English forms.
        plural = isinstance(message.id, tuple)
        sources = list(message.id) if plural else [message.id]
        forms = list(message.string) if plural else [message.string]
        if plural:
            assert len(forms) == catalog.num_plurals, (language, message.id)
        wanted = sorted(set(PLACEHOLDER.findall(" ".join(sources))))
        # A bare % would break the formatting, unless the source has one too (a text that is
        # never formatted: a header name's allowed characters).
        bare = "%" in PLACEHOLDER.sub("", sources[0]).replace("%%", "")
        for form in forms:
            text = str(form or "")
            assert text.strip(), f"{language}: {message.id!r} is not translated"
            if text in sources and re.search(r"[A-Za-z]", PLACEHOLDER.sub("", text)):
                allowed = KEPT_NAMES | SAME_AS_ENGLISH.get(language, set())
                assert sources[0] in allowed, (language, text)
            assert sorted(set(PLACEHOLDER.findall(text))) == wanted, (language, message.id, text)
            if not bare:
                assert "%" not in PLACEHOLDER.sub("", text).replace("%%", ""), (language, text)
            # Markup a template trusts (a {% trans %} block's text is not escaped): a translation
            # keeps the source's tags and entities and adds no quote or angle bracket.
            assert sorted(MARKUP.findall(text)) == sorted(MARKUP.findall(sources[0])), (
                language,
                text,
            )
            for character in '"<>':
                assert text.count(character) <= max(t.count(character) for t in sources), (
                    language,
                    text,
                )


class Pseudo(gettext.NullTranslations):
    """Marks every text it translates, so what a page shows unmarked stands out."""

    def gettext(self, message: str) -> str:
        return f"⟦{message}⟧"

    def ngettext(self, singular: str, plural: str, n: int) -> str:
        return f"⟦{singular if n == 1 else plural}⟧"

    def pgettext(self, context: str, message: str) -> str:
        return f"⟦{message}⟧"


VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "wbr"}


class Texts(HTMLParser):
    """The text nodes and the attributes people read, outside style and script and outside
    elements marked ``translate="no"`` (HTML's own mark for values that are not words of a
    language: an event's name, a token, a request's details)."""

    READ = ("title", "aria-label", "placeholder", "alt", "content", "label")

    def __init__(self, only: tuple[str, ...] = ()) -> None:
        """``only``: read the text of these elements alone (a feed's people-facing ones)."""
        super().__init__()
        self.texts: list[str] = []
        self._skipping = 0
        self._only = only
        self._open: list[tuple[str, bool]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self._only:
            self._skipping = 0 if tag in self._only else 1
            return
        if tag in ("style", "script"):
            self._skipping += 1
        untranslated = ("translate", "no") in attrs
        if tag not in VOID:
            self._open.append((tag, untranslated))
        if untranslated or any(no for _tag, no in self._open):
            return
        for name, value in attrs:
            if name in self.READ and value and not (tag == "meta" and name == "content"):
                self.texts.append(value)
            if tag == "meta" and name == "content" and ("name", "description") in attrs:
                self.texts.append(value or "")

    def handle_endtag(self, tag: str) -> None:
        if self._only:
            self._skipping = 1
            return
        if tag in ("style", "script"):
            self._skipping -= 1
        # Up to the element this tag closes (a <p> or <li> may have been left open).
        for n in range(len(self._open) - 1, -1, -1):
            if self._open[n][0] == tag:
                del self._open[n:]
                break

    def handle_data(self, data: str) -> None:
        if any(no for _tag, no in self._open):
            return
        if not self._skipping and data.strip():
            self.texts.append(data)


def _page() -> PublicStatusPage:
    now = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
    days = [
        PublicDay(date=(now - timedelta(days=n)).date(), status=status, uptimePercentage=value)
        for n, (status, value) in enumerate(
            [("operational", 100.0), ("major_outage", 42.5), ("no_data", None)]
        )
    ]
    components = [
        PublicComponent(
            id="c1", name="Owner API", description="Owner words", status="major_outage",
            uptime90d=99.5, days=days,
        ),
        PublicComponent(
            id="c2", name="Owner Web", description="", status="unknown", uptime90d=None,
            days=days,
        ),
    ]  # fmt: skip
    update = PublicIncidentUpdate(status="identified", message="Owner update", createdAt=now)
    return PublicStatusPage(
        name="Owner Page",
        slug="owner",
        description="",
        theme="light",
        overallStatus="major_outage",
        message=PublicMessage(message="Owner message", componentIds=["c1"], createdAt=now),
        components=components,
        incidents=[
            PublicIncident(
                id="i1", title="Owner incident", status="identified", severity="high",
                impact="major_outage", startedAt=now, resolvedAt=None, componentIds=["c1"],
                updates=[update],
            ),
            PublicIncident(
                id="i2", title="Owner old incident", status="resolved", severity="low",
                impact=None, startedAt=now, resolvedAt=now, componentIds=[], updates=[update],
            ),
        ],
        maintenance=[
            PublicMaintenance(
                id="m1", title="Owner window", startsAt=now, endsAt=now, active=False,
                componentIds=["c2"],
            ),
        ],
        groups=[PublicGroup(id="g1", name="Owner group", status="major_outage",
                            componentIds=["c2"], order=0)],
        timeZone="UTC",
        language="de",
        visitorLanguage=True,
        updatedAt=now,
    )  # fmt: skip


OWNERS = re.compile(r"Owner[ \w]*|Shop status")
# What is not text to translate: dates and figures, separators, feed names, the e-mail example,
# and each language's own name in the switcher.
NOT_WORDS = re.compile(
    r"\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC|[\d.,%]+|[·:,()\s-]|UTC|RSS|Atom|you@example\.com|"
    + "|".join(re.escape(name) for name in languages.NAMES.values())
)


def test_a_page_in_a_pseudo_language_shows_only_marked_texts_and_the_owners(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(languages, "translations", lambda _language: Pseudo())
    monkeypatch.setattr(render, "_RECTS", {})  # day bars keep their words by language
    page = _page()
    parser = Texts()
    parser.feed(render.html(page, "", "", "qps").decode())
    parser.feed(render.password_form("owner", True, "qps").decode())
    parser.feed(render.message("Subscribed", "Unsubscribed", "owner", language="qps").decode())
    feeds = Texts(only=("title", "subtitle", "description", "content"))
    feeds._skipping = 1
    for feed in (render.rss(page, "http://x/s/owner"), render.atom(page, "http://x/s/owner")):
        feeds.feed(feed.decode())
    parser.texts += feeds.texts
    assert parser.texts
    # A marked text may hold markup (a <time> in "Updated ..."): markers span text nodes.
    left = "\n".join(parser.texts)
    while True:
        inner = re.sub(r"⟦[^⟦⟧]*⟧", " ", left)
        if inner == left:
            break
        left = inner
    assert "⟦" not in left, left
    assert "⟧" not in left, left
    unmarked = [
        line for line in NOT_WORDS.sub(" ", OWNERS.sub(" ", left)).splitlines() if line.strip()
    ]
    assert unmarked == [], [line.strip() for line in unmarked]


@pytest.mark.parametrize(
    ("header", "language"),
    [
        ("de-CH, fr;q=0.5", "de"),
        ("fr;q=0.5, ja", "ja"),
        (" zh-TW ; q=0.9 ", "zh"),
        ("en;q=0, ko", "ko"),
        ("tlh, x-pirate;q=0.8", None),
        ("", None),
        ("a" + " " * 998 + "x", None),
        ("de;q=abc, it;q=0.1", "it"),
    ],
)
def test_a_browsers_languages_are_read_by_their_weights(header: str, language: str | None) -> None:
    assert languages.negotiate(header) == language
