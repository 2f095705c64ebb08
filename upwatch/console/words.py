"""The console's words for values stored as codes (plans, subscription states), marked for the
catalogs and translated where shown (docs/languages.md)."""

from __future__ import annotations

from typing import Final

from upwatch.kit.languages import N_

# The built-in plans' names; a plan the operator defined shows its own name.
PLAN_NAMES: Final = {"free": N_("free"), "pro": N_("pro")}
SUBSCRIPTION_STATES: Final = {
    "active": N_("active"),
    "past_due": N_("past due"),
    "canceled": N_("canceled"),
    "trialing": N_("trialing"),
}
