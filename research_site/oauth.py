"""The built-in OAuth 2.1 authorization server for MCP clients (docs/AUTH.md).

django-oauth-toolkit does the protocol (authorization code, token, refresh with rotation
and reuse detection, revocation, RFC 8707 resources stored on grants and tokens, RFC
7591 registration); this module narrows it to what the MCP authorization specification
(2025-06-18) asks and nothing more:

- `/.well-known/oauth-protected-resource[/mcp]` (RFC 9728): /mcp is the resource, this
  server its authorization server;
- `/.well-known/oauth-authorization-server` (RFC 8414): only `code`, only
  `authorization_code` and `refresh_token`, only PKCE `S256`;
- `/oauth/authorize/`: the consent page in the admin's look, for a signed-in user. PKCE
  with S256 is required (`plain` or none: `invalid_request`), and the `resource` must be
  this server's /mcp (or one of OAUTH_EXTRA_RESOURCES): anything else is `invalid_target`;
  a request without one is bound to /mcp, so every token names its audience;
- `/oauth/register/` (RFC 7591): open registration of public or confidential clients for
  the authorization code flow, strictly checked and limited (OAUTH_REGISTRATION_*);
- `/oauth/token/`, `/oauth/revoke/`: the toolkit's.

Tokens are checked at /mcp by `research_site.identity.oauth_token_principal`.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import URLPattern, path
from django.utils.decorators import method_decorator
from django.views.decorators.csrf import csrf_exempt
from oauth2_provider import views as dot
from oauth2_provider.exceptions import OAuthToolkitError
from oauth2_provider.models import get_application_model
from oauthlib.oauth2.rfc6749.errors import CustomOAuth2Error, InvalidRequestError

from core import identity, throttle
from research_site.identity import same_resource

REGISTRATION_SCOPE = "oauth-register"  # a throttle scope name (core.throttle)
GRANT_TYPES = ("authorization_code", "refresh_token")
AUTH_METHODS = ("none", "client_secret_post", "client_secret_basic")
REGISTRATION_FIELDS = frozenset(
    {
        "redirect_uris",
        "client_name",
        "grant_types",
        "response_types",
        "token_endpoint_auth_method",
        "scope",
        "client_uri",
        "logo_uri",
        "contacts",
        "tos_uri",
        "policy_uri",
        "software_id",
        "software_version",
    }
)
MAX_REDIRECT_URIS = 5
MAX_URI_LENGTH = 2000
MAX_CLIENT_NAME = 100


def mcp_resource(request: HttpRequest) -> str:
    return identity.mcp_resource_url(request.scheme or "http", request.get_host())


def allowed_resources(request: HttpRequest) -> list[str]:
    return [mcp_resource(request), *settings.OAUTH_EXTRA_RESOURCES]


def issuer(request: HttpRequest) -> str:
    resource = urlsplit(mcp_resource(request))
    return f"{resource.scheme}://{resource.netloc}"


class ResourceMetadataView(dot.OAuthProtectedResourceMetadataView):
    """RFC 9728, at the root and at the path-inserted form for /mcp; both describe /mcp."""

    def get_resource(self, request: HttpRequest) -> str:
        return mcp_resource(request)

    def get_authorization_servers(self, request: HttpRequest) -> list[str]:
        return [issuer(request)]

    def get_resource_name(self) -> str:
        return settings.MCP_SERVER_NAME


class ServerMetadataView(dot.OAuthServerMetadataView):
    """RFC 8414, restricted to what this server accepts."""

    def get(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        response = super().get(request, *args, **kwargs)
        data = json.loads(response.content)
        data["issuer"] = issuer(request)
        data["response_types_supported"] = ["code"]
        data["grant_types_supported"] = list(GRANT_TYPES)
        data["code_challenge_methods_supported"] = ["S256"]
        data["token_endpoint_auth_methods_supported"] = list(AUTH_METHODS)
        data["scopes_supported"] = [identity.READ_SCOPE, identity.WRITE_SCOPE]
        data.pop("introspection_endpoint", None)
        data.pop("introspection_endpoint_auth_methods_supported", None)
        answer = JsonResponse(data)
        answer["Access-Control-Allow-Origin"] = "*"
        return answer


class ConsentView(dot.AuthorizationView):
    """The authorization endpoint: S256 only, this server's resource only, consent by a
    signed-in user on a page in the admin's look."""

    template_name = "oauth2_provider/authorize.html"

    def get(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        refusal = self._refusal(
            request.GET.get("code_challenge_method"), request.GET.getlist("resource")
        )
        if refusal is not None:
            return self._refuse(request, refusal)
        if "resource" not in request.GET:
            # RFC 8707 is optional for clients: bind the token to /mcp anyway.
            query = request.GET.copy()
            query["resource"] = mcp_resource(request)
            request.GET = query  # type: ignore[assignment]
        response = super().get(request, *args, **kwargs)
        return self._with_redirect_target(response, request.GET.get("redirect_uri", ""))

    def form_valid(self, form: Any) -> HttpResponse:
        # The hidden fields can be changed before the form is posted: check them again.
        resources = (form.cleaned_data.get("resource") or "").split()
        refusal = self._refusal(form.cleaned_data.get("code_challenge_method"), resources)
        if refusal is not None:
            application = (
                get_application_model()
                .objects.filter(client_id=form.cleaned_data.get("client_id"))
                .first()
            )
            error = OAuthToolkitError(
                error=refusal, redirect_uri=form.cleaned_data.get("redirect_uri")
            )
            refusal.state = form.cleaned_data.get("state")
            return self.error_response(error, application)
        return super().form_valid(form)

    def _refusal(self, method: str | None, resources: list[str]) -> Any:
        if method != "S256":
            return InvalidRequestError(
                description="PKCE is required with code_challenge_method=S256 "
                "(plain is not accepted)."
            )
        if len(resources) > 1:
            return CustomOAuth2Error(
                error="invalid_target", description="Ask for one resource per authorization."
            )
        for resource in resources:
            if not any(
                same_resource(resource, allowed) for allowed in allowed_resources(self.request)
            ):
                return CustomOAuth2Error(
                    error="invalid_target",
                    description=f"This server issues tokens for {mcp_resource(self.request)} only.",
                )
        return None

    def _refuse(self, request: HttpRequest, error: Any) -> HttpResponse:
        """Back to the client's redirect_uri with the error when the client and its
        redirect_uri are valid (never an open redirect), else an error page here."""
        try:
            _scopes, credentials = self.validate_authorization_request(request)
        except OAuthToolkitError as invalid:
            return self.error_response(invalid, application=None)
        error.state = credentials.get("state")
        application = get_application_model().objects.get(client_id=credentials["client_id"])
        return self.error_response(
            OAuthToolkitError(error=error, redirect_uri=credentials["redirect_uri"]), application
        )

    @staticmethod
    def _with_redirect_target(response: HttpResponse, redirect_uri: str) -> HttpResponse:
        """The consent form posts here and is redirected to the client: browsers apply the
        page's CSP form-action to that redirect, so the client's origin is allowed on
        this page only (the redirect_uri was validated against the registration)."""
        from research_site.security_headers import POLICY

        parts = urlsplit(redirect_uri)
        target = f"{parts.scheme}://{parts.netloc}" if parts.scheme in ("http", "https") else ""
        if parts.scheme and parts.scheme not in ("http", "https", "javascript", "data"):
            target = f"{parts.scheme}:"
        if target:
            response["Content-Security-Policy"] = POLICY.replace(
                "form-action 'self'", f"form-action 'self' {target}"
            )
        return response


def _registration_error(description: str, status: int = 400) -> JsonResponse:
    return JsonResponse(
        {"error": "invalid_client_metadata", "error_description": description}, status=status
    )


def _redirect_uri_problem(uri: Any) -> str | None:
    if not isinstance(uri, str) or not uri or len(uri) > MAX_URI_LENGTH:
        return "each redirect_uri must be a non-empty string of at most 2000 characters"
    try:
        parts = urlsplit(uri)
        parts.port  # noqa: B018 - raises on a bad port
    except ValueError:
        return f"redirect_uri {uri!r} is not a URI"
    if parts.fragment or "#" in uri or parts.username or parts.password:
        return f"redirect_uri {uri!r} must have no fragment and no user part"
    if any(ord(char) < 33 for char in uri):
        return f"redirect_uri {uri!r} must have no spaces or control characters"
    if parts.scheme == "https" and parts.hostname:
        return None
    if parts.scheme == "http" and parts.hostname in ("127.0.0.1", "localhost", "::1"):
        return None  # a native client's loopback redirect (RFC 8252 §7.3)
    if parts.scheme in settings.OAUTH_REDIRECT_SCHEMES:
        return None  # a private-use scheme the operator allows (RFC 8252 §7.1)
    return (
        f"redirect_uri {uri!r}: use https, http on a loopback address, or a scheme "
        "listed in OAUTH_REDIRECT_SCHEMES"
    )


def check_client_metadata(data: Any) -> str | None:
    """What is wrong with an RFC 7591 registration request, or None."""
    if not isinstance(data, dict):
        return "the body must be a JSON object"
    uris = data.get("redirect_uris")
    if not isinstance(uris, list) or not uris or len(uris) > MAX_REDIRECT_URIS:
        return f"redirect_uris must list 1 to {MAX_REDIRECT_URIS} URIs"
    for uri in uris:
        if (problem := _redirect_uri_problem(uri)) is not None:
            return problem
    name = data.get("client_name", "")
    if not isinstance(name, str) or len(name) > MAX_CLIENT_NAME:
        return f"client_name must be a string of at most {MAX_CLIENT_NAME} characters"
    grant_types = data.get("grant_types", ["authorization_code"])
    if (
        not isinstance(grant_types, list)
        or "authorization_code" not in grant_types
        or not set(grant_types) <= set(GRANT_TYPES)
    ):
        return "grant_types must be authorization_code, with or without refresh_token"
    if data.get("response_types", ["code"]) != ["code"]:
        return "response_types must be ['code']"
    if data.get("token_endpoint_auth_method", "client_secret_basic") not in AUTH_METHODS:
        return f"token_endpoint_auth_method must be one of {', '.join(AUTH_METHODS)}"
    scope = data.get("scope", "")
    if not isinstance(scope, str) or not set(scope.split()) <= {"read", "write"}:
        return "scope may only hold 'read' and 'write'"
    for field in ("client_uri", "logo_uri", "tos_uri", "policy_uri", "software_id",
                  "software_version"):  # fmt: skip
        value = data.get(field, "")
        if not isinstance(value, str) or len(value) > MAX_URI_LENGTH:
            return f"{field} must be a string of at most {MAX_URI_LENGTH} characters"
    contacts = data.get("contacts", [])
    if not isinstance(contacts, list) or len(contacts) > 5:
        return "contacts must list at most 5 addresses"
    return None


@method_decorator(csrf_exempt, name="dispatch")
class RegistrationView(dot.DynamicClientRegistrationView):
    """RFC 7591, open (MCP clients register themselves) but strict and limited: a small
    JSON body, the metadata above checked (others ignored, RFC 7591 §2), at most
    OAUTH_REGISTRATION_LIMIT registrations per address per AUTH_FAILURE_WINDOW_SECONDS and
    OAUTH_MAX_CLIENTS registered clients."""

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if settings.MCP_READ_ONLY:
            return _registration_error("This server is read-only.", status=403)
        if len(request.body) > settings.OAUTH_REGISTRATION_MAX_BYTES:
            return _registration_error("The registration request is too large.", status=413)
        keys = [throttle.client_key(request)]
        try:
            throttle.check(REGISTRATION_SCOPE, keys, limit=settings.OAUTH_REGISTRATION_LIMIT)
        except throttle.Throttled as exc:
            minutes = max(1, -(-exc.retry_after // 60))
            answer = JsonResponse(
                {
                    "error": "too_many_requests",
                    "error_description": "Too many client registrations from this address "
                    f"(OAUTH_REGISTRATION_LIMIT): try again in {minutes} minutes.",
                },
                status=429,
            )
            answer["Retry-After"] = str(exc.retry_after)
            return answer
        try:
            data = json.loads(request.body)
        except (ValueError, RecursionError):
            return _registration_error("The body must be JSON.")
        if (problem := check_client_metadata(data)) is not None:
            return _registration_error(problem)
        # RFC 7591 §2: metadata the server does not understand is ignored, not stored.
        data = {key: value for key, value in data.items() if key in REGISTRATION_FIELDS}
        application = get_application_model()
        registered = application.objects.filter(registration_source="dcr").count()
        if registered >= settings.OAUTH_MAX_CLIENTS:
            return _registration_error(
                "This server has as many registered clients as it allows (OAUTH_MAX_CLIENTS).",
                status=403,
            )
        data.setdefault("grant_types", ["authorization_code", "refresh_token"])
        request._body = json.dumps(data).encode()  # type: ignore[attr-defined]
        throttle.record_failure(REGISTRATION_SCOPE, keys)  # counts registrations, not failures
        response = super().post(request, *args, **kwargs)
        if response.status_code == 201:
            body = json.loads(response.content)
            method = data.get("token_endpoint_auth_method", "client_secret_basic")
            if method != "none":
                body["token_endpoint_auth_method"] = method
            if data.get("scope"):
                body["scope"] = data["scope"]
            response = JsonResponse(body, status=201)
        response["Cache-Control"] = "no-store"
        return response


@csrf_exempt
def read_only_refusal(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
    """A read-only server checks tokens but cannot store grants, tokens or clients."""
    return JsonResponse(
        {
            "error": "temporarily_unavailable",
            "error_description": "This server is read-only (MCP_READ_ONLY): it issues no "
            "OAuth tokens and registers no clients.",
        },
        status=503,
    )


def urlpatterns() -> list[URLPattern]:
    """Mounted at the site's root (the well-known paths must be there) under the toolkit's
    namespace, so its own views find each other by name."""
    metadata = ResourceMetadataView.as_view()
    if settings.MCP_READ_ONLY:
        return [
            path(".well-known/oauth-protected-resource", metadata),
            path(".well-known/oauth-protected-resource/mcp", metadata),
            path("oauth/<path:rest>", read_only_refusal),
        ]
    return [
        path(
            ".well-known/oauth-authorization-server",
            ServerMetadataView.as_view(),
            name="oauth-server-metadata",
        ),
        path(".well-known/oauth-protected-resource", metadata, name="oauth-resource-metadata"),
        path(".well-known/oauth-protected-resource/mcp", metadata),
        path("oauth/authorize/", ConsentView.as_view(), name="authorize"),
        path("oauth/token/", dot.TokenView.as_view(), name="token"),
        path("oauth/revoke/", dot.RevokeTokenView.as_view(), name="revoke-token"),
        path("oauth/register/", RegistrationView.as_view(), name="dcr-register"),
        path(
            "oauth/register/<str:client_id>/",
            dot.DynamicClientRegistrationManagementView.as_view(),
            name="dcr-register-management",
        ),
    ]
