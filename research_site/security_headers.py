"""Security headers on every answer of the site: a strict Content-Security-Policy and the
few related headers Django's SecurityMiddleware does not send.

The policy allows scripts only from this site's own files: no inline script, no inline
event handler, no eval, nothing from another origin (the admin, the reading room's pdf.js
and its worker, the REST docs' Swagger UI are all static files served here). An injected
`<script>` or `onerror=` therefore does not run even if some escaping failed. Two
allowances, each because something we ship needs it:

- `style-src 'unsafe-inline'`: Django's admin templates and widgets write `style`
  attributes (and the home page colours each note's swatch with one). Styles cannot run
  code; scripts stay strict.
- `img-src data: blob:` and `font-src data:`: Swagger UI's and the admin's CSS draw icons
  from data: URLs, and pdf.js renders page images and embedded fonts from blobs and data.

Responses that already carry a policy keep theirs. /mcp never reaches this (the ASGI
router answers it), and it is JSON anyway.
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

POLICY = "; ".join(
    (
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data: blob:",
        "font-src 'self' data:",
        "connect-src 'self'",
        "worker-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    )
)
HEADERS = {
    "Content-Security-Policy": POLICY,
    # No camera, microphone, location or the like: the site uses none of them.
    "Permissions-Policy": "camera=(), microphone=(), geolocation=(), payment=(), usb=()",
    "Cross-Origin-Resource-Policy": "same-origin",
}


class SecurityHeadersMiddleware:
    """Adds HEADERS to every response that does not set them itself."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        for name, value in HEADERS.items():
            if name not in response:
                response[name] = value
        return response
