"""Maintenance windows: scheduled time when checks run and are stored but alert no one."""
