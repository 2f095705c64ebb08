"""Escalation policies: who is paged, in which order, when an incident stays unacknowledged.

A policy's steps are rows of a form: each a set of providers ticked and a delay. The form
offers a few empty rows more than the policy has (up to the API's maximum), so a step is
added without a script; a row with no provider ticked is left out.
"""

from __future__ import annotations

from typing import Any, Final

from fastapi import APIRouter
from fastapi.responses import Response
from pydantic import ValidationError
from starlette.datastructures import FormData

from upwatch.console.endpoints.offers import offers
from upwatch.console.endpoints.page import Page, SignedInPage
from upwatch.console.endpoints.projects import projects_of
from upwatch.escalation.repository import EscalationRepository
from upwatch.escalation.schemas import EscalationPolicyCreate, EscalationPolicyPatch
from upwatch.escalation.service import EscalationService
from upwatch.kit.errors import NotFound, ProblemError
from upwatch.kit.languages import N_
from upwatch.notifications.repository import ProviderRepository

router = APIRouter(prefix="/app")
BASE: Final = "/app/escalation-policies"
# The API's bounds (``escalation/schemas.py``: Steps), and the empty rows offered beyond.
MAX_STEPS: Final = 10
SPARE_STEPS: Final = 2

POLICY = N_("escalation policy")


def _rows(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The steps as form rows, with spare empty rows to add steps."""
    count = min(MAX_STEPS, max(3, len(steps) + SPARE_STEPS))
    empty: dict[str, Any] = {"providerIds": [], "delayMinutes": ""}
    return [*steps, *[empty] * (count - len(steps))][:count]


def _posted_rows(posted: FormData) -> list[dict[str, Any]]:
    """The rows as posted, to show again with their errors."""
    return [
        {
            "providerIds": [str(v) for v in posted.getlist(f"steps.{i}.providerIds")],
            "delayMinutes": str(posted.get(f"steps.{i}.delayMinutes") or ""),
        }
        for i in range(MAX_STEPS)
        if f"steps.{i}.delayMinutes" in posted
    ]


def _steps_of(rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[int]]:
    """The steps the rows make (rows with a provider ticked) and each step's row."""
    kept = [(i, row) for i, row in enumerate(rows) if row["providerIds"]]
    steps = [{"providerIds": r["providerIds"], "delayMinutes": r["delayMinutes"]} for _, r in kept]
    return steps, [i for i, _ in kept]


def _on_rows(errors: dict[str, str], rows: list[int]) -> dict[str, str]:
    """Errors named by step (``steps.0.delayMinutes``) named by the form's row instead."""
    moved = {}
    for field, message in errors.items():
        parts = field.split(".")
        if len(parts) > 1 and parts[0] == "steps" and parts[1].isdigit():
            parts[1] = str(rows[int(parts[1])]) if int(parts[1]) < len(rows) else parts[1]
        moved[".".join(parts)] = message
    return moved


async def _providers(page: Page) -> list[Any]:
    providers, _total = await ProviderRepository(page.session).list_visible(page.user, 500, 0)
    return list(providers)


async def _visible(page: Page, policy_id: str) -> Any:
    try:
        return await EscalationRepository(page.session).get_visible(page.user, policy_id)
    except NotFound:
        page.not_found(POLICY)


@router.get("/escalation-policies", openapi_extra=offers("listEscalationPolicies"))
async def policies_page(page: SignedInPage) -> Response:
    policies, _total = await EscalationRepository(page.session).list_visible(page.user, 500, 0)
    projects = await projects_of(page)
    return page.html(
        "escalation.html",
        title=page.gettext("Escalation policies"),
        section="notifications",
        policies=policies,
        project_names={a.project.id: a.project.name for a in projects},
        provider_names={p.id: p.name for p in await _providers(page)},
    )


async def _form_page(page: Page, policy: Any | None, status: int = 200, **context: Any) -> Response:
    providers = await _providers(page)
    if policy is not None:
        providers = [p for p in providers if p.project_id == policy.project_id]
    projects = await projects_of(page)
    context.setdefault("rows", _rows(list(policy.steps or [])) if policy else _rows([]))
    context.setdefault("form", {"name": policy.name} if policy else {})
    return page.html(
        "escalation_form.html",
        status,
        title=(
            page.gettext("Policy %(name)s") % {"name": policy.name}
            if policy
            else page.gettext("New escalation policy")
        ),
        section="notifications",
        policy=policy,
        projects=projects,
        project_names={a.project.id: a.project.name for a in projects},
        providers=providers,
        **context,
    )


@router.get("/escalation-policies/new")
async def new_policy_page(page: SignedInPage) -> Response:
    return await _form_page(page, None)


@router.post("/escalation-policies/new", openapi_extra=offers("createEscalationPolicy"))
async def create_policy(page: SignedInPage) -> Response:
    form = await page.form()
    rows = _posted_rows(await page.request.form())
    steps, used = _steps_of(rows)
    try:
        body = EscalationPolicyCreate.model_validate(
            {"projectId": form.get("projectId", ""), "name": form.get("name", ""), "steps": steps}
        )
        policy = await EscalationService(page.session, page.runtime).create(page.user, body)
    except (ProblemError, ValidationError) as exc:
        status, errors = page.refused(exc, N_("project"))
        errors = _on_rows(errors, used)
        return await _form_page(page, None, status, form=form, rows=_rows(rows), errors=errors)
    return page.redirect(
        BASE, page.gettext("Escalation policy %(name)s created.") % {"name": policy.name}
    )


@router.get("/escalation-policies/{policy_id}", openapi_extra=offers("getEscalationPolicy"))
async def policy_page(policy_id: str, page: SignedInPage) -> Response:
    return await _form_page(page, await _visible(page, policy_id))


@router.post("/escalation-policies/{policy_id}", openapi_extra=offers("updateEscalationPolicy"))
async def update_policy(policy_id: str, page: SignedInPage) -> Response:
    form = await page.form()
    policy = await _visible(page, policy_id)
    rows = _posted_rows(await page.request.form())
    steps, used = _steps_of(rows)
    try:
        body = EscalationPolicyPatch.model_validate({"name": form.get("name", ""), "steps": steps})
        await EscalationService(page.session, page.runtime).update(page.user, policy_id, body)
    except (ProblemError, ValidationError) as exc:
        status, errors = page.refused(exc, POLICY)
        errors = _on_rows(errors, used)
        policy = await _visible(page, policy_id)
        return await _form_page(page, policy, status, form=form, rows=_rows(rows), errors=errors)
    return page.redirect(f"{BASE}/{policy_id}", page.gettext("Escalation policy saved."))


@router.get("/escalation-policies/{policy_id}/delete")
async def confirm_delete_policy(policy_id: str, page: SignedInPage) -> Response:
    policy = await _visible(page, policy_id)
    return page.html(
        "confirm_action.html",
        title=page.gettext("Delete %(name)s?") % {"name": policy.name},
        section="notifications",
        action=f"{BASE}/{policy_id}/delete",
        detail=page.gettext(
            "Monitors that follow this policy page every provider of their project again."
        ),
        confirm=page.gettext("Delete the policy"),
        cancel=f"{BASE}/{policy_id}",
    )


@router.post(
    "/escalation-policies/{policy_id}/delete", openapi_extra=offers("deleteEscalationPolicy")
)
async def delete_policy(policy_id: str, page: SignedInPage) -> Response:
    async with page.button(POLICY, BASE, N_("Not deleted")):
        await EscalationService(page.session, page.runtime).delete(page.user, policy_id)
    return page.redirect(BASE, page.gettext("Escalation policy deleted."))
