"""How a test module or class changes the app's settings (the ``settings`` fixture of
tests/conftest.py), in one declaration::

    settings_overrides = overriding(allow_private_targets=True)

A value may also be a plans file written in the test's ``tmp_path``, ``plans(text)``, or what
another fixture gives, ``fixture_value("redis_url")`` (or an attribute of it,
``fixture_value("late_smtp", "port")``), and a group of settings that go together,
``overriding(QUICK_ALERTS, allow_private_targets=True)``. One test changes them with
``@pytest.mark.parametrize("settings_overrides", [{...}])``; a class's declaration replaces its
module's, as any fixture of the same name does."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest


@dataclass(frozen=True)
class PlansFile:
    text: str


@dataclass(frozen=True)
class FixtureValue:
    name: str
    attribute: str | None


def plans(text: str) -> PlansFile:
    """A plans file of this text, written as ``plans.toml`` in the test's ``tmp_path``."""
    return PlansFile(text)


def fixture_value(name: str, attribute: str | None = None) -> FixtureValue:
    """The value of the test's fixture ``name``, or its ``attribute``."""
    return FixtureValue(name, attribute)


def _resolved(value: Any, request: pytest.FixtureRequest) -> Any:
    if isinstance(value, PlansFile):
        tmp_path: Path = request.getfixturevalue("tmp_path")
        path = tmp_path / "plans.toml"
        path.write_text(value.text)
        return path
    if isinstance(value, FixtureValue):
        found = request.getfixturevalue(value.name)
        return found if value.attribute is None else getattr(found, value.attribute)
    return value


# Alerts sent, retried and taken over within about a second, for tests that wait for them on
# real time.
QUICK_ALERTS: dict[str, Any] = {
    "alert_retry_seconds": 0.1,
    "alert_retry_max_seconds": 0.3,
    "alert_poll_seconds": 0.1,
    "alert_claim_seconds": 1.0,
}


def overriding(*groups: Mapping[str, Any], **values: Any) -> Any:
    """A ``settings_overrides`` fixture giving these settings: those of ``groups`` (such as
    QUICK_ALERTS) in order, then ``values``."""
    merged = {name: value for group in groups for name, value in group.items()} | values

    def settings_overrides(request: pytest.FixtureRequest) -> dict[str, Any]:
        return {name: _resolved(value, request) for name, value in merged.items()}

    # A static method: declared in a test class, the fixture is not bound to its instance.
    return pytest.fixture(staticmethod(settings_overrides))
