"""Plans as data: the default free and pro plans, and an operator's TOML override.

The kit knows no notification channel: whoever loads the catalog passes each built-in plan's
channels (the channel registry derives them from each channel's plan tag).
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from importlib import resources
from pathlib import Path
from typing import Any

# What "unlimited" in a plans file becomes: still a number, as the seed's `limits` are numbers.
UNLIMITED = 2_147_483_647

# Each built-in plan's notification channels, by plan name, in the order the plan lists them.
PlanChannels = Mapping[str, tuple[str, ...]]

COUNTED = (
    "monitorCount",
    "statusPageCount",
    "checkFrequencyMinutes",
    "retentionDays",
    "projectCount",
    "teamMembersPerProject",
    "teamMembers",
    "apiCallsPerDay",
    "storageLimit",
)


@dataclass(frozen=True)
class Plan:
    name: str
    monitorCount: int  # noqa: N815  (the seed's field names)
    statusPageCount: int  # noqa: N815
    notificationChannels: tuple[str, ...]  # noqa: N815
    checkFrequencyMinutes: int  # noqa: N815
    retentionDays: int  # noqa: N815
    projectCount: int  # noqa: N815
    teamMembersPerProject: int  # noqa: N815
    teamMembers: int  # noqa: N815
    apiCallsPerDay: int  # noqa: N815
    storageLimit: int  # noqa: N815  (megabytes)

    def limit(self, name: str) -> int:
        value = getattr(self, name)
        assert isinstance(value, int)
        return value

    def limits(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "name"}


FREE = Plan(
    name="free",
    monitorCount=10,
    statusPageCount=1,
    notificationChannels=(),  # from PlanChannels, when the catalog is built
    checkFrequencyMinutes=5,
    retentionDays=30,
    projectCount=1,
    teamMembersPerProject=3,
    teamMembers=3,
    apiCallsPerDay=10_000,
    storageLimit=100,
)

PRO = Plan(
    name="pro",
    monitorCount=250,
    statusPageCount=20,
    notificationChannels=(),  # from PlanChannels, when the catalog is built
    checkFrequencyMinutes=1,
    retentionDays=365,
    projectCount=20,
    teamMembersPerProject=25,
    teamMembers=100,
    apiCallsPerDay=1_000_000,
    storageLimit=10_240,
)


class PlansFileError(ValueError):
    pass


@dataclass(frozen=True)
class PlanCatalog:
    plans: dict[str, Plan]
    default_plan: str = "free"
    upgrade_plan: str = "pro"
    # False in the self-hosted edition: every account already has everything.
    upgrades: bool = True
    # Every channel there is, in the order a plan with all of them lists them.
    channels: tuple[str, ...] = ()

    def get(self, name: str) -> Plan:
        # An account on a plan the operator has since removed falls back to the default.
        return self.plans.get(name) or self.plans[self.default_plan]

    @classmethod
    def defaults(cls, channels: PlanChannels) -> PlanCatalog:
        plans = {
            plan.name: replace(plan, notificationChannels=channels[plan.name])
            for plan in (FREE, PRO)
        }
        every = tuple(dict.fromkeys(name for listed in channels.values() for name in listed))
        return cls(plans=plans, channels=every)

    @classmethod
    def load(
        cls, path: Path | None, edition: str = "hosted", *, channels: PlanChannels
    ) -> PlanCatalog:
        """The defaults, changed by the edition's built-in plans file and then by ``path``.

        ```toml
        default = "free"            # plan of new accounts
        upgrades = true             # false: POST /subscriptions/upgrade answers 409
        [plans.free]
        monitorCount = 50           # any limit; others keep their default
        [plans.selfhosted]          # a new plan starts from `free` ...
        monitorCount = "unlimited"  # ... and "unlimited" lifts a limit
        notificationChannels = "all"  # or a list of channel names
        ```
        """
        catalog = cls.defaults(channels)
        if edition == "selfhosted":
            built_in = resources.files("upwatch.kit").joinpath("plans_selfhosted.toml")
            catalog = catalog._apply(built_in.read_text(), "the self-hosted plans")
        if path is None:
            return catalog
        try:
            text = path.read_text()
        except OSError as exc:
            raise PlansFileError(f"cannot read plans file {path}: {exc}") from exc
        return catalog._apply(text, f"plans file {path}")

    def _apply(self, text: str, source: str) -> PlanCatalog:
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise PlansFileError(f"cannot read {source}: {exc}") from exc
        plans = dict(self.plans)
        for name, overrides in (data.get("plans") or {}).items():
            if not isinstance(overrides, dict):
                raise PlansFileError(f"[plans.{name}] must be a table")
            base = plans.get(name) or replace(self.plans["free"], name=name)
            plans[name] = _override(base, overrides, self.channels)
        default = str(data.get("default", self.default_plan))
        if default not in plans:
            raise PlansFileError(f"default plan {default!r} is not defined")
        upgrades = data.get("upgrades", self.upgrades)
        if not isinstance(upgrades, bool):
            raise PlansFileError("upgrades: true or false")
        return replace(self, plans=plans, default_plan=default, upgrades=upgrades)


def _override(plan: Plan, overrides: dict[str, Any], channels: tuple[str, ...]) -> Plan:
    changes: dict[str, Any] = {}
    for key, value in overrides.items():
        if key == "notificationChannels":
            if value == "all":
                value = list(channels)
            unknown = set(value) - set(channels) if isinstance(value, list) else {"?"}
            if unknown:
                raise PlansFileError(f"{plan.name}.notificationChannels: unknown {unknown}")
            changes[key] = tuple(value)
        elif key in COUNTED:
            if value == "unlimited":
                value = UNLIMITED
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise PlansFileError(f"{plan.name}.{key}: a whole number or 'unlimited'")
            changes[key] = value
        else:
            raise PlansFileError(f"{plan.name}: unknown limit {key!r}")
    return replace(plan, **changes)
