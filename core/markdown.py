"""Markdown built from other people's words: titles, abstracts, comments, URLs.

Everything the library returns as markdown (search snippets, annotation exports, paper
lists) goes through these two functions, so that text an author, an importer or a client
wrote reaches the agent as text: no emphasis, link, image or raw HTML (`<script>`,
`<img onerror=...>`) can come out of it, and only http(s) links are ever emitted.
"""

from __future__ import annotations

from urllib.parse import urlsplit

# Inline markdown a renderer would act on, and the backslash itself (so that text holding
# `\*` cannot undo an escape). `<`/`>` become entities: CommonMark has no escape that stops
# an HTML block or an autolink in every renderer.
_MARKUP = str.maketrans(
    {
        "\\": "\\\\",
        "*": "\\*",
        "_": "\\_",
        "`": "\\`",
        "[": "\\[",
        "]": "\\]",
        "<": "&lt;",
        ">": "&gt;",
    }
)


def escape_markdown(text: str) -> str:
    """`text` as inline markdown that shows exactly those words."""
    return text.translate(_MARKUP)


def http_link(url: str | None) -> str | None:
    """`url` as a markdown autolink `<url>` when it is an absolute http(s) URL that needs no
    escaping; None for anything else (`javascript:`, `data:`, `file:`, relative, spaces)."""
    if not url:
        return None
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        return None
    if any(c in url for c in " <>\"'`\\") or any(ord(c) < 0x21 or ord(c) == 0x7F for c in url):
        return None
    return f"<{url}>"
