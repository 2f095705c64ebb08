"""Data retention: notices before expiry, purging by plan, measured storage (contract §12)."""
