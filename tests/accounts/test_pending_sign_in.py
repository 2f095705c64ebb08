"""A pending sign-in (a right password waiting for its second factor) is read back only as
issued, unchanged and in time."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from upwatch.accounts.factors import PENDING_LIFETIME, PendingSignIn, PendingSignIns
from upwatch.models import User

NOW = datetime(2026, 11, 27, 8, 0, tzinfo=UTC)


def _user() -> User:
    return User(id="u" * 32, email="a@example.com", token_version=3)


def test_a_pending_sign_in_reads_back_as_issued() -> None:
    pending = PendingSignIns("key")
    value = pending.issue(_user(), "password", NOW)
    assert pending.read(value, NOW + PENDING_LIFETIME / 2) == PendingSignIn("u" * 32, 3, "password")


def test_a_pending_sign_in_expires() -> None:
    pending = PendingSignIns("key")
    value = pending.issue(_user(), "password", NOW)
    assert pending.read(value, NOW + PENDING_LIFETIME) is None


def test_a_changed_or_foreign_pending_sign_in_is_refused() -> None:
    pending = PendingSignIns("key")
    value = pending.issue(_user(), "password", NOW)
    later = NOW + timedelta(seconds=1)
    assert PendingSignIns("other key").read(value, later) is None
    assert pending.read(value.replace(".3.", ".4."), later) is None
    assert pending.read(value[:-1] + ("0" if value[-1] != "0" else "1"), later) is None
    for junk in ("", ".", "a.b", "x" * 200, None):
        assert pending.read(junk, later) is None
