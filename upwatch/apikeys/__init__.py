"""API keys: long-lived bearer credentials for automation, limited to a project and a scope."""
