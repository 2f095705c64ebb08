"""Every table, one file each; importing this package registers them all on ``Base``."""

from upwatch.models.apikey import ApiKey
from upwatch.models.contact import ContactSubmission
from upwatch.models.escalation import EscalationPolicy
from upwatch.models.fanout import SubscriberDelivery, SubscriberNotice
from upwatch.models.incident import Incident, IncidentUpdate
from upwatch.models.mail import MailMessage
from upwatch.models.maintenance import MaintenanceWindow, MaintenanceWindowMonitor
from upwatch.models.monitor import (
    RECENT_TIMES,
    CheckResult,
    DailyAggregate,
    HistogramBucket,
    HourlyCount,
    Monitor,
    Region,
    UnflushedBatch,
)
from upwatch.models.notification import Alert, AlertAttempt, NotificationProvider
from upwatch.models.project import Project, ProjectInvitation, ProjectMember
from upwatch.models.retention import IncidentDay, RetentionNotice, RetentionRun
from upwatch.models.security import AuditEvent, PasskeyCredential, RecoveryCode
from upwatch.models.statuspage import (
    StatusMessage,
    StatusPage,
    StatusPageComponent,
    StatusPageGroup,
    StatusPageSubscriber,
)
from upwatch.models.subscription import Subscription
from upwatch.models.token import BrowserSession, PasswordResetToken, RefreshToken
from upwatch.models.usage import ApiUsage
from upwatch.models.user import User

__all__ = [
    "RECENT_TIMES",
    "Alert",
    "AlertAttempt",
    "ApiKey",
    "ApiUsage",
    "AuditEvent",
    "BrowserSession",
    "CheckResult",
    "ContactSubmission",
    "DailyAggregate",
    "EscalationPolicy",
    "HistogramBucket",
    "HourlyCount",
    "Incident",
    "IncidentDay",
    "IncidentUpdate",
    "MailMessage",
    "MaintenanceWindow",
    "MaintenanceWindowMonitor",
    "Monitor",
    "NotificationProvider",
    "PasskeyCredential",
    "PasswordResetToken",
    "Project",
    "ProjectInvitation",
    "ProjectMember",
    "RecoveryCode",
    "RefreshToken",
    "Region",
    "RetentionNotice",
    "RetentionRun",
    "StatusMessage",
    "StatusPage",
    "StatusPageComponent",
    "StatusPageGroup",
    "StatusPageSubscriber",
    "SubscriberDelivery",
    "SubscriberNotice",
    "Subscription",
    "UnflushedBatch",
    "User",
]
