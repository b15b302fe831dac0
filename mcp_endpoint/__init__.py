"""The MCP server: tool and resource registry, /mcp, the stdio and SSE transports, `serve`.
May import every app and core; never research_site (docs/LAYERS.md)."""
