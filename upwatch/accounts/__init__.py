"""Accounts: registration, authentication, tokens, profile and settings."""
