"""Textual widgets of the dashboard; `modelview` holds the pure state they display."""
