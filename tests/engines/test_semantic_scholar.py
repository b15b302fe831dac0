"""The Semantic Scholar engine against a local server replaying Graph API answers
(tests/fixtures/semantic_scholar, see SOURCE.txt)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path

import pytest

from engines.base import (
    EngineError,
    EngineTimeout,
    PaperNotFoundAtSource,
    PaperRef,
    RateLimited,
    SearchRequest,
    TransientEngineError,
)
from engines.semantic_scholar import SemanticScholarEngine, _record, paper_key
from tests.engines.replay import ReplayServer, Reply

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "semantic_scholar"
API = "/graph/v1"


def recorded(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


def sent(server: ReplayServer, index: int = -1) -> dict[str, str]:
    return {key: values[0] for key, values in server.requests[index].query.items()}


@pytest.fixture
def s2(replay_server: ReplayServer, settings) -> ReplayServer:
    settings.SEMANTIC_SCHOLAR_API_URL = replay_server.url
    settings.SEMANTIC_SCHOLAR_API_KEY = ""
    return replay_server


@pytest.fixture
def engine() -> SemanticScholarEngine:
    return SemanticScholarEngine()


def test_search_maps_recorded_papers_to_records(s2, engine):
    s2.add(f"{API}/paper/search", Reply(200, recorded("search.json")))

    records = engine.search(SearchRequest("turing", max_results=10))

    assert records.total == 70499  # the answer's total, the search log's
    turing, cell = records
    assert turing.title == "Computing Machinery and Intelligence"
    assert [a.name for a in turing.authors] == ["A. Turing"]
    assert turing.authors[0].profile_link == "https://www.semanticscholar.org/author/2262347"
    assert turing.doi == "10.1093/mind/lix.236.433"
    assert (turing.year, turing.publication_date) == (1950, "1950-10-01")
    assert turing.venue == "The Philosophy of Artificial Intelligence"
    assert (turing.volume, turing.pages) == ("LIX", "433-460")
    assert turing.citation_count == 9754
    assert turing.categories == ["Computer Science", "Sociology"]
    assert turing.identifiers == {
        "s2": "2d5673caa9e6af3a7b82a43f19ee920992db07ad",
        "corpusid": "14636783",
        "mag": "2145482038",
        "dblp": "journals/x/Turing50",
    }
    assert (turing.source, turing.source_id) == (
        "semantic_scholar",
        "2d5673caa9e6af3a7b82a43f19ee920992db07ad",
    )
    assert turing.abstract.startswith("I propose to consider the question, “Can machines think?”")
    assert turing.pdf_url == ""

    assert cell.venue == "Cell"  # from publicationVenue
    assert cell.pdf_url == "http://www.cell.com/article/S0092867423007808/pdf"
    assert cell.identifiers["pmid"] == "37582357"
    assert cell.categories == ["Medicine", "Biology"]
    assert cell.pages == "3921-3944.e25"
    assert cell.abstract == ""


def test_search_sends_fields_paging_and_filters(s2, engine):
    s2.add(f"{API}/paper/search", Reply(200, recorded("search_empty.json")))

    records = engine.search(
        SearchRequest(
            "turing test",
            max_results=20,
            offset=40,
            date_from="2020",
            date_to="2023-06-30",
            categories=("computer science", "Medicine"),
        )
    )

    assert records == []
    query = sent(s2)
    assert query["query"] == "turing test"
    assert (query["limit"], query["offset"]) == ("20", "40")
    assert query["publicationDateOrYear"] == "2020:2023-06-30"
    assert query["fieldsOfStudy"] == "Computer Science,Medicine"
    assert {"externalIds", "openAccessPdf", "s2FieldsOfStudy"} <= set(query["fields"].split(","))
    assert "x-api-key" not in s2.requests[-1].headers


def test_search_without_hits_is_empty_not_an_error(s2, engine):
    s2.add(f"{API}/paper/search", Reply(200, recorded("search_empty.json")))

    found = engine.search(SearchRequest("n0 r3sult s3arch t3rm"))
    assert found == [] and found.total == 0


def test_answer_with_garbled_data_is_an_error(s2, engine):
    s2.add(f"{API}/paper/search", Reply(200, {"total": 1, "data": "oops"}))

    with pytest.raises(EngineError, match="without a list of papers"):
        engine.search(SearchRequest("x"))


def test_search_past_the_first_thousand_is_refused(s2, engine):
    with pytest.raises(EngineError, match="first 1,000 results"):
        engine.search(SearchRequest("x", offset=1000))
    assert s2.requests == []


def test_unknown_field_of_study_is_refused(s2, engine):
    with pytest.raises(EngineError, match=r"no field of study 'cs\.AI'"):
        engine.search(SearchRequest("x", categories=("cs.AI",)))
    assert s2.requests == []


def test_api_key_is_sent_and_never_shown(s2, engine, settings):
    settings.SEMANTIC_SCHOLAR_API_KEY = "s2-key-abc123"
    s2.add(f"{API}/paper/search", Reply(429, recorded("rate_limited.json")))

    with pytest.raises(RateLimited) as caught:
        engine.search(SearchRequest("x"))

    assert s2.requests[-1].headers["x-api-key"] == "s2-key-abc123"
    assert "s2-key-abc123" not in str(caught.value)
    assert "Too Many Requests" in caught.value.message


def test_rate_limit_with_http_date_retry_after(s2, engine):
    when = format_datetime(datetime.now(UTC) + timedelta(seconds=60), usegmt=True)
    s2.add(f"{API}/paper/search", Reply(429, recorded("rate_limited.json"), {"Retry-After": when}))

    with pytest.raises(RateLimited) as caught:
        engine.search(SearchRequest("x"))

    assert 40 < caught.value.retry_after <= 60


def test_search_by_author_reads_the_first_matching_author(s2, engine):
    s2.add(f"{API}/author/search", Reply(200, recorded("author_search.json")))
    s2.add(f"{API}/author/2262347/papers", Reply(200, recorded("author_papers.json")))

    records = engine.search_by_author("Alan Turing", SearchRequest("Alan Turing", max_results=10))

    assert sent(s2, 0)["query"] == "Alan Turing"
    assert sent(s2, 0)["limit"] == "1"
    assert sent(s2, 1)["limit"] == "10"
    assert [r.title for r in records] == [
        "Review of two collections of essays about Alan Turing",
        "Text Processing",
    ]
    assert records[0].venue == "Cryptologia"
    assert records[0].doi == "10.1080/01611194.2019.1650846"
    assert records[1].entry_type == "misc"  # no publication types recorded
    assert records[0].metadata["author_match"] == {
        "s2_author_id": "2262347",
        "name": "A. Turing",
        "affiliations": [],
        "paper_count": 59,
    }


def test_author_papers_are_filtered_by_date_on_our_side(s2, engine):
    s2.add(f"{API}/author/search", Reply(200, recorded("author_search.json")))
    s2.add(f"{API}/author/2262347/papers", Reply(200, recorded("author_papers.json")))

    in_range = engine.search_by_author("Turing", SearchRequest("Turing", date_from="2020-01"))
    too_early = engine.search_by_author("Turing", SearchRequest("Turing", date_to="2019"))

    # "Text Processing" is known only by its year, 2020, which matches "2020-01".
    assert [r.year for r in in_range] == [2020, 2020]
    assert too_early == []
    assert "publicationDateOrYear" not in sent(s2)


def test_search_by_unknown_author_finds_nothing(s2, engine):
    s2.add(f"{API}/author/search", Reply(200, {"total": 0, "offset": 0, "data": []}))

    assert engine.search_by_author("Nobody Atall", SearchRequest("Nobody Atall")) == []
    assert len(s2.requests) == 1


def test_details_by_doi_include_the_tldr(s2, engine):
    s2.add(f"{API}/paper/DOI:10.1093%2Fmind%2Flix.236.433", Reply(200, recorded("paper.json")))

    record = engine.get_paper_details("10.1093/MIND/LIX.236.433")

    assert record.title == "Computing Machinery and Intelligence"
    assert record.metadata["tldr"].startswith("If the meaning of the words “machine” and “think”")
    assert record.metadata["publication_types"] == ["JournalArticle", "Review"]
    assert "tldr" in sent(s2)["fields"].split(",")


@pytest.mark.parametrize(
    ("paper_id", "key"),
    [
        ("2D5673CAA9E6AF3A7B82A43F19EE920992DB07AD", "2d5673caa9e6af3a7b82a43f19ee920992db07ad"),
        ("doi:10.1093/mind/lix.236.433", "DOI:10.1093/mind/lix.236.433"),
        ("https://doi.org/10.1093/mind/lix.236.433", "DOI:10.1093/mind/lix.236.433"),
        ("arXiv:1706.03762v5", "ARXIV:1706.03762"),
        ("arxiv:1706.03762", "ARXIV:1706.03762"),
        ("corpusid:14636783", "CorpusId:14636783"),
        ("14636783", "CorpusId:14636783"),
        ("PMID:37582357", "PMID:37582357"),
    ],
)
def test_paper_ids_take_the_graph_api_form(paper_id, key):
    assert paper_key(paper_id) == key


def test_details_request_path_carries_the_prefixed_id(s2, engine):
    s2.add(f"{API}/paper/ARXIV:1706.03762", Reply(200, recorded("paper.json")))

    engine.get_paper_details("arXiv:1706.03762")

    assert s2.requests[-1].path == f"{API}/paper/ARXIV:1706.03762"


def test_details_of_unknown_paper_is_not_found(s2, engine):
    s2.add(f"{API}/paper/CorpusId:0", Reply(404, recorded("not_found.json")))

    with pytest.raises(PaperNotFoundAtSource, match="no paper 'CorpusId:0'"):
        engine.get_paper_details("CorpusId:0")


def test_details_with_an_unknown_kind_of_id_is_refused(s2, engine):
    with pytest.raises(EngineError, match="not a Semantic Scholar paper id"):
        engine.get_paper_details("W2741809807")
    assert s2.requests == []


def test_citing_papers_by_doi(s2, engine):
    s2.add(
        f"{API}/paper/DOI:10.1093%2Fmind%2Flix.236.433/citations",
        Reply(200, recorded("citations.json")),
    )

    records = engine.get_citing_papers(PaperRef(doi="10.1093/mind/lix.236.433"), max_results=50)

    assert [r.title for r in records] == [
        "Learning to Throw With a Handful of Samples Using Decision Transformers"
    ]
    citing = records[0]
    assert citing.doi == "10.1109/lra.2022.3229266"
    assert citing.venue == "IEEE Robotics and Automation Letters"
    assert [a.name for a in citing.authors] == ["M. Monastirsky", "Osher Azulay", "A. Sintov"]
    assert citing.metadata["s2_citation"] == {
        "is_influential": True,
        "intents": ["methodology", "background"],
    }
    query = sent(s2)
    assert query["limit"] == "50"
    assert query["fields"].startswith("contexts,intents,isInfluential,")


def test_citing_papers_prefer_the_s2_id(s2, engine):
    paper_id = "2d5673caa9e6af3a7b82a43f19ee920992db07ad"
    s2.add(f"{API}/paper/{paper_id}/citations", Reply(200, {"offset": 0, "data": []}))

    paper = PaperRef(doi="10.1093/mind/lix.236.433", identifiers={"s2": paper_id})
    assert engine.get_citing_papers(paper, max_results=5) == []
    assert s2.requests[-1].path == f"{API}/paper/{paper_id}/citations"


def test_citing_papers_without_a_handle_is_not_found(s2, engine):
    with pytest.raises(PaperNotFoundAtSource, match="has none"):
        engine.get_citing_papers(PaperRef(title="Untraceable"), 5)
    assert s2.requests == []


def test_categories_are_the_fields_of_study_without_a_request(s2, engine):
    names = [c.name for c in engine.categories()]

    assert len(names) == 23
    assert {"Computer Science", "Medicine", "Linguistics"} <= set(names)
    assert s2.requests == []


def test_server_error_timeout_and_garbage_are_mapped(s2, engine):
    s2.add(f"{API}/paper/search", Reply(504, {"message": "Endpoint request timed out"}))
    with pytest.raises(TransientEngineError, match="HTTP 504"):
        engine.search(SearchRequest("x"))

    s2.add(
        f"{API}/paper/search", Reply(200, b"<html>gateway</html>", {"Content-Type": "text/html"})
    )
    with pytest.raises(EngineError, match="not JSON"):
        engine.search(SearchRequest("x"))

    s2.add(f"{API}/paper/search", Reply(200, recorded("search.json"), delay=2.0))
    engine.timeout = 0.3
    with pytest.raises(EngineTimeout):
        engine.search(SearchRequest("x"))


def test_bad_request_is_a_permanent_error(s2, engine):
    s2.add(
        f"{API}/paper/search", Reply(400, {"error": "Unrecognized or unsupported fields: [bogus]"})
    )

    with pytest.raises(EngineError) as caught:
        engine.search(SearchRequest("x"))

    assert not isinstance(caught.value, TransientEngineError)
    assert caught.value.message == (
        "Semantic Scholar refused the request (HTTP 400): "
        "Unrecognized or unsupported fields: [bogus]"
    )


def test_an_anthology_paper_without_an_open_access_pdf_gets_the_anthology_pdf() -> None:
    paper = {
        "paperId": "a" * 40,
        "title": "A paper",
        "externalIds": {"ACL": "P18-1001"},
        "openAccessPdf": None,
    }
    record = _record(paper)
    assert record is not None
    assert record.pdf_url == "https://aclanthology.org/P18-1001.pdf"
    assert record.identifiers["acl"] == "P18-1001"
