"""Tool set `review`: the literature-review workflow (issue 6). Being built."""

from __future__ import annotations

from mcp_endpoint.registry import Registry


def register(registry: Registry) -> None:
    """No tools yet."""
