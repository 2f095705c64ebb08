"""A person's sessions: API logins (refresh-token families) and console sign-ins, listed and
ended (docs/sessions.md)."""
