"""The one text filter of the dashboard: the pickers (`widgets.filter_list`), the plan results
table and the events view keep a row when it contains what was typed, so they all narrow
alike. Plain Python, no UI: the events log filters with it headless too."""

from __future__ import annotations


def matches(text: str, typed: str) -> bool:
    """Whether a filter holding `typed` keeps a row reading `text`: it contains what was typed,
    case and surrounding blanks aside (blank keeps everything)."""
    return typed.strip().lower() in text.lower()
