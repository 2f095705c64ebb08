"""Escalation policies and paging: who is alerted, in which order, and reminded."""
