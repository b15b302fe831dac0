"""OpenAlex, Semantic Scholar and Crossref as a local server serving the snowballing
fixtures (tests/fixtures/snowball, see SOURCE.txt): each source's reference lookups, and
the batch fetches that follow them, answered from one small citation graph."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

from tests.engines.replay import ReplayServer, Reply, Request

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "snowball"
SOURCES = ("openalex", "semantic_scholar", "crossref")


def load(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


def graph() -> dict[str, dict[str, Any]]:
    return load("graph.json")


def segment(value: str) -> str:
    """An identifier as the engines put it in a path (engines.http.path_segment)."""
    return quote(value, safe=":;()@")


def serve_sources(server: ReplayServer) -> dict[str, str]:
    """Routes for the three sources under /openalex, /s2 and /crossref; returns the
    settings pointing the engines at them."""
    openalex = load("openalex_works.json")["works"]
    by_id = {work["id"].rsplit("/", 1)[-1]: work for work in openalex}
    for work_id, work in by_id.items():
        server.add(f"/openalex/works/{work_id}", Reply(200, work))
        doi = work["doi"].removeprefix("https://doi.org/")
        server.add(f"/openalex/works/doi:{segment(doi)}", Reply(200, work))

    def openalex_list(request: Request) -> Reply:
        wanted = request.query["filter"][0].removeprefix("openalex:").split("|")
        results = [by_id[w] for w in wanted if w in by_id]
        return Reply(200, {"meta": {"count": len(results), "page": 1}, "results": results})

    server.add("/openalex/works", openalex_list)

    for key, answer in load("s2_references.json").items():
        server.add(f"/s2/graph/v1/paper/{segment(key)}/references", Reply(200, answer))

    crossref = {work["DOI"]: work for work in load("crossref_works.json")["works"]}
    for doi, work in crossref.items():
        envelope = {"status": "ok", "message-type": "work", "message": work}
        server.add(f"/crossref/works/{segment(doi)}", Reply(200, envelope))

    def crossref_list(request: Request) -> Reply:
        dois = [part.removeprefix("doi:") for part in request.query["filter"][0].split(",")]
        items = [crossref[doi] for doi in dois if doi in crossref]
        message = {"total-results": len(items), "items": items}
        return Reply(200, {"status": "ok", "message-type": "work-list", "message": message})

    server.add("/crossref/works", crossref_list)
    return {
        "OPENALEX_API_URL": f"{server.url}/openalex",
        "SEMANTIC_SCHOLAR_API_URL": f"{server.url}/s2",
        "CROSSREF_API_URL": f"{server.url}/crossref",
    }


def seed_records() -> list[dict[str, Any]]:
    """The two seed papers as a library would hold them (S1 with its OpenAlex and S2 ids,
    S2 with its OpenAlex id only), for PaperRecord.build."""
    works = graph()
    records = []
    for name in ("S1", "S2"):
        work = works[name]
        identifiers = {"openalex": work["oa"]}
        if work["s2"]:
            identifiers["s2"] = work["s2"]
        records.append(
            {
                "title": work["title"], "authors": [work["author"]], "year": work["year"],
                "doi": work["doi"], "identifiers": identifiers, "citation_count": work["cites"],
            }
        )  # fmt: skip
    return records
