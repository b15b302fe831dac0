"""A test-only tool set, registered by tests through TOOLSET_MODULES (never in product code).

Its tools exercise what the library tools cannot trigger on demand: a crash, a domain
error with details, a service's InvalidInput, and the protocol version a request ran at.
"""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context
from pydantic import BaseModel, Field

from core.errors import Conflict, InvalidInput
from mcp_endpoint.registry import READ_ONLY, Registry
from mcp_endpoint.scope import current_scope


class Echo(BaseModel):
    protocol_version: str | None
    scope: list[str] | None


def register(registry: Registry) -> None:
    @registry.tool(name="crash", title="Crash", description="Fails.", annotations=READ_ONLY)
    def crash() -> Echo:
        raise RuntimeError("secret internal detail")

    @registry.tool(
        name="conflict", title="Conflict", description="Domain error.", annotations=READ_ONLY
    )
    def conflict() -> Echo:
        raise Conflict("Already there.", name="x", existing_id=7)

    @registry.tool(
        name="invalid", title="Invalid", description="Service rejects input.", annotations=READ_ONLY
    )
    def invalid(value: Annotated[str, Field(max_length=10)] = "a") -> Echo:
        raise InvalidInput("value is not acceptable.", field="value")

    @registry.tool(name="echo", title="Echo", description="Echo.", annotations=READ_ONLY)
    def echo(ctx: Context) -> Echo:
        return Echo(protocol_version=ctx.protocol_version, scope=current_scope())
