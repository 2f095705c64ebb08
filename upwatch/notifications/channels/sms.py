"""SMS through Twilio's Messages API."""

from __future__ import annotations

from upwatch.kit.languages import N_
from upwatch.notifications.channels.base import Personal, Places
from upwatch.notifications.channels.twilio import Twilio


class Sms(Twilio):
    name = "sms"
    label = N_("SMS (Twilio)")
    places = Places(names=1, forms=7, personal=1)
    plan = "pro"
    personal = Personal(views=frozenset({"profile"}))


CHANNEL = Sms()
