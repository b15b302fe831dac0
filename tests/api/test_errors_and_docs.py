"""The error mapping (one JSON body for every status, no traceback on 500), the OpenAPI
schema and the docs page, which must work without network access."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client

from core.errors import EngineUnavailable
from papers import assets
from papers import selectors as paper_selectors
from papers.assets import AssetFetchFailed, AssetParseFailed
from papers.search import semantic
from tests.api.conftest import Api, Library, error

pytestmark = pytest.mark.django_db


def test_unexpected_failure_is_500_with_an_incident_id_and_no_traceback(
    api: Api, library: Library, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(**kwargs: Any) -> Any:
        raise RuntimeError("secret internal detail /srv/db")

    monkeypatch.setattr(paper_selectors, "paper_detail", broken)
    response = api.get(f"/api/papers/{library.attention.pk}")
    body = error(response, 500)
    assert body["code"] == "internal_error"
    assert re.fullmatch(r"[0-9a-f]{12}", body["incident"])
    assert body["incident"] in body["message"]
    text = response.content.decode()
    assert "Traceback" not in text and "secret internal detail" not in text
    logged = [r for r in caplog.records if body["incident"] in r.getMessage()]
    assert logged and logged[0].exc_info is not None  # the traceback stays in the log


def test_engine_unavailable_is_503(
    api: Api, library: Library, monkeypatch: pytest.MonkeyPatch
) -> None:
    def down(**kwargs: Any) -> Any:
        raise EngineUnavailable("The embedding model is not loaded.", engine="semantic")

    monkeypatch.setattr(semantic, "semantic_search", down)
    body = error(api.get("/api/search/semantic", {"query": "x"}), 503)
    assert body == {
        "code": "engine_unavailable",
        "message": "The embedding model is not loaded.",
        "engine": "semantic",
    }


def test_asset_errors_are_502_and_500_with_their_codes(
    api: Api, library: Library, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = f"/api/papers/{library.attention.pk}/summary"

    def unreachable(**kwargs: Any) -> Any:
        raise AssetFetchFailed("The asset store did not answer.", paper_id=1)

    monkeypatch.setattr(assets, "summary_get", unreachable)
    assert error(api.get(path), 502)["code"] == "asset_fetch_failed"

    def unreadable(**kwargs: Any) -> Any:
        raise AssetParseFailed("The stored summary is not JSON.", paper_id=1)

    monkeypatch.setattr(assets, "summary_get", unreadable)
    body = error(api.get(path), 500)
    assert body["code"] == "asset_parse_failed" and "incident" not in body


def test_text_no_database_can_hold_is_400_naming_the_field(api: Api, library: Library) -> None:
    # Found by schemathesis on PostgreSQL, which refuses NUL characters in text (a 500).
    in_query = error(api.get("/api/search/payload", {"author": "Vas\x00wani"}), 400)
    assert (in_query["code"], in_query["field"]) == ("invalid_input", "author")
    assert error(api.get("/api/papers/vas%00wani"), 400)["field"] == "ref"
    # A lone surrogate ("\\ud800" in JSON) cannot be encoded: pydantic refuses it in typed
    # fields, the check refuses it in free-form JSON such as a summary.
    body = '{"content": {"tldr": "\\ud800"}}'
    lone_surrogate = api.client.put(
        f"/api/papers/{library.attention.pk}/summaries/brief", body,
        content_type="application/json", headers={"Authorization": f"Bearer {api.token}"},
    )  # fmt: skip
    assert error(lone_surrogate, 400)["field"] == "content.tldr"
    summary = {"content": {"key\x00": "value"}}
    path = f"/api/papers/{library.attention.pk}/summaries/brief"
    assert error(api.put(path, summary), 400)["field"] == "content.key\x00"


def test_body_over_the_upload_limit_is_413(api: Api, library: Library, settings: Any) -> None:
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    big = {"content": {"text": "x" * 2000}}
    body = error(api.put(f"/api/papers/{library.attention.pk}/summaries/big", big), 413)
    assert body["code"] == "payload_too_large"


def test_unknown_path_under_api_is_a_json_404(api: Api) -> None:
    assert error(api.get("/api/nothing/here"), 404)["code"] == "not_found"


def test_wrong_method_is_405_with_allow_header(api: Api) -> None:
    response = api.client.patch("/api/projects", headers={"Authorization": f"Bearer {api.token}"})
    assert response.status_code == 405
    assert set(response["Allow"].split(", ")) == {"GET", "POST"}


def test_openapi_schema_lists_every_endpoint_with_bearer_auth(anonymous: Api) -> None:
    schema = anonymous.get("/api/openapi.json").json()
    operations = {
        op["operationId"]: (method.upper(), path)
        for path, methods in schema["paths"].items()
        for method, op in methods.items()
    }
    assert {
        "get_paper_details", "get_paper_metadata", "export_paper_bibtex", "export_papers",
        "export_search_results", "manage_paper_keywords", "add_paper_keywords",
        "set_paper_keywords", "remove_paper_keyword", "get_paper_summary", "save_paper_summary",
        "get_paper_source", "search_library", "search_papers_by_keyword",
        "search_papers_by_payload", "search_papers_semantic", "list_top_facets",
        "search_library_by_author", "create_project", "list_projects", "get_project",
        "list_project_papers", "add_project_papers", "remove_project_papers",
        "remove_project_paper",
    } <= set(operations)  # fmt: skip
    assert schema["components"]["securitySchemes"]["BearerToken"]["scheme"] == "bearer"
    for path, methods in schema["paths"].items():
        for op in methods.values():
            if path != "/api/":
                assert {"BearerToken": []} in op["security"], path
                assert "400" in op["responses"] and "401" in op["responses"], path
    query = schema["paths"]["/api/search"]["get"]["parameters"]
    limits = {p["name"]: p["schema"] for p in query}
    assert limits["query"]["maxLength"] == 4000  # a pasted abstract (docs/SEARCH.md)
    assert limits["max_results"]["maximum"] == 100
    assert limits["offset"]["maximum"] == 10_000


def test_docs_page_loads_only_local_assets(client: Client) -> None:
    page = client.get("/api/docs")
    assert page.status_code == 200
    html = page.content.decode()
    assert "http://" not in html and "https://" not in html and "//cdn" not in html
    sources = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert sources and all(s.startswith("/api/docs/assets/") for s in sources)
    for source in sources:
        asset = client.get(source)
        assert asset.status_code == 200, source
        assert b"".join(asset.streaming_content)  # type: ignore[attr-defined]
    assert client.get("/api/docs/assets/secret.py").status_code == 404
    assert client.get("/api/docs/assets/..%2Fmain.py").status_code == 404
