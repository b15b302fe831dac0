"""Offset paging, said once: every list that pages (search results, a project's papers,
a review's candidates) answers `next_offset` by this rule."""

from __future__ import annotations


def next_offset(offset: int, shown: int, total: int) -> int | None:
    """The offset of the page after one that showed `shown` items from `offset`, of
    `total`; None on the last page."""
    following = offset + shown
    return following if following < total else None
