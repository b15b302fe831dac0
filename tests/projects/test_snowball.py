"""Citation snowballing (projects/snowball.py) against OpenAlex, Semantic Scholar and
Crossref served locally from one small citation graph (tests/fixtures/snowball): each work
once however many sources and depths name it, ranked by the seeds it connects to, citations
recorded, an engine that is down reported while the others still give results."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from core.errors import InvalidInput
from engines.base import PaperRef
from engines.crossref import CrossrefEngine
from engines.openalex import OpenAlexEngine
from engines.registry import registry
from engines.semantic_scholar import SemanticScholarEngine
from engines.snowball import MAX_ENGINE_CALLS
from papers.models import Citation, Paper
from papers.schemas import PaperRecord
from papers.services import papers_upsert
from projects.models import ProjectPaper
from projects.services import project_add_papers, project_create
from projects.snowball import expand_by_citations
from tests.engines.replay import ReplayServer, Reply
from tests.snowball_sources import SOURCES, graph, seed_records, serve_sources

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def sources(settings: Any, replay_server: ReplayServer) -> ReplayServer:
    settings.ENGINES_ENABLED = list(SOURCES)
    settings.CELERY_TASK_ALWAYS_EAGER = True  # a worker would not see these URLs
    settings.ENGINE_CACHE_TTLS = dict.fromkeys(SOURCES, 0)
    settings.ENGINE_RATE_LIMITS = dict.fromkeys(SOURCES, "1000/second")
    settings.ENGINE_MAX_RETRIES = 0
    settings.CONTACT_EMAIL = ""
    for name, value in serve_sources(replay_server).items():
        setattr(settings, name, value)
    registry.refresh()
    return replay_server


@pytest.fixture
def seeds(transactional_db: None) -> list[int]:
    records = [PaperRecord.build(**values) for values in seed_records()]
    return papers_upsert(records=records).paper_ids


def titled(title: str) -> int:
    return Paper.objects.get(title__iexact=title).pk


# --- the engines' reference lookups ------------------------------------------------------------


def test_openalex_references_are_fetched_in_one_batch_in_list_order(sources: ReplayServer) -> None:
    work = graph()["S1"]
    records = OpenAlexEngine().get_references(PaperRef(identifiers={"openalex": work["oa"]}), 50)
    assert [r.source_id for r in records] == ["W2001", "W2002"]
    assert records[0].doi == "10.5555/x"
    batch = sources.requests[-1]
    assert batch.path == "/openalex/works" and batch.query["filter"] == ["openalex:W2001|W2002"]
    assert sources.requests[0].query["select"] == ["id,referenced_works"]


def test_semantic_scholar_references_skip_what_it_could_not_resolve(sources: ReplayServer) -> None:
    work = graph()["S1"]
    records = SemanticScholarEngine().get_references(PaperRef(identifiers={"s2": work["s2"]}), 50)
    assert [r.title for r in records] == [
        "The citation advantage of open access articles",
        "Graph Embeddings of Scholarly Citation Data",
    ]
    assert records[0].doi == "10.5555/x" and records[1].arxiv_id == "2101.00001"
    assert records[0].metadata["s2_citation"] == {"is_influential": True}


def test_crossref_references_are_the_deposited_dois_fetched_as_works(sources: ReplayServer) -> None:
    records = CrossrefEngine().get_references(PaperRef(doi="10.5555/seed.1"), 50)
    assert [r.doi for r in records] == ["10.5555/x", "10.5555/y"]  # the unstructured one left out
    assert sources.requests[-1].query["filter"] == ["doi:10.5555/x,doi:10.5555/y"]
    assert records[0].citation_count == 500


def test_recorded_reference_lists_are_asked_for_as_one_batch(
    sources: ReplayServer, settings: Any
) -> None:
    """The recorded answers of tests/fixtures/openalex and /crossref (see their SOURCE.txt):
    their reference lists become one batch request each."""
    recorded = Path(__file__).resolve().parents[1] / "fixtures"
    work = json.loads((recorded / "openalex" / "work_W2492449078.json").read_text())
    sources.add("/openalex/works/W2492449078", Reply(200, work))
    crossref = json.loads((recorded / "crossref" / "work.json").read_text())
    sources.add("/crossref/works/10.1371%2Fjournal.pone.0033693", Reply(200, crossref))

    assert (
        OpenAlexEngine().get_references(PaperRef(identifiers={"openalex": "W2492449078"}), 50) == []
    )
    assert sources.requests[-1].query["filter"] == [
        "openalex:W574722219|W1515810707|W1914972138|W1963501656|W1970559816"
    ]
    assert CrossrefEngine().get_references(PaperRef(doi="10.1371/journal.pone.0033693"), 1) == []
    # max_results 1: only the first deposited DOI is fetched.
    assert sources.requests[-1].query["filter"] == ["doi:10.1038/sj.npp.1301164"]


# --- the service -------------------------------------------------------------------------------


def test_depth_two_with_duplicates_across_sources_yields_each_work_once_ranked_by_seeds(
    sources: ReplayServer, seeds: list[int]
) -> None:
    before = Paper.objects.count()
    expansion = expand_by_citations(paper_ids=seeds, direction="references", depth=2, limit=2)

    x, y, z, d = (titled(graph()[name]["title"]) for name in ("X", "Y", "Z", "D"))
    q = titled(graph()["Q"]["title"])
    # X (three sources, two ids, one DOI), Y (depth 1 and again at 2), Z, Q, D: five works.
    assert Paper.objects.count() == before + 5
    assert expansion.new_to_library == 5 and expansion.found == 5
    results = expansion.results
    assert [entry["paper_id"] for entry in results] == [x, z]  # limit 2: the best two
    assert results[0]["connects_to"] == 2 and results[0]["via"] == sorted(seeds)
    assert set(results[0]["engines"]) == {"openalex", "semantic_scholar", "crossref"}
    assert results[0]["depth"] == 1

    everything = expand_by_citations(paper_ids=seeds, direction="references", depth=2, limit=10)
    ranked = [(e["paper_id"], e["connects_to"], e["depth"]) for e in everything.results]
    # Two seeds each (Y through X at depth 2 as well), then by citation count; Q one seed.
    assert ranked == [(x, 2, 1), (z, 2, 1), (y, 2, 1), (d, 2, 2), (q, 1, 1)]
    assert len({e["paper_id"] for e in everything.results}) == len(everything.results)
    assert Paper.objects.count() == before + 5  # the second walk created nothing
    assert everything.new_to_library == 0
    # Every edge recorded, at both depths, each once.
    s1, s2 = seeds
    edges = set(Citation.objects.values_list("citing_id", "cited_id"))
    assert {(s1, x), (s1, y), (s1, z), (s2, x), (s2, q), (s2, z), (x, d), (x, y), (z, y)} <= edges
    assert Citation.objects.count() == len(edges)
    assert all(s["outcome"] == "ok" for s in everything.engines.values()), everything.engines
    assert everything.engine_calls <= MAX_ENGINE_CALLS


def test_an_engine_down_is_reported_and_the_others_still_give_results(
    sources: ReplayServer, seeds: list[int]
) -> None:
    for key in ("1a" * 20, "DOI:10.5555%2Fseed.2", "2b" * 20, "4d" * 20):
        sources.add(f"/s2/graph/v1/paper/{key}/references", Reply(503, {"message": "down"}))

    expansion = expand_by_citations(paper_ids=seeds, direction="references", depth=1, limit=10)

    s2 = expansion.engines["semantic_scholar"]
    assert s2["outcome"] == "unreachable" and s2["answered"] == 0 and s2["calls"] == 2
    assert "503" in s2["last_failure"]["message"] or s2["last_failure"]["reason"]
    assert expansion.engines["openalex"]["outcome"] == "ok"
    assert expansion.engines["crossref"]["outcome"] == "ok"
    titles = [e["title"] for e in expansion.results]
    assert titles == [graph()[n]["title"] for n in ("X", "Y", "Q")]  # no Z: only S2 knows it
    assert any("semantic_scholar" in note for note in expansion.notes)


def test_citing_direction_uses_the_library_citations_and_a_project_collects_the_results(
    sources: ReplayServer, seeds: list[int]
) -> None:
    citing = papers_upsert(
        records=[
            PaperRecord.build(title="Who Cites Open Science", authors=["Hal Later"], year=2024)
        ]
    ).paper_ids[0]
    Citation.objects.create(citing_id=citing, cited_id=seeds[0])
    project = project_create(name="Open science")
    project_add_papers(project=project, paper_ids=seeds)

    expansion = expand_by_citations(
        project_id="Open science", direction="citing", engines=["local"], add_to_project=True
    )

    assert [e["paper_id"] for e in expansion.results] == [citing]
    assert expansion.engine_calls == 0 and expansion.added_to_project == 1
    assert ProjectPaper.objects.filter(project=project, paper_id=citing).exists()


def test_bad_requests_are_refused(seeds: list[int]) -> None:
    with pytest.raises(InvalidInput, match="paper_ids or a project_id"):
        expand_by_citations(direction="both")
    with pytest.raises(InvalidInput, match="direction"):
        expand_by_citations(paper_ids=seeds, direction="sideways")
    with pytest.raises(InvalidInput, match="depth"):
        expand_by_citations(paper_ids=seeds, depth=3)
    with pytest.raises(InvalidInput, match="project_id"):
        expand_by_citations(paper_ids=seeds, add_to_project=True)
