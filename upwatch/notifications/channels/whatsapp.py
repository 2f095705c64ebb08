"""WhatsApp through Twilio's Messages API: the numbers carry a ``whatsapp:`` prefix."""

from __future__ import annotations

from upwatch.kit.languages import N_
from upwatch.notifications.channels.base import Places
from upwatch.notifications.channels.twilio import Twilio


class WhatsApp(Twilio):
    name = "whatsapp"
    label = N_("WhatsApp (Twilio)")
    places = Places(names=7, forms=8)
    plan = "pro"
    prefix = "whatsapp:"


CHANNEL = WhatsApp()
