"""Issue 24 tools (being built): registered from TOOLSET_MODULES; nothing listed yet."""

from __future__ import annotations

from mcp_endpoint.registry import Registry


def register(registry: Registry) -> None:
    del registry
