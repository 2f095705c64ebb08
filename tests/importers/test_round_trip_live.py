"""An imported file applied to a live Upwatch: applying it again changes nothing, and neither
does applying the project's export (import → apply → export → apply)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.client.test_apply_live import Project
from upwatch.importers import gatus, healthchecks, uptimerobot
from upwatch.importers.output import Imported

FIXTURES = Path(__file__).parent / "fixtures"
IMPORTS: dict[str, Callable[[], Imported]] = {
    "gatus": lambda: gatus.read([FIXTURES / "gatus.yaml"]),
    "uptimerobot": lambda: uptimerobot.read([FIXTURES / "uptimerobot"]),
    "healthchecks": lambda: healthchecks.read(
        [FIXTURES / "healthchecks" / "checks.json", FIXTURES / "healthchecks" / "channels.json"]
    ),
}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Project]:
    made = Project(tmp_path_factory.mktemp("imports"))
    yield made
    made.api.close()
    made.server.stop()


def unchanged(project: Project, path: Path, env: dict[str, str]) -> None:
    """``apply`` of the file plans no change (exit 0 under --detailed-exitcode)."""
    done = project.upwatch(
        "apply", "-f", str(path), "--dry-run", "--detailed-exitcode", "--prune", **env
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("source", sorted(IMPORTS))
def test_an_import_applies_and_its_export_applies_as_a_no_op(project: Project, source: str) -> None:
    imported = IMPORTS[source]()
    document: dict[str, Any] = yaml.safe_load(imported.text())
    # The fixtures' targets are public names: paused, no check looks them up (tests stay on
    # this machine); what is compared is the configuration.
    # The test server's plan checks at most once a minute (Gatus's 30 s would be refused, 402).
    for monitor in document["monitors"]:
        monitor["isActive"] = False
        monitor["intervalSeconds"] = max(60, monitor.get("intervalSeconds", 60))
    env = dict(imported.secret_values())
    project.apply(document, "--prune", **env)
    path = project.tmp / "upwatch.yaml"
    unchanged(project, path, env)
    exported = project.upwatch("export", "-o", str(project.tmp / "exported.yaml"))
    assert exported.returncode == 0, exported.stderr
    unchanged(project, project.tmp / "exported.yaml", env)
    listed = project.state()
    assert set(listed["monitors"]) == {m["key"] for m in document["monitors"]}
    assert set(listed["providers"]) == {p["key"] for p in document.get("providers", [])}
