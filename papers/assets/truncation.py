"""Cutting long content for LLM clients, with a marker that says what was cut."""

from __future__ import annotations


def truncate(text: str, max_chars: int | None, *, more: str = "") -> str:
    """`text` cut after `max_chars` characters (code points, so never inside a character),
    followed by a marker saying how much was cut and, with `more`, how to get the rest.
    Text that fits, or `max_chars` None, comes back unchanged."""
    if max_chars is None or len(text) <= max_chars:
        return text
    if max_chars < 0:
        raise ValueError("max_chars must not be negative")
    total = len(text)
    how = more or f"Ask again with max_chars={total} for the full text."
    return (
        f"{text[:max_chars]}\n\n[TRUNCATED: showed the first {max_chars} of {total} characters; "
        f"{total - max_chars} characters were cut. {how}]"
    )
