"""A notification channel is one module: its name is written there and nowhere else.

The rule, checked over every file of the ``upwatch`` package outside ``migrations/``:

* in a Python module, a channel is *named* where a string literal is exactly its name
  (``"discord"``, ``'discord'``) or an identifier is exactly its name (``discord``,
  ``.discord``, ``discord=``, the ``discord`` of an import path). Comments and prose (a
  docstring, an error message) do not count: ``"Discord rejects ..."`` is not a listing;
* in any other file (TOML, HTML templates), a channel is named where its name stands quoted.

Each registered name must be named in exactly one module: the one that declares it.

One name is also a word of another domain: ``email`` is an account's address (a column, a form
field, a JSON-schema format). For it, identifiers do not count (``user.email`` is everywhere),
and the string literal ``"email"`` counts everywhere except in the modules listed in
``ADDRESS_FIELD``, where it names that address. A module that deals with channels must never be
in that list (a test below says so), so a channel listing there would still fail. The importers map
other tools' names for their notification types onto channel names (``FOREIGN_VOCABULARY``,
exempt for every name, under the same guard). Three
names are also a status-page subscriber's kind (``email``, ``webhook``, ``slack``): the
modules listed in ``SUBSCRIBER_KIND`` deliver subscriber notices and are exempt for those
names, under the same guard.
"""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

import pytest

from upwatch.notifications.channels import REGISTRY

pytestmark = pytest.mark.db_independent

PACKAGE = Path(__file__).resolve().parents[2] / "upwatch"

# Where the literal "email" is an account's address, not the channel.
ADDRESS_FIELD = frozenset(
    {
        "kit/schemas.py",
        "billing/repository.py",
        "models/statuspage.py",
        "models/project.py",
        "operations/bootstrap.py",
        "console/endpoints/signin.py",
        "console/endpoints/projects.py",
        "statuspages/site.py",
        "console/templates/project.html",
        "console/templates/login.html",
        "console/templates/forgot.html",
        "console/templates/signup.html",
        "statuspages/templates/page.html",
        # An identity provider's `email` claim.
        "sso/provider.py",
        "sso/service.py",
    }
)
# Where "email", "webhook" and "slack" name a status-page subscriber's kind (a vocabulary of
# the statuspages domain, declared in statuspages/rules.py, that shares three words with the
# channels): these modules and templates deliver subscriber notices, never alerts.
SUBSCRIBER_KIND = frozenset(
    {
        "statuspages/rules.py",
        "statuspages/fanout.py",
        "statuspages/hooks.py",
        "statuspages/schemas.py",
        "statuspages/service.py",
        "statuspages/subscribers.py",
        "console/endpoints/statuspages.py",
        "console/templates/status_page_subscriber_added.html",
        "console/templates/status_page_subscriber_edit.html",
        "console/templates/status_page_subscriber_remove.html",
        "console/templates/status_page_subscribers.html",
    }
)
# The importers translate other tools' names for their notification types (Kuma's
# "discord", Gatus' "pagerduty", UptimeRobot's contact types) into a provider's `type` of the
# config file: a mapping from a foreign vocabulary, written once per source, that never
# sends anything (a test below says so).
FOREIGN_VOCABULARY = frozenset(
    {
        "importers/gatus.py",
        "importers/kuma.py",
        "importers/uptimerobot.py",
        "importers/healthchecks.py",
    }
)
ALSO_A_WORD = dict.fromkeys(REGISTRY, FOREIGN_VOCABULARY) | {
    "email": ADDRESS_FIELD | SUBSCRIBER_KIND | FOREIGN_VOCABULARY,
    "webhook": SUBSCRIBER_KIND | FOREIGN_VOCABULARY,
    "slack": SUBSCRIBER_KIND | FOREIGN_VOCABULARY,
}


def files() -> list[Path]:
    return [
        path
        for path in sorted(PACKAGE.rglob("*"))
        if path.is_file()
        and path.suffix in {".py", ".toml", ".html"}
        and "migrations" not in path.relative_to(PACKAGE).parts
    ]


def quoted(name: str) -> re.Pattern[str]:
    """``name`` between matching single or double quotes."""
    return re.compile(r"""(['"])""" + re.escape(name) + r"\1")


def names_in_python(source: str, name: str, identifiers: bool) -> bool:
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.STRING and quoted(name).fullmatch(token.string):
            return True
        if identifiers and token.type == tokenize.NAME and token.string == name:
            return True
    return False


def modules_naming(name: str) -> set[str]:
    """The files (relative to the package) that name ``name`` by the rule above."""
    found = set()
    for path in files():
        relative = path.relative_to(PACKAGE).as_posix()
        if relative in ALSO_A_WORD.get(name, ()):
            continue
        text = path.read_text()
        if path.suffix == ".py":
            named = names_in_python(text, name, identifiers=name != "email")
        else:
            named = quoted(name).search(text) is not None
        if named:
            found.add(relative)
    return found


def own_module(name: str) -> str:
    module = type(REGISTRY[name]).__module__
    return module.removeprefix("upwatch.").replace(".", "/") + ".py"


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_a_channel_is_named_only_in_its_own_module(name: str) -> None:
    assert modules_naming(name) == {own_module(name)}


def test_the_rule_sees_a_channel_listed_elsewhere(tmp_path: Path) -> None:
    # The checker itself must be able to fail: a listing of the old kind is caught.
    listing = 'CHANNELS = ("email", "slack")\nChannel = Literal["discord"]\ndiscord: bool\n'
    assert names_in_python(listing, "slack", identifiers=True)
    assert names_in_python("x.discord = 1\n", "discord", identifiers=True)
    assert names_in_python(listing, "email", identifiers=False)
    # Prose and longer words are not a listing.
    prose = '"""Slack and Discord, through a webhook."""\n# slack\nslackConfig = "slack hook"\n'
    assert not names_in_python(prose, "slack", identifiers=True)


def test_no_module_that_deals_with_channels_takes_the_address_exemption() -> None:
    channel_places = {"notifications/", "accounts/", "billing/service.py", "kit/plans"}
    exempt = ADDRESS_FIELD | SUBSCRIBER_KIND
    wrong = [module for module in exempt if any(module.startswith(p) for p in channel_places)]
    assert wrong == []
    assert all((PACKAGE / module).exists() for module in exempt)
    # The subscriber kinds' modules send notices of their own: none imports the channels'
    # delivery (a channel listing there would be a second way to alert).
    for module in SUBSCRIBER_KIND | FOREIGN_VOCABULARY:
        text = (PACKAGE / module).read_text()
        assert "channels import deliver" not in text, module
        assert "REGISTRY" not in text, module
