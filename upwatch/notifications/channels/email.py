"""E-mail through the SMTP transport of ``mail/sender.py``, not the mail outbox: each attempt
then shows in the alert history like every other channel's."""

from __future__ import annotations

from collections.abc import Mapping
from email.message import EmailMessage
from email.utils import formatdate
from typing import Annotated, Any

import aiosmtplib
from pydantic import Field

from upwatch.kit.inputs import Input
from upwatch.kit.languages import N_
from upwatch.kit.schemas import Email as Address
from upwatch.mail.sender import PermanentMailError, one_line
from upwatch.notifications.channels.base import (
    Channel,
    DeliveryKit,
    FormField,
    Personal,
    Places,
    TransportError,
)
from upwatch.notifications.events import AlertEvent


class EmailConfig(Input):
    # The accounts' address rule: syntax only, internal domains (.test, .internal) allowed.
    to: Annotated[list[Address], Field(min_length=1, max_length=20)]


class Email(Channel):
    name = "email"
    label = "email"
    places = Places(names=0, forms=0, free_plan=0, personal=0)
    plan = "free"
    # The seed's settings record has this switch on from the start.
    personal = Personal(
        views=frozenset({"profile", "settings"}), on_by_default=True, own_address=True
    )
    form = (FormField("to", N_("Send to (addresses, separated by commas)"), listed=True),)
    config_model = EmailConfig

    @property
    def title(self) -> str:
        return N_("E-mail")

    def for_account(self, config: Mapping[str, Any], account_email: str) -> dict[str, Any]:
        # A personal config without addresses means the account's own address.
        if not config.get("to"):
            return {**config, "to": [account_email]}
        return dict(config)

    def kept_for_account(
        self, config: dict[str, Any], submitted: Mapping[str, Any]
    ) -> dict[str, Any]:
        # Stored without addresses: the account's address, whatever it is when an alert goes.
        return {**config, "to": []} if not submitted.get("to") else config

    async def send(self, config: Mapping[str, Any], event: AlertEvent, kit: DeliveryKit) -> None:
        settings = kit.settings
        if not settings.smtp_configured:
            raise TransportError("SMTP is not configured (UPWATCH_SMTP_HOST)", retryable=False)
        recipients = config.get("to")
        if not isinstance(recipients, list) or not recipients:
            raise self.error("the channel has no recipients", retryable=False)
        secrets = [settings.smtp_password]
        try:
            message = EmailMessage()
            message["From"] = settings.mail_from
            message["To"] = ", ".join(str(address) for address in recipients)
            message["Subject"] = one_line(event.headline)
            message["Date"] = formatdate(usegmt=True)
            message["Message-ID"] = f"<alert-{event.delivery_id}@upwatch>"
            # RFC 3834: out-of-office replies are not sent back to an automatic sender.
            message["Auto-Submitted"] = "auto-generated"
            message.set_content(event.text)
        except (ValueError, TypeError) as exc:
            raise self.error(
                f"cannot compose the message: {exc}", retryable=False, secrets=secrets
            ) from None
        try:
            await kit.smtp.send_email(message)
        except PermanentMailError as exc:
            raise self.error(
                f"the mail server refused the message: {exc}", retryable=False, secrets=secrets
            ) from None
        except (aiosmtplib.SMTPException, OSError, TimeoutError) as exc:
            text = f"sending failed: {type(exc).__name__}: {exc}"
            raise self.error(text, retryable=True, secrets=secrets) from None


CHANNEL = Email()
