"""One ranking for every interface that searches the library, and long queries, through
the real server: the same query and filters give the same papers in the same order over
MCP (`search_papers` with the SDK client), REST `/api/search`, the admin's Paper list
(its checkboxes and its results' titles),
autocomplete, library picker and project page, the review's search step, a saved search's
run and `list_top_facets` over the query. The library (the 300-paper ACL sample) has
vectors, so natural-language questions are ranked hybrid.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from tests.mcp.conftest import (
    PYTHON,
    ROOT,
    KnowledgeBase,
    LiveServer,
    base_env,
    mcp_client,
    running_server,
    server_database,
    tool_data,
)

pytestmark = pytest.mark.anyio

SCRIPT = Path(__file__).with_name("ranking_library.py")
SAMPLE = ROOT / "tests" / "fixtures" / "acl" / "acl_sample300.jsonl"
TOP_K = 10
FILTER = {"year": "1957-2018"}  # drops the 1952 and 1956 papers, keeps both eras
QUERIES = [
    "machine translation",
    "word embeddings",
    "neural summarization evaluation",
    "how can computers translate between languages",
    "dialogue response generation",
    "emotion classification",
    "bilingual lexicon induction without parallel data",
    "image captioning",
    "text classification with hierarchical categories",
    "problems of mechanical translation",
    "sentiment of tweets",
    "adversarial training",
    "question answering over documents",
    "conversational models with external knowledge",
    "topic modeling",
    "semantic similarity of words",
    "translation -machine",
    '"word embeddings" subwords',
    "summar*",
    "(bleu OR rouge) evaluation",
]


@pytest.fixture(scope="module")
def ranking_library(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KnowledgeBase]:
    directory = tmp_path_factory.mktemp("ranking-library")
    with server_database("ranking") as database_url:
        env = base_env(directory, database_url)
        seeded = _script(env, "seed")
        embedded = subprocess.run(
            [PYTHON, "manage.py", "reindex_embeddings", "--no-progress"], env=env, cwd=ROOT,
            capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
        assert embedded.returncode == 0, embedded.stderr
        yield KnowledgeBase(directory, env, seeded)


@pytest.fixture(scope="module")
def ranking_server(ranking_library: KnowledgeBase) -> Iterator[LiveServer]:
    with running_server(ranking_library) as server:
        yield server


def _script(env: dict[str, str], mode: str, given: Any = None) -> Any:
    ran = subprocess.run(
        [PYTHON, str(SCRIPT), mode], env=env, cwd=ROOT, capture_output=True, text=True,
        input=json.dumps(given) if given is not None else None, timeout=600, check=False,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    return json.loads(ran.stdout.strip().splitlines()[-1])


async def _search(server: LiveServer, query: str, **arguments: Any) -> dict[str, Any]:
    async with mcp_client(server.mcp_url) as client:
        result = await client.call_tool(
            "search_papers", {"query": query, "engines": "local", **arguments}
        )
    page = tool_data(result)
    assert page is not None, result
    return page


def _ids(page: dict[str, Any]) -> list[int]:
    return [hit["paper_id"] for hit in page["results"]]


def _rest(server: LiveServer, token: str, query: str, filters: dict[str, str]) -> list[int]:
    response = httpx2.get(
        f"{server.base_url}/api/search",
        params={"query": query, "max_results": TOP_K, **filters},
        headers={"authorization": f"Bearer {token}"},
        timeout=30,
    )
    assert response.status_code == 200, response.text
    return [hit["paper_id"] for hit in response.json()["results"]]


async def _all_years(server: LiveServer, query: str, filters: dict[str, str]) -> Counter[str]:
    """The years of every paper search_papers finds, page after page."""
    years: Counter[str] = Counter()
    offset = 0
    while True:
        page = await _search(server, query, filters=filters, max_results=100, offset=offset)
        years.update(str(hit["year"]) for hit in page["results"])
        if not page["has_more"]:
            return years
        offset += 100


async def test_every_interface_ranks_a_query_the_same(
    ranking_server: LiveServer, ranking_library: KnowledgeBase
) -> None:
    project = ranking_library.data["project"]
    token = ranking_library.data["token"]
    requests = [{"query": q, "filters": f} for q in QUERIES for f in ({}, FILTER)]
    probed = _script(ranking_library.env, "probe", requests)
    async with mcp_client(ranking_server.mcp_url) as client:
        project_ids = set()
        for offset in (0, 100):
            listed = tool_data(
                await client.call_tool(
                    "search_papers_by_payload",
                    {"payload": {"project": project}, "limit": 100, "offset": offset},
                )
            )
            project_ids |= {hit["paper_id"] for hit in listed["results"]}
    assert len(project_ids) == 20
    modes = Counter()
    for request, shown in zip(requests, probed, strict=True):
        query, filters = request["query"], request["filters"]
        label = f"{query!r} {filters}"
        deep = await _search(ranking_server, query, filters=filters, max_results=50)
        modes[deep["engines"]["local"]["mode"]] += 1
        expected = _ids(deep)[:TOP_K]
        assert expected, label
        outside_project = [pk for pk in _ids(deep) if pk not in project_ids][:TOP_K]
        in_project = await _search(
            ranking_server, query, filters={**filters, "project": project}, max_results=TOP_K
        )
        assert _rest(ranking_server, token, query, filters) == expected, label
        assert shown["admin"][:TOP_K] == expected, label
        # The results list shows that order: each row's title, to its reading page.
        assert shown["admin_titles"] == shown["admin"], label
        assert shown["picker"][:TOP_K] == outside_project, label
        assert shown["project"][:TOP_K] == _ids(in_project), label
        if "autocomplete" in shown:
            assert shown["autocomplete"][:TOP_K] == expected, label
        assert shown["review"] == expected, label
        assert shown["saved_search"] == expected, label
        async with mcp_client(ranking_server.mcp_url) as client:
            facets = tool_data(
                await client.call_tool(
                    "list_top_facets",
                    {"category": "year", "query": query, "filters": filters, "limit": 100},
                )
            )
        counted = Counter({value["name"]: value["paper_count"] for value in facets["values"]})
        assert counted == await _all_years(ranking_server, query, filters), label
    # Natural-language questions are ranked hybrid; the query language, by full text.
    assert modes["hybrid"] >= 30 and modes["fulltext"] >= 6, modes


async def test_a_pasted_abstract_finds_its_paper_first(
    ranking_server: LiveServer, ranking_library: KnowledgeBase
) -> None:
    records = [json.loads(line) for line in SAMPLE.read_text().splitlines()]
    long_ones = [r for r in records if r["abstract"] and len(r["abstract"]) > 700][:5]
    assert len(long_ones) == 5
    for record in long_ones:
        # Pasted as an agent would paste it: quotes, parentheses and hyphens included.
        text = f'{record["abstract"]} (see "{record["title"]}" - NOT a survey)'
        assert len(text) > 500
        page = await _search(ranking_server, text)
        assert page["results"][0]["paper_id"] == ranking_library.data["papers"][record["id"]]
    padded = (long_ones[0]["abstract"] + " ") * (4000 // len(long_ones[0]["abstract"]))
    assert 3000 < len(padded[:4000]) <= 4000
    page = await _search(ranking_server, padded[:4000])
    assert page["results"][0]["paper_id"] == ranking_library.data["papers"][long_ones[0]["id"]]


# --- facets --------------------------------------------------------------------------------


async def _facets(server: LiveServer, **arguments: Any) -> dict[str, Any]:
    async with mcp_client(server.mcp_url) as client:
        page = tool_data(await client.call_tool("list_top_facets", arguments))
    assert page is not None
    return page


async def test_facet_arguments_are_described(ranking_server: LiveServer) -> None:
    async with mcp_client(ranking_server.mcp_url) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    properties = tools["list_top_facets"].input_schema["properties"]
    assert "capped" in properties["query"]["description"]
    assert properties["by_year"]["type"] == "boolean"
    assert "venue_short" in properties["category"]["enum"]


async def test_short_venues_count_every_edition_of_a_series_year_by_year(
    ranking_server: LiveServer,
) -> None:
    records = [json.loads(line) for line in SAMPLE.read_text().splitlines()]
    expected: dict[str, Counter[str]] = {}
    for record in records:
        expected.setdefault(record["venue_ids"][0], Counter())[str(record["year"])] += 1
    assert len({r["venue"] for r in records}) > len(expected)  # several editions per series
    page = await _facets(ranking_server, category="venue_short", by_year=True)
    # The library counts, not the file (an import may merge records of one paper).
    by_name = {value["name"]: value for value in page["values"]}
    assert set(by_name) == {"emnlp", "earlymt"}
    assert by_name["emnlp"]["by_year"] == {"2018": 150}
    counts = [value["paper_count"] for value in page["values"]]
    assert counts == sorted(counts, reverse=True)
    for value in page["values"]:
        assert sum(value["by_year"].values()) == value["paper_count"]
        assert set(value["by_year"]) == set(expected[value["name"]])
        async with mcp_client(ranking_server.mcp_url) as client:
            listed = tool_data(
                await client.call_tool(
                    "search_papers_by_payload", {"payload": value["filter"], "limit": 1}
                )
            )
        assert listed["total"] == value["paper_count"]
    plain = await _facets(ranking_server, category="venue_short")
    assert all("by_year" not in value for value in plain["values"])


async def test_a_capped_count_says_so(ranking_library: KnowledgeBase) -> None:
    with running_server(ranking_library, env={"FACETS_QUERY_CAP": "20"}) as server:
        capped = await _facets(server, category="year", query="translation")
        matching = (await _search(server, "translation", max_results=1))["total"]
        whole = await _facets(server, category="year", query='"bilingual lexicon"')
    assert matching > 20
    assert capped["papers_considered"] == 20
    assert sum(value["paper_count"] for value in capped["values"]) == 20
    assert capped["notes"] == [
        f"Capped: the query matches about {matching:,} papers; counts are over its 20 "
        "best-ranked (the cap)."
    ]
    assert whole["notes"] == [
        f"Counts are over the {whole['papers_considered']} papers matching the query."
    ]


# --- behaviours a planted change must break ------------------------------------------------


async def _found(server: LiveServer, query: str, **arguments: Any) -> list[dict[str, Any]]:
    """Every hit of a search, page after page."""
    hits: list[dict[str, Any]] = []
    while True:
        page = await _search(server, query, max_results=100, offset=len(hits), **arguments)
        hits += page["results"]
        if not page["has_more"]:
            return hits


async def test_an_exclusion_holds_beside_operators(ranking_server: LiveServer) -> None:
    either = {
        hit["paper_id"] for hit in await _found(ranking_server, "(translation OR summarization)")
    }
    neural = {hit["paper_id"] for hit in await _found(ranking_server, '"neural"')}
    assert either & neural and either - neural  # the exclusion has something to remove
    for query in ("(translation OR summarization) -neural", "translation OR summarization -neural"):
        found = {hit["paper_id"] for hit in await _found(ranking_server, query)}
        assert found == either - neural, query


async def test_a_year_range_includes_both_ends(ranking_server: LiveServer) -> None:
    years = await _facets(ranking_server, category="year", limit=100)
    per_year = {int(value["name"]): value["paper_count"] for value in years["values"]}
    assert per_year[1957] and per_year[1960] and 1958 not in per_year  # ends hold papers
    expected = sum(n for year, n in per_year.items() if 1957 <= year <= 1960)
    for filters in (
        {"year": "1957-1960"},
        {"year_from": 1957, "year_to": 1960},
        {"year": [1957, 1960]},
    ):
        async with mcp_client(ranking_server.mcp_url) as client:
            listed = tool_data(
                await client.call_tool("search_papers_by_payload", {"payload": filters, "limit": 1})
            )
        assert listed["total"] == expected, filters
        hits = await _found(ranking_server, "translation", filters=filters)
        assert {hit["year"] for hit in hits} == {1957, 1960}, filters
    single = await _found(ranking_server, "translation", filters={"year": 1960})
    assert single and {hit["year"] for hit in single} == {1960}


# --- start-up -------------------------------------------------------------------------------


def test_the_search_models_load_at_start_without_a_search(ranking_library: KnowledgeBase) -> None:
    with running_server(ranking_library) as server:
        deadline = time.monotonic() + 120
        while "Search models loaded" not in server.log() and time.monotonic() < deadline:
            assert "Loading the search models failed" not in server.log()
            time.sleep(0.2)
        log = server.log()
    assert "Loading the search models in the background" in log
    assert "Search models loaded" in log, log
    assert "tools/call" not in log  # nothing asked for a search
