"""``upwatch apply`` of a file with ping and UDP monitors creates them, with their own
fields, and a second apply changes nothing."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.client.test_apply_live import Project


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Project]:
    made = Project(tmp_path_factory.mktemp("apply-ping-udp"))
    yield made
    made.api.close()
    made.server.stop()


def test_apply_creates_ping_and_udp_monitors_from_a_file(project: Project) -> None:
    ping = {"host": "127.0.0.1", "packetCount": 5, "maxLossPercent": 20.0}
    udp = {"host": "127.0.0.1", "port": 53, "payload": "hello", "expectReply": "^HELLO"}
    document = {
        "version": 1,
        "monitors": [
            {"key": "gw", "name": "Gateway", "type": "ping", "intervalSeconds": 300, **ping},
            {"key": "dns", "name": "Resolver", "type": "udp", "intervalSeconds": 300, **udp},
        ],
    }

    project.apply(document)

    state = project.state()["monitors"]
    assert state["gw"]["type"] == "ping"
    assert {name: state["gw"][name] for name in ping} == ping
    assert state["dns"]["type"] == "udp"
    assert {name: state["dns"][name] for name in udp} == udp
    # Their own fields read back as the file says them: a second apply has nothing to do.
    assert "Nothing to do." in project.apply(document)
