"""The web console under /app: the service in a browser, server-rendered (docs/console.md)."""
