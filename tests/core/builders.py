"""A fake terminal and its segment splitter, for tests of progress output (core/progress.py
and the commands that report through it)."""

from __future__ import annotations

import io


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def segments(text: str) -> list[str]:
    """What a terminal shows line by line: a carriage return starts the line over."""
    return [part for line in text.split("\n") for part in line.split("\r")]
