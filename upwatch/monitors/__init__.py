"""Monitors: definitions, checks and response-time statistics."""
