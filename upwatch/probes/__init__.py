"""Probes, one module per check type; each returns an ``Outcome`` and never raises for targets."""
