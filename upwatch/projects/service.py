"""Project rules: who may see, change, delete a project and manage its members."""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import urlencode

from sqlalchemy.ext.asyncio import AsyncSession

from upwatch.audit import kinds
from upwatch.audit.service import record
from upwatch.billing.repository import UsageRepository
from upwatch.billing.service import PlanLimits
from upwatch.callers.access import lacks_second_factor
from upwatch.callers.repository import UserDirectory
from upwatch.kit import languages
from upwatch.kit.errors import Conflict, Forbidden, NotFound
from upwatch.kit.security import new_opaque_token, token_digest
from upwatch.models import Project, ProjectInvitation, ProjectMember, User
from upwatch.projects.repository import ProjectAccess, ProjectRepository
from upwatch.projects.schemas import ProjectCreate, ProjectUpdate
from upwatch.runtime import DomainService, Runtime, uses


class ProjectService(DomainService):
    projects = uses(ProjectRepository)
    users = uses(UserDirectory)
    usage = uses(UsageRepository)
    limits = uses(PlanLimits)

    async def visible(self, caller: User, project_id: str) -> ProjectAccess:
        """The project, or 404 when the caller may not see it (never reveal it exists)."""
        return await self.projects.get_visible(caller, project_id)

    async def joined(self, caller: User, project_id: str) -> ProjectAccess:
        """The project ``caller`` has just joined, as a member: shown even when it requires
        a second factor the caller lacks yet (it says so, ``require_two_factor``), so the
        rule never undoes the joining by refusing its answer."""
        project = await self.projects.get(project_id)
        member = await self.projects.member(project_id, caller.id)
        if project is None or member is None:
            raise NotFound("no such project")
        return ProjectAccess(project=project, role=member.role, caller=caller)

    async def create(self, caller: User, body: ProjectCreate) -> ProjectAccess:
        await self.limits.lock(caller.id)
        await self.limits.require(caller.id, "projectCount", await self.usage.projects(caller.id))
        project = Project(name=body.name, description=body.description, owner_id=caller.id)
        await self.projects.add(project, self.runtime.clock.now())
        return ProjectAccess(project=project, role="owner", caller=caller)

    async def list(self, caller: User, limit: int, offset: int) -> tuple[list[ProjectAccess], int]:
        rows = await self.projects.of_member(caller, limit, offset)
        items = [ProjectAccess(project=p, role=role, caller=caller) for p, role in rows]
        return items, await self.projects.count_of_member(caller)

    async def update(self, caller: User, project_id: str, body: ProjectUpdate) -> ProjectAccess:
        access = await self.visible(caller, project_id)
        if not access.can_manage_members:
            raise Forbidden("only the owner, a project manager or an admin may edit the project")
        changes = body.model_dump(exclude_unset=True, exclude_none=True)
        required = changes.pop("requireTwoFactor", None)
        if "alertLanguage" in changes:
            changes["alert_language"] = changes.pop("alertLanguage")
        for field, value in changes.items():
            setattr(access.project, field, value)
        if required is not None and required != access.project.require_two_factor:
            await self._require_two_factor(access, required)
        await self.session.flush()
        await self.session.refresh(access.project)
        return access

    async def _require_two_factor(self, access: ProjectAccess, required: bool) -> None:
        """The owner's setting (a value sent unchanged is no change, so a client may send back
        what it read). The owner must have a second factor before turning it on, or the
        project would shut them out at once."""
        caller, project = access.caller, access.project
        if access.role != "owner" or caller.grant is not None:
            raise Forbidden("only the project's owner may change whether it requires two-factor")
        if required and await lacks_second_factor(self.session, caller):
            raise Conflict(
                "turn on two-factor authentication for your own account first (security "
                "settings, /app/settings/security): otherwise the project would shut you out"
            )
        project.require_two_factor = required
        await record(
            self.session,
            kinds.PROJECT_TWO_FACTOR_CHANGED,
            self.runtime.clock.now(),
            actor=caller,
            project_id=project.id,
            target_type="project",
            target_id=project.id,
            target_label=project.name,
            details={"required": required},
        )

    async def delete(self, caller: User, project_id: str) -> None:
        access = await self.visible(caller, project_id)
        if not access.can_delete:
            raise Forbidden("only the owner or an admin may delete the project")
        project = access.project
        # Kept with the project's id (no foreign key): its owner's trail outlives it.
        await record(
            self.session,
            kinds.PROJECT_DELETED,
            self.runtime.clock.now(),
            actor=caller,
            project_id=project.id,
            target_type="project",
            target_id=project.id,
            target_label=project.name,
        )
        await self.projects.delete(project)

    # ---- membership ----

    async def _manageable(self, caller: User, project_id: str) -> ProjectAccess:
        access = await self.visible(caller, project_id)
        if not access.can_manage_members:
            raise Forbidden("only the owner, a project manager or an admin manages members")
        return access

    async def invite(
        self, caller: User, project_id: str, email: str
    ) -> tuple[ProjectMember | ProjectInvitation, User | None]:
        access = await self._manageable(caller, project_id)
        project = access.project
        invitee = await self.users.get_by_email(email)
        if invitee is not None and await self.projects.member(project.id, invitee.id):
            raise Conflict("this person is already a member of the project")
        if await self.projects.invitation(project.id, email):
            raise Conflict("this address is already invited to the project")

        owner_id = project.owner_id
        await self.limits.lock(owner_id)
        await self.limits.require(
            owner_id, "teamMembersPerProject", await self.usage.project_seats(project.id)
        )
        team = await self.usage.team_emails(owner_id)
        if email not in team:
            await self.limits.require(owner_id, "teamMembers", len(team))

        now = self.runtime.clock.now()
        link = f"{self.runtime.settings.public_url}/app/projects/{project.id}"
        inviter = f"{caller.first_name} {caller.last_name}".strip() or caller.email
        # Only a verified address is proof of who holds it; anyone may register an address
        # unverified, so such an account is invited by token like an address with no account.
        if invitee is not None and invitee.is_email_verified:
            member = ProjectMember(
                project_id=project.id, user_id=invitee.id, role="member", created_at=now
            )
            await self.projects.add_member(member)
            await _member_event(
                self.session, self.runtime, kinds.MEMBER_ADDED, caller, project.id, invitee
            )
            _ = languages.gettext_in(languages.of_settings(invitee.settings))
            names = {"inviter": inviter, "project": project.name}
            await self.runtime.mailer.enqueue(
                self.session,
                to=invitee.email,
                subject=_("You were added to %(project)s on Upwatch") % names,
                body=_("%(inviter)s added you to the project %(project)s.") % names
                + "\n\n"
                + _("Open it: %(link)s") % {"link": link}
                + "\n",
                category="project_member_added",
            )
            return member, invitee
        token = new_opaque_token()
        invitation = ProjectInvitation(
            project_id=project.id,
            email=email,
            token_hash=token_digest(token),
            invited_by=caller.id,
            created_at=now,
        )
        await self.projects.add_invitation(invitation)
        await record(
            self.session,
            kinds.MEMBER_INVITED,
            now,
            actor=caller,
            project_id=project.id,
            target_type="invitation",
            target_id=invitation.id,
            target_label=email,
        )
        accept = (
            f"{self.runtime.settings.public_url}/invitations/accept?{urlencode({'token': token})}"
        )
        # In the invitee's language where they have an account, else in the inviter's.
        reader = invitee if invitee is not None else caller
        _ = languages.gettext_in(languages.of_settings(reader.settings))
        names = {"inviter": inviter, "project": project.name}
        await self.runtime.mailer.enqueue(
            self.session,
            to=email,
            subject=_("%(inviter)s invited you to %(project)s on Upwatch") % names,
            body=(
                _("%(inviter)s invited you to the project %(project)s on Upwatch.") % names
                + "\n\n"
                + _("To join, open this link and sign up or log in with this address:")
                + f"\n{accept}\n\n"
                + _("The link works once. Invitation token: %(token)s") % {"token": token}
                + "\n"
            ),
            category="project_invitation",
        )
        return invitation, None

    async def members(
        self, caller: User, project_id: str
    ) -> tuple[Sequence[tuple[ProjectMember, User]], Sequence[ProjectInvitation]]:
        access = await self.visible(caller, project_id)
        return (
            await self.projects.members(access.project.id),
            await self.projects.invitations(access.project.id),
        )

    async def remove_member(self, caller: User, project_id: str, user_id: str) -> None:
        """Managers remove members; any member may leave. The owner cannot be removed."""
        access = await self.visible(caller, project_id)
        if user_id != caller.id and not access.can_manage_members:
            raise Forbidden("only the owner, a project manager or an admin manages members")
        member = await self.projects.member(access.project.id, user_id)
        if member is None:
            raise NotFound("no such member")
        if member.role == "owner":
            raise Conflict("the owner cannot be removed; delete the project instead")
        removed = await self.users.get(user_id)
        await self.projects.remove(member)
        await _member_event(
            self.session,
            self.runtime,
            kinds.MEMBER_REMOVED,
            caller,
            access.project.id,
            removed,
            user_id,
            left=user_id == caller.id,
        )

    async def cancel_invitation(self, caller: User, project_id: str, invitation_id: str) -> None:
        access = await self._manageable(caller, project_id)
        invitation = await self.projects.invitation_by_id(access.project.id, invitation_id)
        if invitation is None:
            raise NotFound("no such invitation")
        await self.projects.remove(invitation)


async def accept_invitation(session: AsyncSession, runtime: Runtime, user: User, token: str) -> str:
    """Join the project of the invitation ``token`` belongs to; returns the project id.

    The token was mailed to the invited address only, so presenting it proves the address:
    the account must have that address, and its address counts as verified from then on.
    """
    projects = ProjectRepository(session)
    invitation = await projects.invitation_by_token(token_digest(token))
    if invitation is None or invitation.email != user.email:
        raise NotFound("no such invitation for this account")
    if await projects.member(invitation.project_id, user.id) is None:
        await projects.add_member(
            ProjectMember(
                project_id=invitation.project_id,
                user_id=user.id,
                role="member",
                created_at=runtime.clock.now(),
            )
        )
        await _member_event(
            session,
            runtime,
            kinds.MEMBER_ADDED,
            user,
            invitation.project_id,
            user,
            via="invitation",
        )
    await projects.remove(invitation)
    user.is_email_verified = True
    await session.flush()
    return invitation.project_id


async def _member_event(
    session: AsyncSession,
    runtime: Runtime,
    kind: str,
    caller: User,
    project_id: str,
    member: User | None,
    member_id: str | None = None,
    *,
    via: str = "",
    left: bool = False,
) -> None:
    """A membership change, in the project's log and in the member's own security events."""
    target_id = member.id if member is not None else member_id
    await record(
        session,
        kind,
        runtime.clock.now(),
        actor=caller,
        account_id=target_id,
        project_id=project_id,
        target_type="member",
        target_id=target_id,
        target_label=member.email if member is not None else "",
        via=via,
        details={"role": "member", **({"left": True} if left else {})},
    )
