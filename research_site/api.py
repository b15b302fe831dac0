"""The REST API root, mounted at /api/ (when API_ENABLED): one NinjaAPI with every app's
router, bearer-token (or staff session) authentication, and the error mapping.

Add an app's endpoints by writing `<app>/api.py` with a ninja `router` and one line in
ROUTERS. OpenAPI is at /api/openapi.json, the docs page at /api/docs.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import ninja
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, JsonResponse
from django.middleware.csrf import get_token
from django.urls import reverse
from django.utils.html import escape
from django.views.decorators.csrf import csrf_exempt
from ninja import NinjaAPI, Schema
from ninja.openapi.docs import Swagger
from pydantic import BaseModel

from core.errors import InvalidInput
from core.text import has_lone_surrogate
from research_site.api_auth import BearerToken, StaffSession
from research_site.api_errors import install_error_handlers

# URL prefix under /api/ -> "module.attribute" of a ninja Router.
ROUTERS: list[tuple[str, str]] = [
    # The library's PDF coverage (counted per project), before papers.api's /papers/{ref}.
    ("/papers", "projects.coverage_api.router"),
    ("/papers", "papers.api.router"),
    ("/search", "papers.search.api.router"),
    ("/projects", "projects.api.router"),
    # Data extraction of a review or a project, under the same prefix.
    ("/projects", "projects.extraction_api.router"),
    ("/engines", "engines.api.router"),
    # The engine searches, under the same prefix: they can file results into a project.
    ("/engines", "projects.engines_api.router"),
]

DESCRIPTION = """\
A researcher's paper library: papers, keywords, exports, summaries, search and projects,
with the same rules and limits as the MCP tools.

**Authentication**: `Authorization: Bearer <token>`. Create a token with
`manage.py api_token create --user <name> --name <label> [--scope write]` or in the admin.
Tokens of scope `read` (and users in the Readers group) may only make GET requests.

**Errors** are JSON `{"error": {"code", "message", ...}}`: 400 invalid_input (any bad
parameter or limit), 401, 403, 404, 409, 503, and 500 with an incident id.

**Limits**: query <= 4000 characters, page size <= 100, offset <= 10000.
"""

# Swagger UI's files as django-ninja ships them; ninja itself only serves them when it is
# in INSTALLED_APPS (and loads them from a CDN otherwise), so this API serves them itself.
NINJA_STATIC = Path(ninja.__file__).parent / "static" / "ninja"
DOCS_ASSETS = {
    "swagger-ui.css": "text/css",
    "swagger-ui-bundle.js": "text/javascript",
    "swagger-ui-init.js": "text/javascript",
    "favicon.svg": "image/svg+xml",
}
DOCS_PAGE = """<!DOCTYPE html>
<html>
<head>
<meta charset="utf-8">
<title>{title}</title>
<link rel="stylesheet" href="{css}">
<link rel="icon" href="{icon}" type="image/svg+xml">
</head>
<body data-csrf-token="{csrf}" data-api-csrf="{api_csrf}">
<script type="application/json" id="swagger-settings">{settings}</script>
<div id="swagger-ui"></div>
<script src="{bundle}"></script>
<script src="{init}"></script>
</body>
</html>
"""


class OfflineSwagger(Swagger):
    """ninja's Swagger UI page with every asset served by this API: the docs work offline."""

    def render_page(self, request: HttpRequest, api: NinjaAPI, **kwargs: Any) -> HttpResponse:
        self.settings["url"] = self.get_openapi_url(api, kwargs)
        namespace = api.urls_namespace

        def asset(name: str) -> str:
            return reverse(f"{namespace}:docs_asset", kwargs={"name": name})

        # A signed-in staff user can "Try it out" with the session; writes need CSRF.
        signed_in = request.user.is_authenticated if hasattr(request, "user") else False
        settings_json = json.dumps(self.settings).replace("</", "<\\/")
        page = DOCS_PAGE.format(
            title=escape(api.title),
            css=asset("swagger-ui.css"),
            icon=asset("favicon.svg"),
            bundle=asset("swagger-ui-bundle.js"),
            init=asset("swagger-ui-init.js"),
            csrf=escape(get_token(request)) if signed_in else "",
            api_csrf="true" if signed_in else "",
            settings=settings_json,
        )
        return HttpResponse(page)


def _unstorable_text(value: Any, where: str) -> str | None:
    """Where `value` holds text no database column can hold: a NUL character (PostgreSQL
    refuses it) or a lone surrogate from a JSON escape such as "\\ud800" (not UTF-8)."""
    items: Any
    if isinstance(value, str):
        return where if "\x00" in value or has_lone_surrogate(value) else None
    if isinstance(value, BaseModel):
        items = ((name, getattr(value, name)) for name in type(value).model_fields)
    elif isinstance(value, dict):
        items = [(key, key) for key in value] + list(value.items())
    elif isinstance(value, list | tuple):
        items = enumerate(value)
    else:
        return None
    for key, item in items:
        found = _unstorable_text(item, f"{where}.{key}" if where else str(key))
        if found:
            return found
    return None


def refuse_unstorable_text(view: Callable[..., Any]) -> Callable[..., Any]:
    """Every operation: a parameter with text no database can hold is bad input (400),
    checked once here rather than failing as a database error (500) wherever it lands."""

    @functools.wraps(view)
    def checked(request: HttpRequest, *args: Any, **values: Any) -> Any:
        for name, value in values.items():
            # Schema-typed parameters (query groups, bodies) are named by their fields.
            field = _unstorable_text(value, "" if isinstance(value, BaseModel) else name)
            if field:
                raise InvalidInput(
                    f"{field} holds a NUL character or invalid Unicode (a lone surrogate).",
                    field=field,
                )
        return view(request, *args, **values)

    return checked


api = NinjaAPI(
    title="Research MCP REST API",
    version="1",
    description=DESCRIPTION,
    urls_namespace="api",
    auth=[BearerToken(), StaffSession()],
    docs=OfflineSwagger(),
)
install_error_handlers(api)
api.add_decorator(refuse_unstorable_text)  # after validation and authentication


class ApiIndex(Schema):
    name: str
    version: str
    openapi: str
    docs: str


@api.get("/", auth=None, response=ApiIndex, operation_id="api_index", summary="Where to start")
def index(request: HttpRequest) -> dict[str, str]:
    return {
        "name": api.title,
        "version": api.version,
        "openapi": reverse("api:openapi-json"),
        "docs": reverse("api:openapi-view"),
    }


@api.get("/docs/assets/{name}", auth=None, include_in_schema=False, url_name="docs_asset")
def docs_asset(request: HttpRequest, name: str) -> FileResponse:
    if name not in DOCS_ASSETS:
        raise Http404(name)
    response = FileResponse((NINJA_STATIC / name).open("rb"), content_type=DOCS_ASSETS[name])
    response["Cache-Control"] = "public, max-age=86400"
    return response


for _prefix, _router in ROUTERS:
    api.add_router(_prefix, _router)


@csrf_exempt  # nothing is changed here, and a PUT/POST must get this 404, not the CSRF page
def unknown_endpoint(request: HttpRequest) -> JsonResponse:
    """Any other path under /api/, with any method: a JSON 404 like the rest of the API,
    not an HTML page."""
    body = {"error": {"code": "not_found", "message": "No such API endpoint; see /api/docs."}}
    return JsonResponse(body, status=404)
