"""`mcp_budget`: the token cost of `tools/list`, per tool and per tool set.

manage.py mcp_budget                      # every tool set, zotero included
manage.py mcp_budget --toolsets core      # what MCP_TOOLSETS=core lists
manage.py mcp_budget --read-only
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from django.core.management.base import CommandParser

from core.commands import ResearchCommand
from mcp_endpoint.budget import CORE_BUDGET, FULL_BUDGET, ToolCost, tool_costs
from mcp_endpoint.registry import CORE


def _kind(cost: ToolCost) -> str:
    hints = cost.annotations
    kind = "read" if hints.get("readOnlyHint") else "write"
    if hints.get("destructiveHint") and kind == "write":
        kind = "write, destructive"
    if hints.get("openWorldHint"):
        kind += ", network"
    return kind


class Command(ResearchCommand):
    help = "Print the cl100k token cost of tools/list per tool and per tool set."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--toolsets", default="", help="Comma list (default: all sets).")
        parser.add_argument("--read-only", action="store_true", help="As MCP_READ_ONLY=true.")
        parser.add_argument(
            "--markdown", action="store_true", help="The docs/MCP.md catalogue table."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        toolsets = [name for name in options["toolsets"].split(",") if name.strip()]
        costs = tool_costs(toolsets=toolsets, read_only=options["read_only"])
        if options["markdown"]:
            self._markdown(costs)
            return
        by_set: dict[str, int] = defaultdict(int)
        self.stdout.write(f"{'tool':<32} {'set':<8} {'tokens':>6}")
        for cost in sorted(costs, key=lambda c: (c.toolset, -c.tokens)):
            self.stdout.write(f"{cost.name:<32} {cost.toolset:<8} {cost.tokens:>6}")
            by_set[cost.toolset] += cost.tokens
        self.stdout.write("")
        self.stdout.write(f"{'tool set':<32} {'tools':<8} {'tokens':>6}")
        for name, tokens in sorted(by_set.items()):
            count = sum(1 for c in costs if c.toolset == name)
            self.stdout.write(f"{name:<32} {count:<8} {tokens:>6}")
        total = sum(by_set.values())
        self.stdout.write(f"{'total':<32} {len(costs):<8} {total:>6}")
        self.stdout.write(
            f"budget: all tools <= {FULL_BUDGET}, core <= {CORE_BUDGET} "
            f"(core now {by_set.get(CORE, 0)})"
        )

    def _markdown(self, costs: list[ToolCost]) -> None:
        self.stdout.write("| set | tool | kind | tokens | what it does |")
        self.stdout.write("|---|---|---|---:|---|")
        for cost in sorted(costs, key=lambda c: (c.toolset != "core", c.toolset, c.name)):
            summary = cost.description.split(". ")[0].rstrip(".")
            self.stdout.write(
                f"| {cost.toolset} | `{cost.name}` | {_kind(cost)} | {cost.tokens} | {summary} |"
            )
        total = sum(c.tokens for c in costs)
        self.stdout.write(f"| | **total** ({len(costs)} tools) | | **{total}** | |")
