"""Upwatch: an open-source uptime-monitoring service."""

__version__ = "0.1.0"
