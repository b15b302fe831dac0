"""Checks on text from outside that no layer can store or echo as it is."""

from __future__ import annotations


def has_lone_surrogate(text: str) -> bool:
    """True when `text` holds a lone surrogate (from a JSON `\\ud800` escape): it is not
    valid Unicode, so it cannot be encoded as UTF-8, stored or sent back."""
    if text.isascii():
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False
