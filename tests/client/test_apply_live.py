"""``upwatch apply`` and ``export`` as a user runs them: the real command against a live
``upwatch serve``, with an API key. First apply creates everything, a second changes nothing,
an edit changes exactly what was edited, ``--prune`` deletes what the file dropped,
``--dry-run`` changes nothing, an export applies as a no-op, and a bad file is refused with
its line and field before anything changes."""

from __future__ import annotations

import copy
import hashlib
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from argon2 import PasswordHasher

from tests.factories import bearer
from tests.live_server import LiveServer, ThreadedTarget, clean_env, run_cli

PASSWORD = "correct horse battery staple"
SLACK_URL = "https://hooks.slack.com/services/T000/B000/abcdefghijklmnop"
TOKEN = "Bearer first-token-value"
PATHS = {
    "providers": "/notification-providers/user",
    "monitors": "/monitors",
    "statusPages": "/status-pages",
    "maintenance": "/maintenance-windows",
}

FILE: dict[str, Any] = {
    "version": 1,
    "providers": [
        {
            "key": "team",
            "type": "slack",
            "name": "Team",
            "config": {"webhookUrl": {"env": "SLACK"}},
        },
        {"key": "ops-mail", "type": "email", "name": "Ops", "config": {"to": ["ops@example.com"]}},
    ],
    "monitors": [
        {
            "key": "api",
            "name": "API",
            "type": "http",
            "url": "http://127.0.0.1:9/health",
            "intervalSeconds": 300,
            "headers": {"Authorization": {"env": "API_TOKEN"}, "Accept": "application/json"},
            "assertions": [{"source": "statusCode", "operator": "equals", "value": 200}],
        },
        {
            "key": "db",
            "name": "Database",
            "type": "tcp",
            "host": "127.0.0.1",
            "port": 9,
            "intervalSeconds": 600,
        },
        {
            "key": "web",
            "name": "Web",
            "type": "http",
            "url": "http://127.0.0.1:9/",
            "intervalSeconds": 300,
            "dependsOn": ["api", "db"],
        },
    ],
    "statusPages": [
        {
            "key": "public",
            "name": "Shop status",
            "slug": "shop-status",
            "components": [{"monitor": "web", "name": "Website"}, {"monitor": "api"}],
        }
    ],
    "maintenance": [
        {
            "key": "sundays",
            "title": "Sunday deploys",
            "startsAt": "2030-01-06T02:00:00Z",
            "endsAt": "2030-01-06T03:00:00Z",
            "rrule": "FREQ=WEEKLY;BYDAY=SU",
            "monitors": ["db"],
        }
    ],
}


class Project:
    """A live server, a project on it, and an API key of that project."""

    def __init__(self, tmp: Path) -> None:
        env = clean_env(
            UPWATCH_DATABASE_URL=f"sqlite+aiosqlite:///{tmp / 'upwatch.db'}",
            UPWATCH_ALLOW_PRIVATE_TARGETS="true",
        )
        self.tmp = tmp
        self.server = LiveServer(tmp, env).start()
        self.api = httpx.Client(base_url=self.server.url, timeout=30)
        signup = self.api.post(
            "/auth/signup", json={"email": "a@example.com", "password": PASSWORD}
        )
        person = bearer(signup, 201)
        assert self.api.post("/subscriptions/upgrade", headers=person, json={}).status_code == 200
        project = self.api.post("/projects", headers=person, json={"name": "Shop"})
        self.project_id = project.json()["id"]
        key = self.api.post(
            f"/projects/{self.project_id}/api-keys",
            headers=person,
            json={"name": "CI", "scope": "write"},
        )
        self.key = key.json()["key"]
        self.headers = {"Authorization": f"Bearer {self.key}"}
        self.env = clean_env(
            UPWATCH_API_URL=self.server.url,
            UPWATCH_API_KEY=self.key,
            SLACK=SLACK_URL,
            API_TOKEN=TOKEN,
        )

    def upwatch(self, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        return run_cli(self.tmp, {**self.env, **env}, *args)

    def apply(self, document: dict[str, Any], *flags: str, **env: str) -> str:
        path = self.tmp / "upwatch.yaml"
        path.write_text(yaml.safe_dump(document, sort_keys=False))
        done = self.upwatch("apply", "-f", str(path), *flags, **env)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    def monitor_by_hand(self) -> dict[str, Any]:
        """A monitor made through the API without a key: no file manages it."""
        made = self.api.post(
            "/monitors",
            headers=self.headers,
            json={
                "projectId": self.project_id,
                "name": "By hand",
                "type": "tcp",
                "host": "127.0.0.1",
                "port": 9,
                "intervalSeconds": 600,
            },
        )
        assert made.status_code == 201, made.text
        result: dict[str, Any] = made.json()
        return result

    def state(self) -> dict[str, dict[str, dict[str, Any]]]:
        """Every object of the project by kind and key, as defined: without what checks and
        the clock change (status, last check, update time)."""
        found = {}
        for kind, path in PATHS.items():
            listed = self.api.get(path, headers=self.headers, params={"projectId": self.project_id})
            found[kind] = {obj["key"] or obj["id"]: definition(obj) for obj in listed.json()}
        return found


VOLATILE = {"status", "lastCheckedAt", "updatedAt", "active", "nextStartsAt"}


def definition(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: definition(v) for k, v in obj.items() if k not in VOLATILE}
    if isinstance(obj, list):
        return [definition(v) for v in obj]
    return obj


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Project]:
    made = Project(tmp_path_factory.mktemp("apply"))
    yield made
    made.api.close()
    made.server.stop()


@pytest.fixture
def fresh(project: Project) -> Project:
    """The project emptied of what files manage."""
    project.apply({"version": 1}, "--prune")
    return project


def lines(output: str) -> list[str]:
    return [line.strip() for line in output.splitlines()]


def test_the_first_apply_creates_everything_and_a_second_changes_nothing(fresh: Project) -> None:
    first = fresh.apply(FILE)
    assert "Plan: 7 to create, 0 to update, 0 to replace, 0 to delete, 0 unchanged." in first
    assert "+ monitor web: create" in lines(first)
    state = fresh.state()
    assert set(state["monitors"]) == {"api", "db", "web"}
    ids = {key: monitor["id"] for key, monitor in state["monitors"].items()}
    assert sorted(state["monitors"]["web"]["dependsOn"]) == sorted([ids["api"], ids["db"]])
    page = state["statusPages"]["public"]
    assert [(c["monitorId"], c["name"]) for c in page["components"]] == [
        (ids["web"], "Website"),
        (ids["api"], "API"),
    ]
    assert state["maintenance"]["sundays"]["monitorIds"] == [ids["db"]]
    # Secrets reached the service and were never shown; their digests match the environment.
    slack = state["providers"]["team"]
    assert SLACK_URL not in str(slack)
    assert PasswordHasher().verify(slack["secretRefs"]["config.webhookUrl"]["digest"], SLACK_URL)
    auth = state["monitors"]["api"]["secretRefs"]["headers.Authorization"]
    assert auth["env"] == "API_TOKEN"

    second = fresh.apply(FILE)
    assert "Plan: 0 to create, 0 to update, 0 to replace, 0 to delete, 7 unchanged." in second
    assert "Nothing to do." in second
    assert fresh.state() == state


def test_each_applying_run_is_one_event_of_the_projects_audit_log(fresh: Project) -> None:
    login = fresh.api.post("/auth/login", json={"email": "a@example.com", "password": PASSWORD})
    owner = bearer(login, 200)

    def runs() -> list[dict[str, Any]]:
        log = fresh.api.get(
            f"/projects/{fresh.project_id}/audit-log",
            headers=owner,
            params={"kind": "config.applied"},
        )
        assert log.status_code == 200, log.text
        found: list[dict[str, Any]] = log.json()
        return found

    before = len(runs())  # the module's earlier tests applied to this project too
    fresh.apply(FILE)
    fresh.apply(FILE)  # nothing to do: no run to record
    event, *older = runs()
    assert len(older) == before
    digest = hashlib.sha256(yaml.safe_dump(FILE, sort_keys=False).encode()).hexdigest()
    assert event["details"] == {
        "created": 7,
        "updated": 0,
        "replaced": 0,
        "deleted": 0,
        "unchanged": 0,
        "fileDigest": digest,
    }
    assert event["via"].startswith("api_key:")
    assert event["userAgent"].startswith("upwatch/")
    # A read key cannot write the record.
    read_key = fresh.api.post(
        f"/projects/{fresh.project_id}/api-keys",
        headers=owner,
        json={"name": "reader", "scope": "read"},
    ).json()["key"]
    refused = fresh.api.post(
        f"/projects/{fresh.project_id}/config-applied",
        headers={"Authorization": f"Bearer {read_key}"},
        json={"created": 1},
    )
    assert refused.status_code == 403


def test_an_edited_file_updates_exactly_what_changed(fresh: Project) -> None:
    fresh.apply(FILE)
    before = fresh.state()
    edited = copy.deepcopy(FILE)
    edited["monitors"][1]["intervalSeconds"] = 900
    edited["statusPages"][0]["components"].reverse()
    output = fresh.apply(edited, API_TOKEN="Bearer rotated-token")
    assert "~ monitor db: update (intervalSeconds)" in lines(output)
    assert "~ monitor api: update (headers)" in lines(output)  # the rotated secret
    assert "Plan: 0 to create, 3 to update, 0 to replace, 0 to delete, 4 unchanged." in output
    after = fresh.state()
    assert after["monitors"]["db"]["intervalSeconds"] == 900
    assert PasswordHasher().verify(
        after["monitors"]["api"]["secretRefs"]["headers.Authorization"]["digest"],
        "Bearer rotated-token",
    )
    for kind in ("providers", "maintenance"):
        assert after[kind] == before[kind]
    assert after["monitors"]["web"] == before["monitors"]["web"]
    names = [c["name"] for c in after["statusPages"]["public"]["components"]]
    assert names == ["API", "Website"]

    # A new address for a monitor whose secret header comes from the environment: the secret
    # goes with it (the service keeps a masked one only for the same destination).
    edited["monitors"][0]["url"] = "http://127.0.0.1:9/v2/health"
    moved = fresh.apply(edited, API_TOKEN="Bearer rotated-token")
    assert "~ monitor api: update (url)" in lines(moved)
    assert fresh.state()["monitors"]["api"]["url"] == "http://127.0.0.1:9/v2/health"


def test_prune_deletes_what_the_file_dropped_and_only_with_prune(fresh: Project) -> None:
    fresh.apply(FILE)
    # An object made by hand has no key: apply never touches it, prune or not.
    by_hand = fresh.monitor_by_hand()
    smaller = copy.deepcopy(FILE)
    smaller["monitors"] = [m for m in smaller["monitors"] if m["key"] != "db"]
    smaller["monitors"][1].pop("dependsOn")
    smaller["maintenance"] = []
    smaller["providers"] = smaller["providers"][:1]
    kept = fresh.apply(smaller)
    assert "Plan: 0 to create, 0 to update, 0 to replace, 0 to delete, 4 unchanged." in kept
    assert "db" in fresh.state()["monitors"]

    pruned = fresh.apply(smaller, "--prune")
    for line in ["- monitor db: delete", "- provider ops-mail: delete"]:
        assert line in lines(pruned)
    assert "- maintenance window sundays: delete" in lines(pruned)
    state = fresh.state()
    assert set(state["monitors"]) == {"api", "web", by_hand["id"]}
    assert set(state["providers"]) == {"team"}
    assert state["maintenance"] == {}
    fresh.api.delete(f"/monitors/{by_hand['id']}", headers=fresh.headers)


def test_a_dry_run_prints_the_plan_and_changes_nothing(fresh: Project) -> None:
    fresh.apply(FILE)
    before = fresh.state()
    edited = copy.deepcopy(FILE)
    edited["monitors"][0]["name"] = "Public API"
    edited["providers"] = []
    output = fresh.apply(edited, "--dry-run", "--prune")
    assert "~ monitor api: update (name)" in lines(output)
    assert "- provider team: delete" in lines(output)
    assert "Nothing changed (--dry-run)." in output
    assert fresh.state() == before


def test_detailed_exitcode_says_2_while_changes_are_pending_and_0_once_applied(
    fresh: Project,
) -> None:
    path = fresh.tmp / "upwatch.yaml"
    path.write_text(yaml.safe_dump(FILE, sort_keys=False))
    pending = fresh.upwatch("apply", "-f", str(path), "--dry-run", "--detailed-exitcode")
    assert pending.returncode == 2, pending.stdout + pending.stderr
    applied = fresh.upwatch("apply", "-f", str(path), "--detailed-exitcode")
    assert applied.returncode == 2, applied.stdout + applied.stderr
    settled = fresh.upwatch("apply", "-f", str(path), "--dry-run", "--detailed-exitcode")
    assert settled.returncode == 0, settled.stdout + settled.stderr
    path.write_text("monitors: [{name: 1}]\n")
    broken = fresh.upwatch("apply", "-f", str(path), "--dry-run", "--detailed-exitcode")
    assert broken.returncode == 1, broken.stdout + broken.stderr


def test_url_and_api_key_flags_stand_in_for_the_environment(project: Project) -> None:
    bare = {k: v for k, v in project.env.items() if k not in ("UPWATCH_API_KEY", "UPWATCH_API_URL")}
    done = run_cli(
        project.tmp, bare, "status", "--json", "--url", project.server.url, "--api-key", project.key
    )
    assert done.returncode == 0, done.stderr
    assert isinstance(json.loads(done.stdout), list)


def test_an_export_applies_as_a_no_op(fresh: Project) -> None:
    fresh.apply(FILE)
    exported = fresh.upwatch("export")
    assert exported.returncode == 0, exported.stderr
    assert SLACK_URL not in exported.stdout
    assert TOKEN not in exported.stdout
    document = yaml.safe_load(exported.stdout)
    slack = next(p for p in document["providers"] if p["key"] == "team")
    assert slack["config"]["webhookUrl"] == {"env": "SLACK"}  # the reference, written back
    output = fresh.apply(document)
    assert "Nothing to do." in output
    assert "0 to create, 0 to update, 0 to replace, 0 to delete, 7 unchanged" in output


def test_secrets_and_monitors_set_by_hand_survive_an_export_and_its_apply(
    fresh: Project,
) -> None:
    routing_key = "a" * 32
    pager = fresh.api.post(
        "/notification-providers",
        headers=fresh.headers,
        json={
            "projectId": fresh.project_id,
            "key": "pager",
            "type": "pagerduty",
            "name": "Pager",
            "config": {"routingKey": routing_key},
        },
    )
    assert pager.status_code == 201, pager.text
    by_hand = fresh.monitor_by_hand()
    window = fresh.api.post(
        "/maintenance-windows",
        headers=fresh.headers,
        json={
            "projectId": fresh.project_id,
            "key": "by-hand-window",
            "title": "Covers a monitor without a key",
            "startsAt": "2030-01-01T00:00:00Z",
            "endsAt": "2030-01-01T01:00:00Z",
            "monitorIds": [by_hand["id"]],
        },
    )
    assert window.status_code == 201, window.text
    exported = fresh.upwatch("export")
    assert "covers a monitor without a key; monitors left out" in exported.stderr
    document = yaml.safe_load(exported.stdout)
    (written,) = document["providers"]
    assert written["config"]["routingKey"].startswith("****")  # its mask: no reference
    assert routing_key not in exported.stdout
    again = fresh.apply(document, "--prune")
    assert "Nothing to do." in again
    assert fresh.state()["maintenance"]["by-hand-window"]["monitorIds"] == [by_hand["id"]]

    # A mask can stand for a stored secret, never make a new one.
    written["key"] = "pager-copy"
    path = fresh.tmp / "copy.yaml"
    path.write_text(yaml.safe_dump(document))
    refused = fresh.upwatch("apply", "-f", str(path))
    assert refused.returncode == 2
    assert "provider pager-copy: config.routingKey: a masked secret cannot make" in refused.stderr
    fresh.api.delete(f"/maintenance-windows/{window.json()['id']}", headers=fresh.headers)
    fresh.api.delete(f"/monitors/{by_hand['id']}", headers=fresh.headers)


def test_export_adopt_gives_objects_made_by_hand_a_key(fresh: Project) -> None:
    made = fresh.api.post(
        "/status-pages",
        headers=fresh.headers,
        json={"projectId": fresh.project_id, "name": "Made by hand", "slug": "by-hand"},
    )
    assert made.status_code == 201, made.text
    plain = fresh.upwatch("export")
    assert "1 status page(s) without a key left out" in plain.stderr
    adopted = fresh.upwatch("export", "--adopt")
    pages = yaml.safe_load(adopted.stdout)["statusPages"]
    assert [page["key"] for page in pages] == ["made-by-hand"]
    fresh.api.delete(f"/status-pages/{made.json()['id']}", headers=fresh.headers)


def test_a_bad_file_is_refused_with_its_line_and_field_and_nothing_changes(
    fresh: Project,
) -> None:
    fresh.apply(FILE)
    before = fresh.state()
    text = yaml.safe_dump(FILE, sort_keys=False)
    numbered = text.replace("intervalSeconds: 600", "intervalSeconds: 5").splitlines()
    at = next(i for i, line in enumerate(numbered) if line.endswith("name: Shop status"))
    indent = numbered[at][: len(numbered[at]) - len(numbered[at].lstrip(" -"))]
    numbered.insert(at + 1, " " * len(indent) + "colour: blue")
    broken = "\n".join(numbered) + "\n"
    path = fresh.tmp / "broken.yaml"
    path.write_text(broken)
    done = fresh.upwatch("apply", "-f", str(path))
    assert done.returncode == 2
    interval_line = next(i for i, line in enumerate(numbered, 1) if "intervalSeconds: 5" in line)
    colour_line = next(i for i, line in enumerate(numbered, 1) if "colour: blue" in line)
    assert f"{path}:{interval_line}: monitors[1].intervalSeconds: at least 10" in done.stderr
    assert f"{path}:{colour_line}: statusPages[0].colour: unknown field" in done.stderr
    assert "nothing was changed" in done.stderr
    assert fresh.state() == before

    unset = {k: v for k, v in fresh.env.items() if k != "API_TOKEN"}
    refused = run_cli(fresh.tmp, unset, "apply", "-f", str(fresh.tmp / "upwatch.yaml"))
    assert refused.returncode == 2
    assert "headers.Authorization: the environment variable API_TOKEN is not set" in refused.stderr

    plain = copy.deepcopy(FILE)
    plain["monitors"][0]["headers"]["Accept"] = {"env": "API_TOKEN"}
    path.write_text(yaml.safe_dump(plain, sort_keys=False))
    not_secret = fresh.upwatch("apply", "-f", str(path))
    assert not_secret.returncode == 2
    assert "monitors[0].headers.Accept: not a secret field" in not_secret.stderr

    path.write_text("version: 1\nmonitors:\n  - key: [unclosed\n")
    syntax = fresh.upwatch("apply", "-f", str(path))
    assert syntax.returncode == 2
    assert f"{path}:4: not valid YAML" in syntax.stderr


def test_the_commands_need_a_key_and_say_so(project: Project) -> None:
    no_key = {k: v for k, v in project.env.items() if k != "UPWATCH_API_KEY"}
    done = run_cli(project.tmp, no_key, "status")
    assert done.returncode == 2
    assert "UPWATCH_API_KEY" in done.stderr
    revoked = project.upwatch("status", UPWATCH_API_KEY="upw_not-a-key")
    assert revoked.returncode == 1
    assert "401" in revoked.stderr


@pytest.fixture(scope="module")
def target() -> Iterator[str]:
    """A real HTTP endpoint that answers 200."""
    with ThreadedTarget() as server:
        yield f"{server.base}/health"


def test_status_incidents_and_check_print_for_people_and_for_scripts(
    fresh: Project, target: str
) -> None:
    down = {"key": "down", "name": "Down", "type": "tcp", "host": "127.0.0.1", "port": 9}
    up = {"key": "up", "name": "Up", "type": "http", "url": target, "intervalSeconds": 600}
    fresh.apply({"version": 1, "monitors": [up, {**down, "intervalSeconds": 600}]})

    checked = fresh.upwatch("check", "up", "--json")
    assert checked.returncode == 0, checked.stderr
    result = json.loads(checked.stdout)
    assert (result["status"], result["statusCode"]) == ("up", 200)
    assert result["timings"]["totalMs"] > 0
    person = fresh.upwatch("check", "Up")  # by name too
    assert person.stdout.startswith("Up: up, HTTP 200 in ")
    assert "connect" in person.stdout

    failed = fresh.upwatch("check", "down")
    assert failed.returncode == 3  # a script can tell a down check
    assert "Down: down" in failed.stdout
    unknown = fresh.upwatch("check", "nothing-by-that-name")
    assert unknown.returncode == 1
    assert "no monitor with the id, key or name 'nothing-by-that-name'" in unknown.stderr

    status = json.loads(fresh.upwatch("status", "--json").stdout)
    assert {(m["name"], m["status"]) for m in status} >= {("Up", "up")}
    table = fresh.upwatch("status").stdout
    assert "Monitor" in table
    assert "Up" in table

    incidents = fresh.upwatch("incidents", "--json")
    assert incidents.returncode == 0, incidents.stderr
    listed = json.loads(incidents.stdout)
    assert all(i["status"] != "resolved" for i in listed)
    assert "Down" in " ".join(i["title"] for i in listed)  # the failed check opened one
    assert "Down" in fresh.upwatch("incidents").stdout
