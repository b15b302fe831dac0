"""Identity on /mcp and the built-in OAuth 2.1 authorization server (docs/AUTH.md), through
a real server process and the MCP SDK's own OAuth client (`mcp.client.auth`).

A person signs in to the site and consents on the consent page (driven here with an HTTP
client holding their session); the SDK client discovers everything from the 401 (protected
resource metadata, authorization server metadata), registers itself (RFC 7591), runs the
authorization code flow with PKCE S256, and its tool calls act as that person.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
import secrets
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx2
import mcp
import pytest
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

from tests.mcp.conftest import (
    PYTHON,
    ROOT,
    KnowledgeBase,
    LiveServer,
    call_tool_raw,
    post,
    rpc,
    running_server,
    tool_data,
)

pytestmark = [pytest.mark.server]

PASSWORD = "correct horse battery staple"
REDIRECT_URI = "http://127.0.0.1:9/callback"  # never opened: the test reads the redirect
OTHER_RESOURCE = "http://127.0.0.1:1/mcp"
SERVICE_TOKEN = "service-token-0123456789"  # the shared MCP_AUTH_TOKEN
# These tests send many refused tokens on purpose; the lockout has its own test below (the
# counts are shared through Redis by every server of the run).
NO_LOCKOUT = {"AUTH_FAILURE_LIMIT": "100000"}


def _manage_shell(kb: KnowledgeBase, code: str) -> str:
    done = subprocess.run(
        [PYTHON, "manage.py", "shell", "-c", code],
        cwd=ROOT,
        env=kb.env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""


SETUP = f"""
import json
from django.contrib.auth.models import User
from research_site.tokens import api_token_create
alice = User.objects.create_user("alice", password={PASSWORD!r}, is_staff=True)
User.objects.create_user("bob", password={PASSWORD!r}, is_staff=True)
_, read = api_token_create(user=alice, name="reader", scope="read")
_, write = api_token_create(user=alice, name="writer", scope="write")
_, doomed = api_token_create(user=alice, name="doomed", scope="write")
print(json.dumps({{"read": read, "write": write, "doomed": doomed}}))
"""


@dataclass
class OAuthServer:
    server: LiveServer
    kb: KnowledgeBase
    api_tokens: dict[str, str] = field(default_factory=dict)

    @property
    def base(self) -> str:
        return self.server.base_url

    def shell(self, code: str) -> str:
        return _manage_shell(self.kb, code)


@pytest.fixture(scope="module")
def oauth_server(knowledge_base: KnowledgeBase) -> Iterator[OAuthServer]:
    tokens = json.loads(_manage_shell(knowledge_base, SETUP))
    env = {
        **NO_LOCKOUT,
        "OAUTH_ENABLED": "true",
        "OAUTH_EXTRA_RESOURCES": OTHER_RESOURCE,
        # A shared server: loopback clients authenticate too (else they are the owner).
        "MCP_LOOPBACK_OWNER": "false",
        "OAUTH_REGISTRATION_LIMIT": "200",  # every test registers its own client
        "MCP_AUTH_TOKEN": SERVICE_TOKEN,
        "LOG_LEVEL": "DEBUG",
    }
    with running_server(knowledge_base, env=env) as server:
        yield OAuthServer(server, knowledge_base, tokens)
    _manage_shell(
        knowledge_base,
        "from django.contrib.auth.models import User; "
        "User.objects.filter(username__in=['alice', 'bob', 'mcp-service']).delete()",
    )


# --- a person in a browser -------------------------------------------------------------


def _hidden_fields(page: str) -> dict[str, str]:
    fields = {}
    for tag in re.findall(r"<input[^>]*>", page):
        name = re.search(r'name="([^"]+)"', tag)
        value = re.search(r'value="([^"]*)"', tag)
        if name and 'type="hidden"' in tag:
            fields[name.group(1)] = html.unescape(value.group(1)) if value else ""
    return fields


class Browser:
    """A signed-in person: the admin's sign-in form, then the consent page."""

    def __init__(self, base: str, username: str) -> None:
        self.base = base
        self.client = httpx2.Client(base_url=base, timeout=30, follow_redirects=False)
        page = self.client.get("/admin/login/")
        token = _hidden_fields(page.text)["csrfmiddlewaretoken"]
        signed_in = self.client.post(
            "/admin/login/?next=/admin/",
            data={"username": username, "password": PASSWORD, "csrfmiddlewaretoken": token},
            headers={"referer": f"{base}/admin/login/"},
        )
        assert signed_in.status_code == 302, signed_in.text[:500]

    def consent(self, authorization_url: str, *, allow: bool = True) -> httpx2.Response:
        """Opens the authorization URL; on the consent page, allows (or denies). Returns the
        final answer: the redirect to the client, or an error."""
        page = self.client.get(authorization_url)
        if page.status_code != 200:
            return page
        assert "authorizationForm" in page.text, page.text[:2000]
        assert "Allow" in page.text and 'href="/static/admin/css/base.css"' in page.text
        form = _hidden_fields(page.text)
        if allow:
            form["allow"] = "Allow"
        return self.client.post(
            authorization_url, data=form, headers={"referer": authorization_url}
        )


def redirect_params(response: httpx2.Response) -> dict[str, str]:
    assert response.status_code == 302, (response.status_code, response.text[:1000])
    location = response.headers["location"]
    assert location.startswith(REDIRECT_URI), location
    return {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}


# --- the flow by hand, for the cases the SDK client would never send ---------------------


def register(base: str, **metadata: Any) -> httpx2.Response:
    body = {
        "redirect_uris": [REDIRECT_URI],
        "client_name": "test client",
        "token_endpoint_auth_method": "none",
        **metadata,
    }
    return httpx2.post(f"{base}/oauth/register/", json=body, timeout=30)


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
    return verifier, challenge.decode().rstrip("=")


def authorization_url(base: str, client_id: str, challenge: str, **extra: str) -> str:
    params = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": REDIRECT_URI,
        "state": "st-1",
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "scope": "read write",
        "resource": f"{base}/mcp",
        **extra,
    }
    return f"{base}/oauth/authorize/?{urlencode({k: v for k, v in params.items() if v})}"


def exchange(base: str, client_id: str, code: str, verifier: str, **extra: str) -> httpx2.Response:
    data = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": REDIRECT_URI,
        "client_id": client_id,
        "code_verifier": verifier,
        **extra,
    }
    return httpx2.post(f"{base}/oauth/token/", data=data, timeout=30)


def token_by_hand(
    server: OAuthServer, username: str = "alice", scope: str = "read write", resource: str = ""
) -> dict[str, Any]:
    base = server.base
    client_id = register(base).json()["client_id"]
    verifier, challenge = pkce()
    url = authorization_url(
        base, client_id, challenge, scope=scope, resource=resource or f"{base}/mcp"
    )
    params = redirect_params(Browser(base, username).consent(url))
    answer = exchange(base, client_id, params["code"], verifier)
    assert answer.status_code == 200, answer.text
    return {**answer.json(), "client_id": client_id}


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


def ping_status(server: OAuthServer, token: str) -> httpx2.Response:
    return post(f"{server.base}/mcp", rpc("ping"), headers=bearer(token))


# --- the SDK's own OAuth client ---------------------------------------------------------


class MemoryStorage:
    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


def sdk_provider(server: OAuthServer, username: str, storage: MemoryStorage) -> OAuthClientProvider:
    browser = Browser(server.base, username)
    redirected: dict[str, str] = {}

    async def redirect_handler(url: str) -> None:
        redirected.clear()
        redirected.update(redirect_params(browser.consent(url)))

    async def callback_handler() -> AuthorizationCodeResult:
        return AuthorizationCodeResult(
            code=redirected["code"], state=redirected.get("state"), iss=redirected.get("iss")
        )

    metadata = OAuthClientMetadata(
        client_name="SDK test client",
        redirect_uris=[REDIRECT_URI],  # type: ignore[list-item]
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="none",
    )
    return OAuthClientProvider(
        server_url=f"{server.base}/mcp",
        client_metadata=metadata,
        storage=storage,
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
    )


async def _tool(client: mcp.Client, name: str, arguments: dict[str, Any]) -> Any:
    result = await client.call_tool(name, arguments)
    assert not result.is_error, result.content
    return tool_data(result)


@pytest.mark.anyio
async def test_sdk_client_discovers_registers_consents_and_acts_as_the_user(
    oauth_server: OAuthServer,
) -> None:
    storage = MemoryStorage()
    provider = sdk_provider(oauth_server, "alice", storage)
    url = f"{oauth_server.base}/mcp"
    async with httpx2.AsyncClient(auth=provider, timeout=30) as http_client:
        async with mcp.Client(
            streamable_http_client(url, http_client=http_client), mode="legacy"
        ) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            created = await _tool(client, "create_project", {"name": "OAuth made this"})
            # Refresh with rotation: the client's access token has "expired".
            first = storage.tokens
            assert first is not None and first.refresh_token
            provider.context.token_expiry_time = 1.0  # long past (0 means "no expiry")
            projects = await _tool(client, "list_projects", {})
    assert {"create_project", "list_projects"} <= names
    assert "OAuth made this" in json.dumps(created)
    assert "OAuth made this" in json.dumps(projects)
    second = storage.tokens
    assert second is not None
    assert second.access_token != first.access_token
    assert second.refresh_token != first.refresh_token
    assert storage.client_info is not None and storage.client_info.client_id

    log = oauth_server.server.log()
    assert "tools/call create_project" in log
    assert re.search(r"create_project.*as alice \(oauth: OAuth client SDK test client\)", log), log[
        -3000:
    ]

    # The rotated-away refresh token is spent: reusing it is refused (and, reuse detection,
    # revokes its family, so the newest token stops working too).
    reused = httpx2.post(
        f"{oauth_server.base}/oauth/token/",
        data={
            "grant_type": "refresh_token",
            "refresh_token": first.refresh_token,
            "client_id": storage.client_info.client_id,
        },
        timeout=30,
    )
    assert reused.status_code == 400
    assert reused.json()["error"] == "invalid_grant"
    assert ping_status(oauth_server, second.access_token).status_code == 401


def test_discovery_documents(oauth_server: OAuthServer) -> None:
    base = oauth_server.base
    anonymous = post(f"{base}/mcp", rpc("ping"))
    assert anonymous.status_code == 401
    assert "error=" not in anonymous.headers["www-authenticate"]
    assert "resource_metadata=" in anonymous.headers["www-authenticate"]
    unauthorized = ping_status(oauth_server, "not-a-token")
    assert unauthorized.status_code == 401
    challenge = unauthorized.headers["www-authenticate"]
    metadata_url = f"{base}/.well-known/oauth-protected-resource/mcp"
    assert f'resource_metadata="{metadata_url}"' in challenge
    assert 'error="invalid_token"' in challenge

    resource = httpx2.get(metadata_url).json()
    assert resource["resource"] == f"{base}/mcp"
    assert resource["authorization_servers"] == [base]
    assert httpx2.get(f"{base}/.well-known/oauth-protected-resource").json() == resource

    server = httpx2.get(f"{base}/.well-known/oauth-authorization-server").json()
    assert server["issuer"] == base
    assert server["code_challenge_methods_supported"] == ["S256"]
    assert server["response_types_supported"] == ["code"]
    assert set(server["grant_types_supported"]) == {"authorization_code", "refresh_token"}
    assert server["registration_endpoint"] == f"{base}/oauth/register/"
    assert server["authorization_endpoint"] == f"{base}/oauth/authorize/"
    assert server["revocation_endpoint"] == f"{base}/oauth/revoke/"
    assert server["authorization_response_iss_parameter_supported"] is True


def test_token_for_another_resource_is_refused(oauth_server: OAuthServer) -> None:
    issued = token_by_hand(oauth_server, resource=OTHER_RESOURCE)
    refused = ping_status(oauth_server, issued["access_token"])
    assert refused.status_code == 401
    assert "not issued for this resource" in refused.json()["error"]["message"]
    assert 'error="invalid_token"' in refused.headers["www-authenticate"]
    # The same flow for this server's /mcp is served.
    assert ping_status(oauth_server, token_by_hand(oauth_server)["access_token"]).status_code == 200


def test_resource_this_server_does_not_serve_is_invalid_target(oauth_server: OAuthServer) -> None:
    base = oauth_server.base
    client_id = register(base).json()["client_id"]
    _verifier, challenge = pkce()
    url = authorization_url(base, client_id, challenge, resource="https://evil.example/mcp")
    params = redirect_params(Browser(base, "alice").client.get(url))
    assert params["error"] == "invalid_target"
    assert params["state"] == "st-1"


def test_expired_token_is_refused(oauth_server: OAuthServer) -> None:
    issued = token_by_hand(oauth_server)
    assert ping_status(oauth_server, issued["access_token"]).status_code == 200
    oauth_server.shell(
        "import datetime, hashlib; from django.utils import timezone; "
        "from oauth2_provider.models import AccessToken; "
        f"AccessToken.objects.filter(token_checksum=hashlib.sha256({issued['access_token']!r}"
        ".encode()).hexdigest()).update(expires=timezone.now() - datetime.timedelta(seconds=1))"
    )
    refused = ping_status(oauth_server, issued["access_token"])
    assert refused.status_code == 401
    assert "expired" in refused.json()["error"]["message"]


def test_revoked_token_is_refused(oauth_server: OAuthServer) -> None:
    issued = token_by_hand(oauth_server)
    assert ping_status(oauth_server, issued["access_token"]).status_code == 200
    revoked = httpx2.post(
        f"{oauth_server.base}/oauth/revoke/",
        data={"token": issued["access_token"], "client_id": issued["client_id"]},
    )
    assert revoked.status_code == 200
    assert ping_status(oauth_server, issued["access_token"]).status_code == 401


def test_revocation_from_the_admin(oauth_server: OAuthServer) -> None:
    issued = token_by_hand(oauth_server)
    checksum = hashlib.sha256(issued["access_token"].encode()).hexdigest()
    pk = oauth_server.shell(
        "from oauth2_provider.models import AccessToken; "
        f"print(AccessToken.objects.get(token_checksum={checksum!r}).pk)"
    )
    oauth_server.shell(
        "from django.contrib.auth.models import User; "
        "User.objects.filter(username='alice').update(is_superuser=True)"
    )
    admin = Browser(oauth_server.base, "alice").client
    listing = admin.get("/admin/oauth2_provider/accesstoken/")
    assert listing.status_code == 200
    token = _hidden_fields(listing.text)["csrfmiddlewaretoken"]
    done = admin.post(
        "/admin/oauth2_provider/accesstoken/",
        data={"action": "revoke_tokens", "_selected_action": pk, "csrfmiddlewaretoken": token},
        headers={"referer": f"{oauth_server.base}/admin/oauth2_provider/accesstoken/"},
    )
    assert done.status_code == 302, done.text[:500]
    assert ping_status(oauth_server, issued["access_token"]).status_code == 401


def test_wrong_pkce_verifier_is_refused(oauth_server: OAuthServer) -> None:
    base = oauth_server.base
    client_id = register(base).json()["client_id"]
    _verifier, challenge = pkce()
    params = redirect_params(
        Browser(base, "alice").consent(authorization_url(base, client_id, challenge))
    )
    answer = exchange(base, client_id, params["code"], pkce()[0])
    assert answer.status_code == 400
    assert answer.json()["error"] == "invalid_grant"


@pytest.mark.parametrize("method", ["plain", ""])
def test_pkce_plain_or_no_method_is_refused(oauth_server: OAuthServer, method: str) -> None:
    base = oauth_server.base
    client_id = register(base).json()["client_id"]
    verifier, _challenge = pkce()
    url = authorization_url(base, client_id, verifier, code_challenge_method=method)
    if not method:
        url = url.replace("code_challenge_method=S256&", "")
    params = redirect_params(Browser(base, "alice").client.get(url))
    assert params["error"] == "invalid_request"
    assert "S256" in params["error_description"]


def test_no_pkce_is_refused(oauth_server: OAuthServer) -> None:
    base = oauth_server.base
    client_id = register(base).json()["client_id"]
    url = authorization_url(base, client_id, "", code_challenge_method="")
    params = redirect_params(Browser(base, "alice").client.get(url))
    assert params["error"] == "invalid_request"


def test_unregistered_redirect_uri_is_not_followed(oauth_server: OAuthServer) -> None:
    base = oauth_server.base
    client_id = register(base).json()["client_id"]
    _verifier, challenge = pkce()
    url = authorization_url(base, client_id, challenge).replace(
        "127.0.0.1%3A9%2Fcallback", "evil.example%2Fcallback"
    )
    answer = Browser(base, "alice").client.get(url)
    assert answer.status_code == 400
    assert "evil.example" not in answer.headers.get("location", "")


def test_consent_needs_a_signed_in_user_and_a_csrf_token(oauth_server: OAuthServer) -> None:
    base = oauth_server.base
    client_id = register(base).json()["client_id"]
    _verifier, challenge = pkce()
    url = authorization_url(base, client_id, challenge)
    anonymous = httpx2.get(url, follow_redirects=False)
    assert anonymous.status_code == 302
    assert anonymous.headers["location"].startswith("/admin/login/?next=")
    browser = Browser(base, "alice")
    form = _hidden_fields(browser.client.get(url).text)
    form.pop("csrfmiddlewaretoken")
    forged = browser.client.post(url, data={**form, "allow": "Allow"}, headers={"referer": url})
    assert forged.status_code == 403


@pytest.mark.parametrize(
    ("metadata", "problem"),
    [
        ({"redirect_uris": ["http://evil.example/cb"]}, "loopback"),
        ({"redirect_uris": []}, "redirect_uris"),
        ({"redirect_uris": ["https://ok.example/cb#x"]}, "fragment"),
        ({"grant_types": ["client_credentials"]}, "grant_types"),
        ({"response_types": ["token"]}, "response_types"),
        ({"token_endpoint_auth_method": "private_key_jwt"}, "token_endpoint_auth_method"),
        ({"scope": "admin"}, "scope"),
        ({"client_name": "x" * 101}, "client_name"),
    ],
)
def test_registration_is_strict(
    oauth_server: OAuthServer, metadata: dict[str, Any], problem: str
) -> None:
    answer = register(oauth_server.base, **metadata)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"] == "invalid_client_metadata"
    assert problem in answer.json()["error_description"]


def test_registration_ignores_metadata_it_does_not_know(oauth_server: OAuthServer) -> None:
    answer = register(oauth_server.base, application_type="native", jwks_uri="https://x.example/k")
    assert answer.status_code == 201, answer.text
    assert "jwks_uri" not in answer.json()
    assert answer.json()["token_endpoint_auth_method"] == "none"


def test_registration_body_size_is_limited(oauth_server: OAuthServer) -> None:
    answer = httpx2.post(
        f"{oauth_server.base}/oauth/register/",
        content=b'{"client_name": "' + b"x" * 9000 + b'"}',
        headers={"content-type": "application/json"},
    )
    assert answer.status_code == 413


def test_read_scoped_oauth_token_cannot_call_write_tools(oauth_server: OAuthServer) -> None:
    issued = token_by_hand(oauth_server, scope="read")
    url = f"{oauth_server.base}/mcp"
    served = call_tool_raw(url, "list_projects", {}, headers=bearer(issued["access_token"]))
    assert served.status_code == 200 and "error" not in served.json()
    refused = call_tool_raw(
        url, "create_project", {"name": "Nope"}, headers=bearer(issued["access_token"])
    )
    assert refused.status_code == 403
    assert 'error="insufficient_scope"' in refused.headers["www-authenticate"]
    assert refused.json()["error"]["data"]["required_scope"] == "write"


# --- the REST API's tokens on /mcp ------------------------------------------------------


def test_api_tokens_on_mcp_keep_their_scope(oauth_server: OAuthServer) -> None:
    url = f"{oauth_server.base}/mcp"
    read, write = oauth_server.api_tokens["read"], oauth_server.api_tokens["write"]
    listed = post(url, rpc("tools/list"), headers=bearer(read))
    assert listed.status_code == 200
    assert "create_project" in {tool["name"] for tool in listed.json()["result"]["tools"]}
    assert call_tool_raw(url, "list_projects", {}, headers=bearer(read)).status_code == 200
    refused = call_tool_raw(url, "create_project", {"name": "Read token"}, headers=bearer(read))
    assert refused.status_code == 403
    assert "scope 'read'" in refused.json()["error"]["message"]
    # In a batch, the refusal is that request's answer.
    batch = post(
        url,
        [rpc("tools/call", {"name": "create_project", "arguments": {"name": "Batched"}}, 7)],
        headers=bearer(read),
    )
    assert batch.json()[0]["error"]["data"]["required_scope"] == "write"
    created = call_tool_raw(url, "create_project", {"name": "Write token"}, headers=bearer(write))
    assert created.status_code == 200 and not created.json()["result"]["isError"]
    assert re.search(
        r"create_project.*as alice \(api-token: API token writer", oauth_server.server.log()
    )


def test_revoked_api_token_is_refused_on_mcp(oauth_server: OAuthServer) -> None:
    doomed = oauth_server.api_tokens["doomed"]
    assert ping_status(oauth_server, doomed).status_code == 200
    oauth_server.shell(
        "from research_site.tokens import api_token_revoke, api_token_get; "
        f"api_token_revoke(token=api_token_get(ref={doomed[:12]!r}))"
    )
    refused = ping_status(oauth_server, doomed)
    assert refused.status_code == 401
    assert "revoked" in refused.json()["error"]["message"]


def test_host_and_origin_rules_still_apply_to_valid_tokens(oauth_server: OAuthServer) -> None:
    issued = token_by_hand(oauth_server)
    url = f"{oauth_server.base}/mcp"
    for token in (issued["access_token"], oauth_server.api_tokens["write"]):
        evil_origin = post(
            url, rpc("ping"), headers={**bearer(token), "origin": "https://evil.example"}
        )
        assert evil_origin.status_code == 403
        evil_host = post(url, rpc("ping"), headers={**bearer(token), "host": "evil.example"})
        assert evil_host.status_code == 421


def test_shared_mcp_auth_token_is_the_service_identity(oauth_server: OAuthServer) -> None:
    answer = call_tool_raw(
        f"{oauth_server.base}/mcp", "list_projects", {}, headers=bearer(SERVICE_TOKEN)
    )
    assert answer.status_code == 200 and not answer.json()["result"]["isError"]
    assert re.search(r"tools/call list_projects .*ok in .* as service", oauth_server.server.log())


def test_denying_consent_answers_access_denied(oauth_server: OAuthServer) -> None:
    base = oauth_server.base
    client_id = register(base).json()["client_id"]
    _verifier, challenge = pkce()
    url = authorization_url(base, client_id, challenge)
    params = redirect_params(Browser(base, "bob").consent(url, allow=False))
    assert params["error"] == "access_denied"
    assert "code" not in params


def test_registrations_per_address_are_limited(knowledge_base: KnowledgeBase) -> None:
    # The counts are shared (Redis, or the knowledge base's cache folder): start from none.
    _manage_shell(
        knowledge_base,
        "from core import throttle; from research_site.oauth import REGISTRATION_SCOPE; "
        "throttle.clear(REGISTRATION_SCOPE, [throttle.address_key('127.0.0.1')])",
    )
    env = {**NO_LOCKOUT, "OAUTH_ENABLED": "true", "OAUTH_REGISTRATION_LIMIT": "2"}
    with running_server(knowledge_base, env=env) as server:
        answers = [register(server.base_url).status_code for _ in range(3)]
        limited = register(server.base_url)
    assert answers == [201, 201, 429]
    assert limited.status_code == 429
    assert int(limited.headers["retry-after"]) > 0
    assert "OAUTH_REGISTRATION_LIMIT" in limited.json()["error_description"]


def test_read_only_server_checks_tokens_but_issues_none(oauth_server: OAuthServer) -> None:
    env = {
        **NO_LOCKOUT,
        "OAUTH_ENABLED": "true",
        "MCP_READ_ONLY": "true",
        "MCP_LOOPBACK_OWNER": "false",
    }
    with running_server(oauth_server.kb, env=env) as server:
        registered = register(server.base_url)
        token = httpx2.post(f"{server.base_url}/oauth/token/", data={"grant_type": "x"})
        authorize = httpx2.get(f"{server.base_url}/oauth/authorize/?client_id=x")
        read = post(
            f"{server.base_url}/mcp", rpc("ping"), headers=bearer(oauth_server.api_tokens["read"])
        )
        anonymous = post(f"{server.base_url}/mcp", rpc("ping"))
    assert registered.status_code == token.status_code == authorize.status_code == 503
    assert registered.json()["error"] == "temporarily_unavailable"
    assert read.status_code == 200
    assert anonymous.status_code == 401


def test_refused_oauth_and_api_tokens_count_towards_the_lockout(
    oauth_server: OAuthServer,
) -> None:
    api_token = oauth_server.api_tokens["write"]
    _manage_shell(
        oauth_server.kb,
        "from core import throttle; from mcp_endpoint.http import MCP_TOKEN_SCOPE; "
        "throttle.clear(MCP_TOKEN_SCOPE, [throttle.address_key('127.0.0.1')])",
    )
    env = {"OAUTH_ENABLED": "true", "AUTH_FAILURE_LIMIT": "3"}
    with running_server(oauth_server.kb, env=env) as server:
        url = f"{server.base_url}/mcp"
        before = post(url, rpc("ping"), headers=bearer(api_token)).status_code
        refused = [
            post(url, rpc("ping"), headers=bearer(secret)).status_code
            for secret in ("not-an-oauth-token", "rmcp_not-an-api-token", "also-wrong")
        ]
        after = post(url, rpc("ping"), headers=bearer(api_token))
    assert before == 200
    assert refused == [401, 401, 401]
    # The right token included, as for MCP_AUTH_TOKEN and the REST API.
    assert after.status_code == 429
    assert int(after.headers["retry-after"]) > 0
