"""Notification providers, the nine channel transports and reliable alert delivery."""
