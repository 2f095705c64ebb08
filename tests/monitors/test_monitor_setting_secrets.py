"""A type's secret settings and a database URL's password: masked, and kept only when sent
back masked for the same server."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from upwatch.kit.targets import target_of
from upwatch.monitors import secrets


def test_a_url_password_is_masked_and_everything_else_stays() -> None:
    assert (
        secrets.mask_url_password("postgresql://app:hunter2-long@db.example.com:5432/prod")
        == "postgresql://app:****@db.example.com:5432/prod"
    )
    assert secrets.mask_url_password("redis://cache.example.com:6379/0") == (
        "redis://cache.example.com:6379/0"
    )
    assert secrets.mask_url_password(None) is None


def test_a_masked_url_sent_back_for_the_same_server_keeps_its_password() -> None:
    stored = "mysql://app:s3cret@db.example.com:3306/shop"
    sent = secrets.mask_url_password(stored)
    assert secrets.kept_url_password(sent, stored) == stored
    # Another database on the same server and user keeps it too.
    assert secrets.kept_url_password("mysql://app:****@db.example.com:3306/other", stored) == (
        "mysql://app:s3cret@db.example.com:3306/other"
    )
    # A new password in clear replaces it.
    assert secrets.kept_url_password("mysql://app:new@db.example.com:3306/shop", stored) == (
        "mysql://app:new@db.example.com:3306/shop"
    )


@pytest.mark.parametrize(
    "moved",
    [
        "mysql://app:****@elsewhere.example.com:3306/shop",
        "mysql://app:****@db.example.com:3307/shop",
        "mysql://root:****@db.example.com:3306/shop",
        "mariadb://app:****@db.example.com:3306/shop",
    ],
)
def test_a_masked_password_is_never_carried_to_another_server_or_user(moved: str) -> None:
    with pytest.raises(secrets.SecretNotKept):
        secrets.kept_url_password(moved, "mysql://app:s3cret@db.example.com:3306/shop")


def test_secret_settings_are_masked_and_a_mask_sent_back_keeps_the_value() -> None:
    stored = {"username": "monitor", "password": "correct-horse-battery-staple"}
    shown = secrets.masked_settings(stored, {"password"})
    assert shown["username"] == "monitor"
    assert "correct-horse" not in str(shown["password"])
    assert secrets.kept_setting(shown["password"], stored["password"]) == stored["password"]
    assert secrets.kept_setting("new-password", stored["password"]) == "new-password"


def test_what_alerts_and_pages_call_a_monitors_target_never_shows_a_password() -> None:
    def target(url: str) -> str | None:
        return target_of(SimpleNamespace(url=url, host=None, port=None))

    assert target("postgresql://app:hunter2@db.example.com/prod") == (
        "postgresql://app:****@db.example.com/prod"
    )
    assert target("https://example.com/health?x=1") == "https://example.com/health?x=1"
    assert (
        target("redis://:p%40ss@cache.example.com:6379") == "redis://:****@cache.example.com:6379"
    )
