# ruff: noqa: S105 - event kinds name passwords and secrets; none is one
"""The kinds of audit events. A kind is ``<thing>.<what happened>``; lists filter by it, so
a kind, once recorded, is never renamed."""

from __future__ import annotations

from typing import Final

from upwatch.kit.languages import N_

SIGN_IN_SUCCEEDED: Final = "sign_in.succeeded"
SIGN_IN_FAILED: Final = "sign_in.failed"
SESSION_ENDED: Final = "session.ended"
SESSIONS_ENDED_ELSEWHERE: Final = "session.ended_elsewhere"
TOTP_ENABLED: Final = "totp.enabled"
TOTP_DISABLED: Final = "totp.disabled"
RECOVERY_CODE_USED: Final = "recovery_code.used"
PASSKEY_ADDED: Final = "passkey.added"
PASSKEY_REMOVED: Final = "passkey.removed"
PASSWORD_CHANGED: Final = "password.changed"
PASSWORD_RESET: Final = "password.reset"
SSO_LINKED: Final = "sso.linked"
API_KEY_CREATED: Final = "api_key.created"
API_KEY_REVOKED: Final = "api_key.revoked"
MEMBER_INVITED: Final = "member.invited"
MEMBER_ADDED: Final = "member.added"
MEMBER_REMOVED: Final = "member.removed"
MEMBER_ROLE_CHANGED: Final = "member.role_changed"
PROJECT_DELETED: Final = "project.deleted"
PROJECT_TWO_FACTOR_CHANGED: Final = "project.two_factor_changed"
PROVIDER_SECRET_CHANGED: Final = "provider.secret_changed"
MONITOR_SECRET_CHANGED: Final = "monitor.secret_changed"
CONFIG_APPLIED: Final = "config.applied"
ADMIN_ACTION: Final = "admin.action"

KINDS: Final = (
    SIGN_IN_SUCCEEDED,
    SIGN_IN_FAILED,
    SESSION_ENDED,
    SESSIONS_ENDED_ELSEWHERE,
    TOTP_ENABLED,
    TOTP_DISABLED,
    RECOVERY_CODE_USED,
    PASSKEY_ADDED,
    PASSKEY_REMOVED,
    PASSWORD_CHANGED,
    PASSWORD_RESET,
    SSO_LINKED,
    API_KEY_CREATED,
    API_KEY_REVOKED,
    MEMBER_INVITED,
    MEMBER_ADDED,
    MEMBER_REMOVED,
    MEMBER_ROLE_CHANGED,
    PROJECT_DELETED,
    PROJECT_TWO_FACTOR_CHANGED,
    PROVIDER_SECRET_CHANGED,
    MONITOR_SECRET_CHANGED,
    CONFIG_APPLIED,
    ADMIN_ACTION,
)

# What the console shows for each kind, translated where shown.
WORDS: Final = {
    SIGN_IN_SUCCEEDED: N_("Signed in"),
    SIGN_IN_FAILED: N_("Sign-in failed"),
    SESSION_ENDED: N_("Session ended"),
    SESSIONS_ENDED_ELSEWHERE: N_("Signed out everywhere else"),
    TOTP_ENABLED: N_("Authenticator app turned on"),
    TOTP_DISABLED: N_("Authenticator app turned off"),
    RECOVERY_CODE_USED: N_("Recovery code used"),
    PASSKEY_ADDED: N_("Passkey added"),
    PASSKEY_REMOVED: N_("Passkey removed"),
    PASSWORD_CHANGED: N_("Password changed"),
    PASSWORD_RESET: N_("Password reset"),
    SSO_LINKED: N_("Single sign-on linked"),
    API_KEY_CREATED: N_("API key created"),
    API_KEY_REVOKED: N_("API key revoked"),
    MEMBER_INVITED: N_("Member invited"),
    MEMBER_ADDED: N_("Member added"),
    MEMBER_REMOVED: N_("Member removed"),
    MEMBER_ROLE_CHANGED: N_("Member's role changed"),
    PROJECT_DELETED: N_("Project deleted"),
    PROJECT_TWO_FACTOR_CHANGED: N_("Two-factor rule changed"),
    PROVIDER_SECRET_CHANGED: N_("Provider secret changed"),
    MONITOR_SECRET_CHANGED: N_("Monitor secret changed"),
    CONFIG_APPLIED: N_("Config file applied"),
    ADMIN_ACTION: N_("Administrator action"),
}
