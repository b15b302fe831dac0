"""The SDK's own Streamable HTTP app serving the same registry as /mcp, for bench_mcp.py.

    RESEARCH_DIRECTORY=... uvicorn benchmarks.sdk_app:app --port 8001

Django is set up first (the tools use the ORM), then `build_server()` assembles the very
`MCPServer` that `manage.py serve` dispatches to, and the SDK serves it the way its docs
show for a stateless deployment: `stateless_http=True`, `json_response=True`. Only the
benchmark uses this; it is not a supported way to serve the product (see docs/MCP.md).
"""

from __future__ import annotations

import os

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "research_site.settings")
django.setup()

from mcp_endpoint.registry import build_server  # noqa: E402

app = build_server().streamable_http_app(stateless_http=True, json_response=True)
