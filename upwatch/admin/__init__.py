"""Operator views across every tenant."""
