"""Reusable test helpers (real servers on loopback, no network)."""
