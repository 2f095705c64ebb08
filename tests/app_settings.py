"""How a test module or class changes the app's settings (the ``settings`` fixture of
tests/conftest.py), in one declaration::

    settings_overrides = overriding(allow_private_targets=True)

A value may also be a plans file written in the test's ``tmp_path``, ``plans(text)``, or what
another fixture gives, ``fixture_value("redis_url")`` (or an attribute of it,
``fixture_value("late_smtp", "port")``). One test changes them with
``@pytest.mark.parametrize("settings_overrides", [{...}])``; a class's declaration replaces its
module's, as any fixture of the same name does."""

from __future__ import annotations

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


def overriding(**values: Any) -> Any:
    """A ``settings_overrides`` fixture giving these settings."""

    def settings_overrides(request: pytest.FixtureRequest) -> dict[str, Any]:
        return {name: _resolved(value, request) for name, value in values.items()}

    # A static method: declared in a test class, the fixture is not bound to its instance.
    return pytest.fixture(staticmethod(settings_overrides))
