"""MCP over stdin/stdout (`serve --transport stdio`), from the same registry.

The SDK's loop serves both protocol eras (the `initialize` handshake and 2026-07-28
per-request envelopes). While it runs, the SDK points fd 1 at stderr for everything but
the protocol writer, so a stray print cannot corrupt the stream.
"""

from __future__ import annotations

import anyio

from mcp_endpoint.registry import get_server


def run_stdio() -> None:
    anyio.run(get_server().run_stdio_async)
