"""The OpenAlex engine against a local server answering with OpenAlex's own records
(tests/fixtures/openalex, see SOURCE.txt)."""

from __future__ import annotations

import json
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
from engines.openalex import OpenAlexEngine, abstract_from_inverted_index, page_window
from tests.engines.replay import ReplayServer, Reply

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "openalex"


def recorded(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


def sent(server: ReplayServer, index: int = -1) -> dict[str, str]:
    return {key: values[0] for key, values in server.requests[index].query.items()}


@pytest.fixture
def openalex(replay_server: ReplayServer, settings) -> ReplayServer:
    settings.OPENALEX_API_URL = replay_server.url
    settings.CONTACT_EMAIL = ""
    return replay_server


@pytest.fixture
def engine() -> OpenAlexEngine:
    return OpenAlexEngine()


def test_search_maps_recorded_works_to_records(openalex, engine):
    openalex.add("/works", Reply(200, recorded("works_list.json")))

    records = engine.search(SearchRequest("open access", max_results=10))

    assert records.total == 2  # meta.count, the search log's total
    assert [r.title for r in records] == [
        "The state of OA: a large-scale analysis of the prevalence and impact of Open Access "
        "articles",
        "Are School Committees a Source of Empowerment? Insights from Tanzania",
    ]
    oa, tanzania = records
    assert [a.name for a in oa.authors][:3] == [
        "Heather A. Piwowar",
        "Jason Priem",
        "Vincent Larivière",
    ]
    assert oa.authors[2].affiliation == "University of Montreal; University of Quebec at Montreal"
    assert oa.authors[0].profile_link == "https://orcid.org/0000-0003-1613-5981"
    assert oa.doi == "10.7717/peerj.4375"
    assert (oa.year, oa.publication_date) == (2018, "2018-02-13")
    assert oa.venue == "PeerJ"
    assert oa.publisher == "PeerJ, Inc."
    assert oa.volume == "6"
    assert oa.pdf_url == "https://peerj.com/articles/4375.pdf"
    assert oa.citation_count == 394
    assert oa.identifiers == {
        "openalex": "W2741809807",
        "pmid": "29456894",
        "pmcid": "PMC5815332",
        "mag": "2741809807",
    }
    assert oa.abstract.startswith("Despite growing interest in Open Access (OA) to scholarly")
    assert oa.metadata["concepts"][:2] == ["Citation", "Bibliometrics"]
    assert (oa.source, oa.source_id) == ("openalex", "W2741809807")
    assert oa.source_url == "https://openalex.org/W2741809807"

    assert tanzania.authors[0].name == "Orest Sebastian Masue"
    assert tanzania.authors[0].affiliation == "Mzumbe University"
    assert tanzania.venue == "International Journal of Public Administration"
    assert tanzania.publisher == "Taylor & Francis"
    assert (tanzania.volume, tanzania.number, tanzania.pages) == ("40", "9", "780-791")
    assert tanzania.pdf_url == ""  # closed access: no best_oa_location
    assert tanzania.categories == ["Social Sciences", "Economics, Econometrics and Finance"]
    assert tanzania.metadata["topics"][0] == "Poverty, Education, and Child Welfare"
    assert tanzania.metadata["openalex_keywords"][:2] == ["Tanzania", "Empowerment"]
    assert tanzania.keywords == []  # library keywords are the researcher's own
    assert tanzania.abstract.startswith("Studies on user committees often critique the claim")
    assert tanzania.abstract.endswith("critical information on school issues.")


def test_search_sends_query_paging_and_no_mailto_without_contact(openalex, engine):
    openalex.add("/works", Reply(200, recorded("works_empty.json")))

    assert engine.search(SearchRequest("graph neural networks", max_results=10, offset=20)) == []

    query = sent(openalex)
    assert query["search"] == "graph neural networks"
    assert (query["page"], query["per-page"]) == ("3", "10")
    assert "abstract_inverted_index" in query["select"]
    assert "mailto" not in query
    assert "filter" not in query


def test_offset_inside_a_page_reads_one_larger_page(openalex, engine):
    openalex.add("/works", Reply(200, recorded("works_list.json")))

    # Results 1 and 2 do not share a page of 2, but do share page 1 of 3.
    records = engine.search(SearchRequest("x", max_results=2, offset=1))

    assert (sent(openalex)["page"], sent(openalex)["per-page"]) == ("1", "3")
    assert [r.source_id for r in records] == ["W2492449078"]
    assert page_window(15, 10, 200) == (2, 13, 2)
    assert page_window(0, 500, 200) == (1, 200, 0)


def test_filters_reach_the_query(openalex, engine):
    openalex.add("/works", Reply(200, recorded("works_empty.json")))

    engine.search(
        SearchRequest(
            "school committees",
            date_from="2016",
            date_to="2018-06-30",
            categories=("Computer Science", "33"),
        )
    )

    assert sent(openalex)["filter"] == (
        "from_publication_date:2016-01-01,to_publication_date:2018-06-30,"
        "primary_topic.field.id:17|33"
    )


def test_unknown_category_is_refused_before_any_request(openalex, engine):
    with pytest.raises(EngineError, match=r"no category 'cs\.CL'"):
        engine.search(SearchRequest("x", categories=("cs.CL",)))
    assert openalex.requests == []


def test_contact_email_joins_the_polite_pool(openalex, engine, settings):
    settings.CONTACT_EMAIL = "librarian@example.org"
    openalex.add("/works", Reply(200, recorded("works_empty.json")))

    engine.search(SearchRequest("x"))

    assert sent(openalex)["mailto"] == "librarian@example.org"
    assert openalex.requests[-1].headers["user-agent"].endswith("(mailto:librarian@example.org)")


def test_search_by_author_resolves_the_author_first(openalex, engine):
    openalex.add("/authors", Reply(200, recorded("authors_search.json")))
    openalex.add("/works", Reply(200, recorded("works_list.json")))

    records = engine.search_by_author("Heather Piwowar", SearchRequest("Heather Piwowar"))

    assert sent(openalex, 0)["search"] == "Heather Piwowar"
    works_query = sent(openalex, 1)
    assert works_query["filter"] == "author.id:A1969205032"
    assert works_query["sort"] == "publication_date:desc"
    assert "search" not in works_query
    assert records[0].metadata["author_match"] == {
        "openalex_id": "A1969205032",
        "name": "Heather A. Piwowar",
        "orcid": "https://orcid.org/0000-0003-1613-5981",
        "works_count": 50,
        "institution": "Our Research",
    }


def test_search_by_unknown_author_finds_nothing(openalex, engine):
    openalex.add("/authors", Reply(200, recorded("works_empty.json")))

    assert engine.search_by_author("Nobody Atall", SearchRequest("Nobody Atall")) == []
    assert len(openalex.requests) == 1


@pytest.mark.parametrize(
    ("paper_id", "path"),
    [
        ("W2492449078", "/works/W2492449078"),
        ("https://openalex.org/W2492449078", "/works/W2492449078"),
        ("10.1080/01900692.2016.1201839", "/works/doi:10.1080%2F01900692.2016.1201839"),
        ("doi:10.1080/01900692.2016.1201839", "/works/doi:10.1080%2F01900692.2016.1201839"),
        (
            "https://doi.org/10.1080/01900692.2016.1201839",
            "/works/doi:10.1080%2F01900692.2016.1201839",
        ),
    ],
)
def test_details_by_openalex_id_or_doi(openalex, engine, paper_id, path):
    openalex.add(path, Reply(200, recorded("work_W2492449078.json")))

    record = engine.get_paper_details(paper_id)

    assert record.title == "Are School Committees a Source of Empowerment? Insights from Tanzania"
    assert record.doi == "10.1080/01900692.2016.1201839"
    assert record.identifiers["openalex"] == "W2492449078"
    assert openalex.requests[-1].path == path


def test_details_of_unknown_work_is_not_found(openalex, engine):
    openalex.add("/works/W1", Reply(404, {"error": "Not Found"}))

    with pytest.raises(PaperNotFoundAtSource, match="no work 'W1'"):
        engine.get_paper_details("W1")


def test_details_with_an_id_of_another_kind_is_refused(openalex, engine):
    with pytest.raises(EngineError, match="not an OpenAlex work id"):
        engine.get_paper_details("arXiv:2101.00001")
    assert openalex.requests == []


def test_citing_papers_by_openalex_id(openalex, engine):
    openalex.add("/works", Reply(200, recorded("works_list.json")))

    paper = PaperRef(identifiers={"openalex": "https://openalex.org/W2741809807"})
    records = engine.get_citing_papers(paper, max_results=5)

    assert len(records) == 2
    query = sent(openalex)
    assert query["filter"] == "cites:W2741809807"
    assert query["sort"] == "cited_by_count:desc"
    assert query["per-page"] == "5"


def test_citing_papers_by_doi_looks_the_work_up_first(openalex, engine):
    openalex.add(
        "/works/doi:10.7717%2Fpeerj.4375", Reply(200, {"id": "https://openalex.org/W2741809807"})
    )
    openalex.add("/works", Reply(200, recorded("works_empty.json")))

    assert engine.get_citing_papers(PaperRef(doi="10.7717/PEERJ.4375"), max_results=5) == []
    assert sent(openalex, 0)["select"] == "id"
    assert sent(openalex, 1)["filter"] == "cites:W2741809807"


def test_citing_papers_without_a_handle_is_not_found(openalex, engine):
    with pytest.raises(PaperNotFoundAtSource, match="neither"):
        engine.get_citing_papers(PaperRef(title="Untraceable", arxiv_id="2101.00001"), 5)
    assert openalex.requests == []


def test_categories_are_the_fields_without_a_request(openalex, engine):
    categories = engine.categories()

    assert len(categories) == 26
    computer_science = next(c for c in categories if c.id == "17")
    assert (computer_science.name, computer_science.group) == (
        "Computer Science",
        "Physical Sciences",
    )
    assert openalex.requests == []


def test_rate_limit_answer_carries_retry_after(openalex, engine):
    openalex.add("/works", Reply(429, recorded("rate_limited.json"), {"Retry-After": "30"}))

    with pytest.raises(RateLimited) as caught:
        engine.search(SearchRequest("x"))

    assert caught.value.retry_after == 30
    assert "Anonymous search is temporarily rate-limited" in caught.value.message


def test_bad_request_is_a_permanent_error(openalex, engine):
    openalex.add(
        "/works",
        Reply(
            400,
            {
                "error": "Invalid query parameters error.",
                "message": "nonsense_field is not a valid field.",
            },
        ),
    )

    with pytest.raises(EngineError) as caught:
        engine.search(SearchRequest("x"))

    assert not isinstance(caught.value, TransientEngineError)
    assert caught.value.message == (
        "OpenAlex refused the request (HTTP 400): nonsense_field is not a valid field."
    )


def test_server_error_and_timeout_are_transient(openalex, engine):
    openalex.add("/works", Reply(502, "Bad Gateway"))
    with pytest.raises(TransientEngineError):
        engine.search(SearchRequest("x"))

    openalex.add("/works", Reply(200, recorded("works_empty.json"), delay=2.0))
    engine.timeout = 0.3
    with pytest.raises(EngineTimeout):
        engine.search(SearchRequest("x"))


def test_answer_without_results_is_an_error(openalex, engine):
    openalex.add("/works", Reply(200, {"meta": {"count": 0}}))

    with pytest.raises(EngineError, match="without a list of results"):
        engine.search(SearchRequest("x"))


def test_inverted_index_rebuilds_word_order():
    index = {"world": [1], "Hello": [0], "again": [3], "hello": [2]}
    assert abstract_from_inverted_index(index) == "Hello world hello again"
    assert abstract_from_inverted_index(None) == ""


def test_optional_api_key_is_sent_but_never_shown(openalex, engine, settings):
    settings.OPENALEX_API_KEY = "oa-key-789"
    openalex.add(
        "/works", Reply(400, {"error": "Invalid", "message": "api_key oa-key-789 unknown"})
    )

    with pytest.raises(EngineError) as caught:
        engine.search(SearchRequest("x"))

    assert sent(openalex)["api_key"] == "oa-key-789"
    assert "oa-key-789" not in str(caught.value)


def test_an_unusable_work_is_skipped_not_fatal(openalex, engine):
    listing = recorded("works_list.json")
    listing["results"][0]["publication_year"] = 20180  # a typo in the source's data
    openalex.add("/works", Reply(200, listing))

    records = engine.search(SearchRequest("x"))

    assert [r.source_id for r in records] == ["W2492449078"]
