"""Escalation policy rules: who may see and change one (any member of its project), and the
providers of its own project its steps may page."""

from __future__ import annotations

from collections.abc import Sequence

from upwatch.escalation.repository import EscalationRepository
from upwatch.escalation.rules import Step
from upwatch.escalation.schemas import EscalationPolicyCreate, EscalationPolicyPatch, StepIn
from upwatch.kit.errors import ValidationFailed
from upwatch.models import EscalationPolicy, User
from upwatch.projects.repository import ProjectRepository
from upwatch.runtime import DomainService, uses


def steps_of(policy: EscalationPolicy) -> list[Step]:
    return [
        Step(tuple(step.get("providerIds", [])), int(step.get("delayMinutes", 0)))
        for step in policy.steps or []
    ]


class EscalationService(DomainService):
    policies = uses(EscalationRepository)
    projects = uses(ProjectRepository)

    async def create(self, caller: User, body: EscalationPolicyCreate) -> EscalationPolicy:
        await self.projects.get_visible(caller, body.projectId)
        await self._check_steps(body.projectId, body.steps)
        return await self.policies.add(
            EscalationPolicy(
                project_id=body.projectId,
                name=body.name,
                steps=[step.model_dump() for step in body.steps],
            )
        )

    async def update(
        self, caller: User, policy_id: str, body: EscalationPolicyPatch
    ) -> EscalationPolicy:
        policy = await self.policies.get_visible(caller, policy_id)
        if body.name is not None:
            policy.name = body.name
        if body.steps is not None:
            await self._check_steps(policy.project_id, body.steps)
            policy.steps = [step.model_dump() for step in body.steps]
        policy.updated_at = self.runtime.clock.now()
        await self.session.flush()
        return policy

    async def delete(self, caller: User, policy_id: str) -> None:
        """Monitors that named it page every provider of their project again."""
        await self.policies.delete(await self.policies.get_visible(caller, policy_id))

    async def _check_steps(self, project_id: str, steps: Sequence[StepIn]) -> None:
        named = {p for step in steps for p in step.providerIds}
        found = await self.policies.providers_in_project(project_id, named)
        for index, step in enumerate(steps):
            missing = [p for p in step.providerIds if p not in found]
            if missing:
                raise ValidationFailed.on(
                    f"steps.{index}.providerIds",
                    f"not notification providers of the policy's project: {', '.join(missing)}",
                )
