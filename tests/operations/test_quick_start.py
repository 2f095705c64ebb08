"""A newcomer's first hour, scripted: the README's quick-start commands, taken from the README
as they stand, against a freshly started `upwatch serve`, ending in an alert on a webhook."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import httpx

from tests.conftest import eventually
from tests.factories import Target
from tests.live_server import LiveServer, clean_env
from tests.receivers import Receiver

README = Path(__file__).resolve().parents[2] / "README.md"


def quick_start_commands() -> str:
    """The shell block after the README's quick-start marker."""
    match = re.search(r"<!-- quick-start:[^>]*-->\s*```sh\n(.*?)```", README.read_text(), re.S)
    assert match, "README.md has lost its quick-start block"
    return match.group(1)


async def test_the_readme_quick_start_takes_a_new_user_from_sign_up_to_a_webhook_alert(
    tmp_path: Path,
) -> None:
    target, hook = Target(), Receiver()
    await target.start()
    await hook.start()
    # Only what a newcomer on their own machine needs: local addresses allowed.
    server = LiveServer(tmp_path, clean_env(UPWATCH_ALLOW_PRIVATE_TARGETS="true"))
    await asyncio.to_thread(server.start)
    try:
        script = quick_start_commands() + 'printf "\\n%s %s\\n" "$TOKEN" "$MONITOR"\n'
        shell = await asyncio.create_subprocess_exec(
            "/bin/bash",
            "-euo",
            "pipefail",
            "-c",
            script,
            env={**clean_env(), "UPWATCH": server.url, "SITE": target.url, "HOOK": hook.url()},
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await shell.communicate()
        assert shell.returncode == 0, (out.decode(), err.decode())
        token, monitor = out.decode().split()[-2:]
        assert '"status":"up"' in out.decode()  # the check-now result the README promises

        target.status = 503
        headers = {"Authorization": f"Bearer {token}"}
        async with httpx.AsyncClient(base_url=server.url, headers=headers) as api:
            checked = await api.post(f"/monitors/{monitor}/check")
            assert checked.json()["status"] == "down", checked.text
            await eventually(lambda: len(hook.received) >= 1, within=30)
            assert hook.received[0].json()["event"] == "incident.opened"

            target.status = 200
            await api.post(f"/monitors/{monitor}/check")
            await eventually(lambda: len(hook.received) >= 2, within=30)
            assert hook.received[1].json()["event"] == "incident.resolved"
    finally:
        await asyncio.to_thread(server.stop)
        await hook.stop()
        await target.stop()
