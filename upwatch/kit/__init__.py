"""Shared building blocks: database, errors, security, mail, throttling, pagination."""
