"""/api/engines: the engine listing, multi-engine search merged into the library, add_paper
and citing papers, with a plugin engine calling a local server; scopes and read-only."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engines.registry import registry
from papers.models import Citation, Paper
from tests.api.conftest import Api, Library, error
from tests.engines.plugins import write_plugin
from tests.engines.replay import ReplayServer, Reply

REFORMER = {"title": "Reformer: The Efficient Transformer", "authors": ["Nikita Kitaev"],
            "year": 2020, "arxiv_id": "2001.04451"}  # fmt: skip
ATTENTION_AGAIN = {"title": "Attention is all you need", "authors": ["A Vaswani"],
                   "year": 2017, "doi": "10.5555/3295222.3295349"}  # fmt: skip


@pytest.fixture
def fake_engine(settings: Any, tmp_path: Path, replay_server: ReplayServer) -> Iterator[str]:
    settings.ENGINES_DIR = tmp_path / "engines"
    settings.ENGINES_ENABLED = ["fake_rest"]
    settings.CELERY_TASK_ALWAYS_EAGER = True  # a worker would not see this folder
    write_plugin(settings.ENGINES_DIR, "fake_rest", replay_server.url)
    replay_server.add("/search", Reply(200, [ATTENTION_AGAIN, REFORMER]))
    replay_server.add("/citing", Reply(200, [REFORMER]))
    registry.refresh()
    yield "fake_rest"
    registry.refresh()


def test_engines_are_listed_with_the_library_first(api: Api, fake_engine: str) -> None:
    response = api.get("/api/engines")
    assert response.status_code == 200
    ids = [engine["id"] for engine in response.json()["engines"]]
    assert ids == ["local", fake_engine]


def test_search_merges_engine_results_into_the_library(
    api: Api, library: Library, fake_engine: str
) -> None:
    before = Paper.objects.count()
    response = api.post(
        "/api/engines/search",
        {"query": "attention", "engines": ["local", fake_engine], "project_id": "Transformers"},
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["engines"]["local"]["status"] == "ok"
    assert body["engines"][fake_engine]["status"] == "ok"
    assert body["saved"] == 1 and Paper.objects.count() == before + 1
    attention = next(r for r in body["results"] if r["paper_id"] == library.attention.pk)
    assert attention["engines"] == ["local", fake_engine]
    reformer = Paper.objects.get(arxiv_id="2001.04451")
    assert list(reformer.projects.values_list("id", flat=True)) == [library.project.id]


def test_citing_papers_are_saved_with_the_citation(
    api: Api, library: Library, fake_engine: str
) -> None:
    response = api.post(
        "/api/engines/citing", {"paper_id": library.attention.pk, "engines": [fake_engine]}
    )
    assert response.status_code == 200, response.content
    titles = [entry["title"] for entry in response.json()["results"]]
    assert titles == [REFORMER["title"]]
    assert Citation.objects.filter(cited=library.attention).count() == 1


def test_add_paper_returns_a_known_paper_without_duplicating_it(api: Api, library: Library) -> None:
    response = api.post("/api/engines/add-paper", {"identifier": "doi:10.5555/3295222.3295349"})
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["created"] is False and body["paper"]["paper_id"] == library.attention.pk
    bad = api.post("/api/engines/add-paper", {"identifier": "no idea"})
    assert "DOI" in error(bad, 400)["message"]


def test_engine_searches_need_write_scope(api: Api, read_token: str, fake_engine: str) -> None:
    refused = api.post("/api/engines/search", {"query": "x"}, token=read_token)
    assert error(refused, 403)["code"] == "insufficient_scope"
    assert api.get("/api/engines", token=read_token).status_code == 200


def test_unknown_project_and_bad_limits_are_client_errors(api: Api, fake_engine: str) -> None:
    unknown = api.post("/api/engines/search", {"query": "x", "project_id": "nope"})
    assert error(unknown, 404)["code"] == "not_found"
    too_many = api.post("/api/engines/search", {"query": "x", "max_results": 101})
    error(too_many, 400)


def test_mcp_and_rest_answer_the_same_engine_search(
    api: Api, library: Library, fake_engine: str, transactional_db: None
) -> None:
    """One service behind both: the same arguments (filters included) give the same page.
    (The tool closes its thread's old connections, as over /mcp: a transactional test.)"""
    import json

    from mcp_endpoint.registry import build_registry

    arguments = {
        "query": "attention", "engines": ["local", fake_engine], "max_results": 5,
        "filters": {"year_from": 2015},
    }  # fmt: skip
    first = api.post("/api/engines/search", arguments)  # saves what the engine found
    assert first.status_code == 200, first.content
    tool = build_registry(toolsets=["search"]).tools["search_papers"].fn
    mcp_arguments = {key: value for key, value in arguments.items() if key != "max_results"}
    over_mcp = tool(**mcp_arguments, limit=arguments["max_results"])
    assert not over_mcp.is_error, over_mcp.content
    mcp_page = json.loads(over_mcp.content[0].text)
    rest_page = api.post("/api/engines/search", arguments).json()

    def shape(page: dict[str, Any]) -> dict[str, Any]:
        return {
            "results": [(r["paper_id"], r["title"], r["engines"]) for r in page["results"]],
            "engines": {name: s["status"] for name, s in page["engines"].items()},
            **{key: page.get(key) for key in ("total", "saved", "has_more", "filters", "notes")},
        }

    assert shape(mcp_page) == shape(rest_page)
    assert rest_page["filters"] == {"year_from": 2015}
    assert [r["title"] for r in rest_page["results"]][:2] == [
        "Attention Is All You Need", REFORMER["title"],
    ]  # fmt: skip
