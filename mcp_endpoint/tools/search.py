"""Tool set `search` (being written; see ARCHITECTURE.md's tool catalogue)."""

from __future__ import annotations

from mcp_endpoint.registry import Registry


def register(registry: Registry) -> None:
    """Registers nothing yet."""
