"""ASGI entry points for uvicorn.

`application` serves the whole site: /mcp on the pure-ASGI fast path, everything else
(admin, static files) through Django. `sse_application` adds the legacy HTTP+SSE MCP
transport at /sse and /messages/ (`serve --transport sse`).
"""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "research_site.settings")
django_application = get_asgi_application()  # sets Django up before the imports below

from mcp_endpoint.asgi import McpRouter  # noqa: E402
from mcp_endpoint.scope import parse_collections, set_process_default  # noqa: E402
from mcp_endpoint.sse import LegacySseApp  # noqa: E402

# `serve --collections` passes its scope to uvicorn worker processes through the
# environment: clients that choose no collection get this one.
set_process_default(parse_collections(os.environ.get("MCP_DEFAULT_COLLECTIONS")))

application = McpRouter(django_application)
sse_application = McpRouter(django_application, sse_app=LegacySseApp())
