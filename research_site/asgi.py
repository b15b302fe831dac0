"""ASGI entry points for uvicorn.

`application` serves the whole site: /mcp on the pure-ASGI fast path, everything else
(admin, static files) through Django. `sse_application` adds the legacy HTTP+SSE MCP
transport at /sse and /messages/ (`serve --transport sse`).
"""

import os
from pathlib import Path

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "research_site.settings")
django_application = get_asgi_application()  # sets Django up before the imports below

from django.apps import apps  # noqa: E402
from starlette.staticfiles import StaticFiles  # noqa: E402

from mcp_endpoint.asgi import McpRouter  # noqa: E402
from mcp_endpoint.scope import parse_collections, set_process_default  # noqa: E402
from mcp_endpoint.sse import LegacySseApp  # noqa: E402

# `serve --collections` passes its scope to uvicorn worker processes through the
# environment: clients that choose no collection get this one.
set_process_default(parse_collections(os.environ.get("MCP_DEFAULT_COLLECTIONS")))


def _static_files() -> StaticFiles:
    """Every installed app's static/ folder (the admin's, ours), as the finders see them."""
    packages: list[str | tuple[str, str]] = [
        (config.name, "static")
        for config in apps.get_app_configs()
        if Path(config.path, "static").is_dir()
    ]
    return StaticFiles(packages=packages)


application = McpRouter(django_application, static_app=_static_files())
sse_application = McpRouter(django_application, sse_app=LegacySseApp(), static_app=_static_files())
