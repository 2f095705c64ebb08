"""Every table, one file each; importing this package registers them all on ``Base``."""

from upwatch.models.contact import ContactSubmission
from upwatch.models.mail import MailMessage
from upwatch.models.monitor import CheckResult, DailyAggregate, Monitor, Region
from upwatch.models.project import Project, ProjectInvitation, ProjectMember
from upwatch.models.subscription import Subscription
from upwatch.models.token import PasswordResetToken, RefreshToken
from upwatch.models.usage import ApiUsage
from upwatch.models.user import User

__all__ = [
    "ApiUsage",
    "CheckResult",
    "ContactSubmission",
    "DailyAggregate",
    "MailMessage",
    "Monitor",
    "PasswordResetToken",
    "Project",
    "ProjectInvitation",
    "ProjectMember",
    "RefreshToken",
    "Region",
    "Subscription",
    "User",
]
