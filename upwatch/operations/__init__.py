"""Operating the service: liveness, readiness and metrics, the first administrator,
backup and restore."""
