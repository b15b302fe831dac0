"""/api/search: full text with filters, dates, project and rerank; keyword, payload,
semantic, facets and author search; the limits."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.conftest import Api, Library, error

pytestmark = pytest.mark.django_db


def titles(response: Any) -> list[str]:
    assert response.status_code == 200, response.content
    return [result["title"] for result in response.json()["results"]]


def test_full_text_search_ranks_hits_with_snippets(api: Api, library: Library) -> None:
    response = api.get("/api/search", {"query": "attention mechanisms"})
    page = response.json()
    assert titles(response)[0] == "Attention Is All You Need"
    first = page["results"][0]
    assert first["paper_id"] == library.attention.pk
    assert first["engine"] == "local"
    assert "**" in first["snippet_markdown"]
    assert page["mode"] == "fulltext"
    assert page["query"] == "attention mechanisms"


def test_full_text_search_with_filters_dates_and_project(api: Api, library: Library) -> None:
    assert set(titles(api.get("/api/search", {"query": "transformers"}))) == {
        library.attention.title, library.bert.title,
    }  # fmt: skip
    narrowed = api.get("/api/search", {"query": "transformers", "date_from": "2018-01-01"})
    assert titles(narrowed) == [library.bert.title]
    by_venue = api.get("/api/search", {"query": "transformers", "venue": "NAACL"})
    assert titles(by_venue) == [library.bert.title]
    assert by_venue.json()["filters"] == {"venue": "NAACL"}
    in_project = api.get("/api/search", {"query": "deep", "project_id": "Transformers"})
    assert titles(in_project) == [library.bert.title]
    assert in_project.json()["filters"] == {"project": "transformers"}


def test_full_text_search_pages(api: Api, library: Library) -> None:
    first = api.get("/api/search", {"query": "transformers", "max_results": 1}).json()
    assert first["has_more"] and first["next_offset"] == 1 and first["limit"] == 1
    second = api.get("/api/search", {"query": "transformers", "max_results": 1, "offset": 1})
    assert second.json()["offset"] == 1
    assert titles(second) != [r["title"] for r in first["results"]]


def test_reranked_search_is_hybrid(api: Api, library: Library) -> None:
    response = api.get("/api/search", {"query": "models that skip recurrence", "rerank": "true"})
    assert response.json()["mode"] == "hybrid"
    assert library.attention.title in titles(response)


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"query": "q" * 4001}, "query"),
        ({"query": ""}, "query"),
        ({}, "query"),
        ({"query": "x", "max_results": 101}, "max_results"),
        ({"query": "x", "max_results": 0}, "max_results"),
        ({"query": "x", "offset": 10_001}, "offset"),
        ({"query": "x", "offset": -1}, "offset"),
        ({"query": "x", "date_from": "yesterday"}, "date_from"),
        ({"query": "x", "venue": "v" * 501}, "venue"),
        ({"query": "x", "has_pdf": "perhaps"}, "has_pdf"),
    ],
)
def test_search_limits_are_400_naming_the_parameter(
    api: Api, params: dict[str, Any], field: str
) -> None:
    body = error(api.get("/api/search", params), 400)
    assert body["code"] == "invalid_input"
    assert [e["field"] for e in body["errors"]] == [field]
    assert body["errors"][0]["in"] == "query"


def test_search_input_refused_by_the_selectors_is_400(api: Api, library: Library) -> None:
    dangling = error(api.get("/api/search", {"query": "bleu AND"}), 400)
    assert dangling["code"] == "invalid_input" and "bleu AND meteor" in dangling["hint"]
    # An unclosed quote is not refused: the words are searched, with a note.
    unclosed = api.get("/api/search", {"query": '"unclosed phrase'})
    assert unclosed.status_code == 200
    assert unclosed.json()["notes"] == ["query: an unpaired double quote was ignored"]
    reversed_range = error(api.get("/api/search", {"query": "x", "year": "2020-2010"}), 400)
    assert reversed_range["code"] == "invalid_input"
    dates = {"query": "x", "date_from": "2020", "date_to": "2019"}
    assert error(api.get("/api/search", dates), 400)["field"] == "date_from"
    assert error(api.get("/api/search", {"query": "x", "project_id": "nope"}), 404)


def test_keyword_search_exact_and_prefix(api: Api, library: Library) -> None:
    exact = api.get("/api/search/keyword", {"keyword": "Transformers"})
    assert set(titles(exact)) == {library.attention.title, library.bert.title}
    assert exact.json()["mode"] == "keyword"
    assert titles(api.get("/api/search/keyword", {"keyword": "transform"})) == []
    prefix = api.get("/api/search/keyword", {"keyword": "pretrain", "match": "prefix"})
    assert titles(prefix) == [library.bert.title]
    assert titles(api.get("/api/search/keyword", {"keyword": "cs.CL"})) == [library.bert.title]
    assert error(api.get("/api/search/keyword", {"keyword": "x", "match": "fuzzy"}), 400)
    assert error(api.get("/api/search/keyword", {"keyword": "k" * 101}), 400)


def test_payload_search_with_globs_and_pages(api: Api, library: Library) -> None:
    found = api.get("/api/search/payload", {"venue": "Advances*"})
    assert titles(found) == [library.attention.title]
    assert found.json()["mode"] == "payload"
    newest_first = api.get("/api/search/payload", {"year": "2015-2020"})
    assert titles(newest_first) == [library.bert.title, library.attention.title,
                                    library.resnet.title]  # fmt: skip
    page = api.get("/api/search/payload", {"year": "2015-2020", "limit": 1, "offset": 2})
    assert titles(page) == [library.resnet.title]
    assert titles(api.get("/api/search/payload", {"author": "Devlin", "has_pdf": "false"})) == [
        library.bert.title
    ]
    none = error(api.get("/api/search/payload"), 400)
    assert "at least one filter" in none["message"]
    assert error(api.get("/api/search/payload", {"year": "soon"}), 400)
    assert titles(api.get("/api/search/payload", {"project": "nope"})) == []  # as over MCP


def test_semantic_search_finds_by_meaning(api: Api, library: Library) -> None:
    response = api.get(
        "/api/search/semantic",
        {"query": "convolutional networks for recognising images", "top_k": 3},
    )
    assert titles(response)[0] == library.resnet.title
    assert response.json()["mode"] == "semantic"
    filtered = api.get("/api/search/semantic", {"query": "images", "source": "acl"})
    assert titles(filtered) == [library.bert.title]
    assert error(api.get("/api/search/semantic", {"query": "x", "top_k": 101}), 400)
    assert error(api.get("/api/search/semantic", {"query": "x", "prompt": "p" * 2001}), 400)


def test_facets_count_papers_and_give_filters(api: Api, library: Library) -> None:
    keywords = api.get("/api/search/facets/keyword").json()
    assert keywords["category"] == "keyword"
    top = keywords["values"][0]
    assert (top["name"], top["paper_count"]) == ("transformers", 2)
    again = api.get("/api/search/payload", top["filter"])
    assert set(titles(again)) == {library.attention.title, library.bert.title}
    over_query = api.get("/api/search/facets/venue", {"query": "residual", "limit": 5}).json()
    assert [v["name"] for v in over_query["values"]] == ["CVPR"]
    assert over_query["papers_considered"] == 1
    assert error(api.get("/api/search/facets/colour"), 400)["errors"][0]["field"] == "category"
    assert error(api.get("/api/search/facets/year", {"limit": 101}), 400)


def test_author_search_by_name_forms_and_dates(api: Api, library: Library) -> None:
    for name in ("Ashish Vaswani", "Vaswani, Ashish", "A. Vaswani", "Ash Vaswani", "vasw*"):
        response = api.get("/api/search/author", {"author_name": name})
        assert titles(response) == [library.attention.title], name
    assert response.json()["filters"] == {"author": "vasw*"}
    # A short given name finds the author only when nobody has the name as written.
    assert titles(api.get("/api/search/author", {"author_name": "Ashley Vaswani"})) == []
    assert titles(api.get("/api/search/author", {"author_name": "Vaswani",
                                                 "date_from": "2018"})) == []  # fmt: skip
    assert error(api.get("/api/search/author", {"author_name": "n" * 201}), 400)
    assert error(api.get("/api/search/author", {"author_name": "x", "max_results": 500}), 400)
