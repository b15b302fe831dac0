"""Tool set placeholder: filled in by the issue that builds it."""

from __future__ import annotations

from mcp_endpoint.registry import Registry


def register(registry: Registry) -> None:
    """No tools yet."""
