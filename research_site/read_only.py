"""The web pages in read-only mode (MCP_READ_ONLY=true, the database opened read-only).

Every write a page can ask for is either hidden or refused with 403 and a sentence that
says why, never sent to the database (which would answer "attempt to write a readonly
database", an HTTP 500). Two generic layers, so that an admin page added later is covered
without being listed here:

- `restrict_admin`: every ModelAdmin and inline, Django's own (users, groups) included,
  loses its add/change/delete permissions and any custom `has_<name>_permission` (change
  forms become view-only, the Add and Delete buttons go), and keeps only the actions that
  need nothing but the view permission (the exports).
- `ReadOnlyMiddleware`: any other request that could write (a method other than GET, HEAD
  or OPTIONS) answers 403, except signing in and out (sessions are signed cookies in this
  mode) and /mcp, /api/ and /oauth/, which refuse writes themselves with their own error
  shapes.
  Custom admin views (add by identifier, import BibTeX, upload a PDF, "run now") and
  /alerts/read are refused here. Actions POST to the change list, so the view-only
  actions still pass: their name is checked against the same rule as above.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

from django.contrib import admin
from django.contrib.admin.options import BaseModelAdmin
from django.http import HttpRequest, HttpResponse, HttpResponseForbidden
from django.urls import reverse
from django.utils.html import escape

MESSAGE = (
    "This server is read-only (MCP_READ_ONLY=true): nothing can be added, changed or "
    "deleted here. Browse and export only; make changes on the writable server."
)
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
# Permissions that only read: everything else is a write.
_READ_PERMISSIONS = frozenset({"view", "module", "view_or_change"})
_PERMISSION = re.compile(r"^has_(\w+)_permission$")
# Paths that refuse writes themselves (JSON-RPC / JSON errors), not with this page.
# /oauth/ answers OAuth clients in their own JSON error shape (research_site/oauth.py).
_SELF_GUARDED = ("/mcp", "/api/", "/oauth/")


def forbidden(message: str = MESSAGE) -> HttpResponse:
    """A 403 page saying why (no script, no inline style: the CSP forbids both)."""
    return HttpResponseForbidden(
        "<!doctype html><html lang=en><meta charset=utf-8><title>Read-only</title>"
        f"<h1>403 Read-only</h1><p>{escape(message)}</p></html>",
        content_type="text/html; charset=utf-8",
    )


def view_only(action: Any) -> bool:
    """Whether an admin action (a function, a tuple or Django 6's Action) only reads:
    it declares permissions and every one of them is `view`."""
    func = action[0] if isinstance(action, tuple) else getattr(action, "func", action)
    allowed = getattr(func, "allowed_permissions", None) or ()
    return bool(allowed) and all(permission == "view" for permission in allowed)


def _deny(self: Any, request: HttpRequest, *args: Any, **kwargs: Any) -> bool:
    return False


def _subclasses(cls: type) -> Iterator[type]:
    yield cls
    sub: type
    for sub in cls.__subclasses__():
        yield from _subclasses(sub)


def restrict_admin() -> None:
    """Make every ModelAdmin class (defined by now: call after admin autodiscovery)
    view-only, as the module docstring says. Only ever called in read-only mode."""
    for cls in set(_subclasses(BaseModelAdmin)):
        for name in list(vars(cls)):
            found = _PERMISSION.match(name)
            if found and found.group(1) not in _READ_PERMISSIONS:
                setattr(cls, name, _deny)
    model_admin: Any = admin.ModelAdmin
    original = model_admin._filter_actions_by_permissions

    def filter_actions(self: Any, request: HttpRequest, actions: Any) -> Any:
        return [action for action in original(self, request, actions) if view_only(action)]

    model_admin._filter_actions_by_permissions = filter_actions


def _view_only_action_names() -> frozenset[str]:
    names: set[str] = set()
    for model_admin in admin.site._registry.values():
        for action in model_admin.actions or ():
            func = getattr(model_admin, action, None) if isinstance(action, str) else action
            if func is not None and view_only(func):
                names.add(getattr(func, "__name__", str(action)))
    return frozenset(names)


class ReadOnlyMiddleware:
    """Refuse, with 403 and MESSAGE, every request that could write (module docstring).
    Installed only when MCP_READ_ONLY is on (settings.py)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        self._allowed_paths: frozenset[str] | None = None
        self._view_only_actions: frozenset[str] | None = None

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.method in SAFE_METHODS or request.path.startswith(_SELF_GUARDED):
            return self.get_response(request)
        if self._allowed_paths is None:
            self._allowed_paths = frozenset({reverse("admin:login"), reverse("admin:logout")})
            self._view_only_actions = _view_only_action_names()
        if request.path in self._allowed_paths:
            return self.get_response(request)
        if request.method == "POST" and "_save" not in request.POST:
            chosen = [name for name in request.POST.getlist("action") if name]
            if chosen and set(chosen) <= (self._view_only_actions or frozenset()):
                return self.get_response(request)  # an export from a change list
        return forbidden()


def permission_denied(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """handler403 in read-only mode: an add or delete page opened by its address."""
    return forbidden()
