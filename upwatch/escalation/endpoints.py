"""Escalation policies: ordered steps of notification providers, each paged when the incident
is still unacknowledged after its delay."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends

from upwatch.callers.access import ProjectPageParams
from upwatch.callers.dependencies import CurrentUser
from upwatch.dependencies import RuntimeDep, Session
from upwatch.escalation.repository import EscalationRepository
from upwatch.escalation.schemas import (
    EscalationPolicyCreate,
    EscalationPolicyOut,
    EscalationPolicyPatch,
)
from upwatch.escalation.service import EscalationService
from upwatch.kit.routes import Routes
from upwatch.kit.schemas import DeletedOut

router = Routes("/escalation-policies", "escalation policies")


def _policies(session: Session, runtime: RuntimeDep) -> EscalationService:
    return EscalationService(session, runtime)


# For the handlers that need the service alone.
Policies = Annotated[EscalationService, Depends(_policies)]


@router.creates("createEscalationPolicy")
async def create_policy(
    body: EscalationPolicyCreate, user: CurrentUser, policies: Policies
) -> EscalationPolicyOut:
    """A policy for a project the caller belongs to. A monitor that names it
    (`escalationPolicyId`) pages, when it goes down, the providers of the first step after its
    delay, then each next step when no one acknowledged the incident in the next step's delay;
    each step once. Personal channels and providers the policy does not name are not paged.
    Acknowledging stops further steps and reminders; the recovery goes to every provider that
    was paged. Providers of another project: 422."""
    policy = await policies.create(user, body)
    return EscalationPolicyOut.model_validate(policy)


@router.get("", operation_id="listEscalationPolicies")
async def list_policies(
    user: CurrentUser, session: Session, page: ProjectPageParams
) -> list[EscalationPolicyOut]:
    """Policies in the caller's projects, oldest first."""
    policies = await page.of(EscalationRepository(session), user)
    return [EscalationPolicyOut.model_validate(p) for p in policies]


@router.get("/{id}", operation_id="getEscalationPolicy")
async def get_policy(id: str, user: CurrentUser, session: Session) -> EscalationPolicyOut:
    policy = await EscalationRepository(session).get_visible(user, id)
    return EscalationPolicyOut.model_validate(policy)


@router.updates("updateEscalationPolicy")
async def update_policy(
    id: str,
    body: EscalationPolicyPatch,
    user: CurrentUser,
    policies: Policies,
) -> EscalationPolicyOut:
    """Change a policy; fields left out stay as they are."""
    policy = await policies.update(user, id, body)
    return EscalationPolicyOut.model_validate(policy)


@router.deletes("deleteEscalationPolicy")
async def delete_policy(id: str, user: CurrentUser, policies: Policies) -> DeletedOut:
    """Monitors that named the policy page every provider of their project again."""
    await policies.delete(user, id)
    return DeletedOut(id=id)
