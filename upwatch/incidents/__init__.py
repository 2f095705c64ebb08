"""Incidents: opened by people or by monitors turning down, with a timeline."""
