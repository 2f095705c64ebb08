"""The systemd units in deploy/ as systemd itself reads them (`systemd-analyze verify`): no
unknown key, no value it cannot parse, a command that exists. The hardened one-process unit
keeps the protections docs/install.md promises."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.live_server import COMMAND_SECONDS

pytestmark = pytest.mark.db_independent

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
INSTALLED = "/opt/upwatch/venv/bin/upwatch"  # where docs/install.md puts it
UNITS = sorted(p.name for p in DEPLOY.glob("*.service"))


@pytest.mark.parametrize("unit", UNITS)
def test_systemd_reads_the_unit_without_a_warning(unit: str, tmp_path: Path) -> None:
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("needs systemd-analyze (Debian's systemd package)")
    text = (DEPLOY / unit).read_text()
    assert INSTALLED in text, f"{unit} runs another installation than docs/install.md's"
    # The command must exist for verify: this checkout's own `upwatch` stands in for it.
    here = tmp_path / unit.replace("@.", "@eu-west.")  # a template is verified as an instance
    here.write_text(text.replace(INSTALLED, str(Path(sys.executable).parent / "upwatch")))
    done = subprocess.run(  # noqa: S603
        [analyze, "verify", str(here)],
        capture_output=True,
        text=True,
        timeout=COMMAND_SECONDS,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert [line for line in done.stderr.splitlines() if here.name in line] == []


def test_the_one_process_unit_runs_unprivileged_writing_only_its_state_directory() -> None:
    settings = {}
    for line in (DEPLOY / "upwatch.service").read_text().splitlines():
        if "=" in line and not line.startswith("#"):
            key, value = line.split("=", 1)
            settings.setdefault(key, value)
    assert settings["DynamicUser"] == "yes"
    assert settings["NoNewPrivileges"] == "yes"
    assert settings["ProtectSystem"] == "strict"
    assert settings["StateDirectory"] == "upwatch"
    assert settings["CapabilityBoundingSet"] == ""
    # The data directory is the state directory, the one place ProtectSystem=strict leaves
    # writable.
    assert "UPWATCH_DATA_DIR=/var/lib/upwatch" in (DEPLOY / "upwatch.service").read_text()
