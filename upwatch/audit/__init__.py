"""The audit log: an append-only record of security-relevant events."""
