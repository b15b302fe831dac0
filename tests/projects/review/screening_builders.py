"""A tool caller over the screening tools that raises ToolError, for the screening and
de-duplication tests."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

from mcp_types import CallToolResult

from mcp_endpoint.registry import Registry
from mcp_endpoint.tools import review as review_tools
from mcp_endpoint.tools import screening as screening_tools


class ToolError(Exception):
    def __init__(self, body: dict[str, Any]) -> None:
        super().__init__(body.get("message"))
        self.code = body["code"]
        self.body = body


@dataclass
class Tools:
    """The `review` tool set with screening, called as MCP calls them (errors mapped)."""

    fns: dict[str, Callable[..., Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        registry = Registry(read_only=False, selected=frozenset({"review"}))
        registry._current_set = "review"
        review_tools.register(registry)
        screening_tools.register(registry)
        self.fns = {name: tool.fn for name, tool in registry.tools.items()}

    def __call__(self, name: str, **arguments: Any) -> dict[str, Any]:
        result = self.fns[name](**arguments)
        assert isinstance(result, CallToolResult)
        body = json.loads(result.content[0].text)
        if result.is_error:
            raise ToolError(body["error"])
        return cast(dict[str, Any], body)
