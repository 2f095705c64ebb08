"""Component groups and the page's time zone in ``upwatch apply`` and ``export``: a
component names its group, the groups follow the file, and an export applies as a no-op."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from tests.client.test_apply_live import FILE, Project, lines

GROUPED: dict[str, Any] = copy.deepcopy(FILE)
GROUPED["statusPages"][0]["timeZone"] = "Europe/Paris"
GROUPED["statusPages"][0]["components"] = [
    {"monitor": "web", "name": "Website", "group": "Shop"},
    {"monitor": "db", "name": "Database"},
    {"monitor": "api", "name": "API", "group": "Shop"},
]


@pytest.fixture(scope="module")
def grouped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Project]:
    made = Project(tmp_path_factory.mktemp("apply-groups"))
    yield made
    made.api.close()
    made.server.stop()


def _page(project: Project) -> dict[str, Any]:
    page: dict[str, Any] = project.state()["statusPages"]["public"]
    return page


def test_groups_named_in_a_file_are_made_kept_moved_and_removed_with_it(grouped: Project) -> None:
    grouped.apply(GROUPED)
    page = _page(grouped)
    assert page["timeZone"] == "Europe/Paris"
    by_name = {c["name"]: c for c in page["components"]}
    (shop,) = page["groups"]
    assert shop["name"] == "Shop"
    assert shop["order"] == 0  # where its first member is
    assert shop["componentIds"] == [by_name["Website"]["id"], by_name["API"]["id"]]
    assert by_name["Database"]["groupId"] is None
    again = grouped.apply(GROUPED)
    assert "Nothing to do." in again
    assert _page(grouped) == page

    exported = grouped.upwatch("export")
    assert exported.returncode == 0, exported.stderr
    document = yaml.safe_load(exported.stdout)
    (entry,) = document["statusPages"]
    assert entry["timeZone"] == "Europe/Paris"
    assert [c.get("group") for c in entry["components"]] == ["Shop", None, "Shop"]
    assert "Nothing to do." in grouped.apply(document)

    edited = copy.deepcopy(GROUPED)
    edited["statusPages"][0]["components"][2].pop("group")
    edited["statusPages"][0]["components"][1]["group"] = "Data"
    output = grouped.apply(edited)
    assert "~ status page public: update (components[db]: group, components[api]: group)" in lines(
        output
    )
    page = _page(grouped)
    by_name = {c["name"]: c for c in page["components"]}
    assert [(g["name"], g["componentIds"]) for g in page["groups"]] == [
        ("Shop", [by_name["Website"]["id"]]),
        ("Data", [by_name["Database"]["id"]]),
    ]
    assert by_name["API"]["groupId"] is None

    ungrouped = copy.deepcopy(FILE)
    output = grouped.apply(ungrouped)
    assert "groups[Shop]: remove" in output
    assert _page(grouped)["groups"] == []
    assert all(c["groupId"] is None for c in _page(grouped)["components"])
