"""Observing a running emulation and reporting a finished one: snapshots, the run JSON, per-element records."""
