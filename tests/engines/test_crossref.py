"""The Crossref engine against a local server replaying answers Crossref's REST API gave
(tests/fixtures/crossref, see SOURCE.txt)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engines.base import (
    CITING,
    EngineError,
    PaperNotFoundAtSource,
    PaperRef,
    SearchRequest,
    TransientEngineError,
    UnsupportedOperation,
)
from engines.crossref import CrossrefEngine, jats_to_text
from tests.engines.replay import ReplayServer, Reply

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "crossref"
EMPTY_LIST = {
    "status": "ok",
    "message-type": "work-list",
    "message-version": "1.0.0",
    "message": {"facets": {}, "total-results": 0, "items": []},
}


def recorded(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def json_reply(name: str) -> Reply:
    return Reply(200, json.loads(recorded(name)))


def sent(server: ReplayServer, index: int = -1) -> dict[str, str]:
    return {key: values[0] for key, values in server.requests[index].query.items()}


@pytest.fixture
def crossref(replay_server: ReplayServer, settings) -> ReplayServer:
    settings.CROSSREF_API_URL = replay_server.url
    settings.CONTACT_EMAIL = "librarian@example.org"
    return replay_server


@pytest.fixture
def engine() -> CrossrefEngine:
    return CrossrefEngine()


def test_search_maps_recorded_items_to_records(crossref, engine):
    crossref.add("/works", json_reply("works_list.json"))

    records = engine.search(SearchRequest("ecology", max_results=10))

    assert records.total == 1155  # message.total-results, the search log's total
    assert [r.doi for r in records] == ["10.1111/ele.14024", "10.1111/ele.13085"]
    trap, noise = records
    assert trap.title == "The forecast trap"
    assert [(a.name, a.given, a.family) for a in trap.authors] == [
        ("Carl Boettiger", "Carl", "Boettiger")
    ]
    assert trap.authors[0].affiliation.startswith("Department of Environmental Science, Policy")
    assert trap.authors[0].profile_link == "http://orcid.org/0000-0002-1642-628X"
    assert (trap.year, trap.publication_date) == (2022, "2022-05-30")
    assert (trap.venue, trap.venue_short) == ("Ecology Letters", "Ecology Letters")
    assert (trap.volume, trap.number, trap.pages) == ("25", "7", "1655-1664")
    assert trap.publisher == "Wiley"
    assert trap.entry_type == "article"
    assert trap.citation_count == 13
    assert trap.pdf_url == "https://onlinelibrary.wiley.com/doi/pdf/10.1111/ele.14024"
    assert trap.source_url == "https://doi.org/10.1111/ele.14024"
    assert (trap.source, trap.source_id) == ("crossref", "10.1111/ele.14024")
    assert trap.metadata["issn"] == ["1461-023X", "1461-0248"]
    # JATS: the "Abstract" heading and the tags go, the text stays.
    assert trap.abstract.startswith("Encouraged by decision makers’ appetite for future")
    assert trap.abstract.endswith("are the best way to avoid the trap.")
    assert noise.title.startswith("From noise to knowledge")
    assert "(Bjørnstad & Grenfell). Stochastic phenomena" in noise.abstract
    assert "<" not in noise.abstract


def test_search_sends_query_paging_filters_and_mailto(crossref, engine):
    crossref.add("/works", Reply(200, EMPTY_LIST))

    records = engine.search(
        SearchRequest("forecast", max_results=5, offset=10, date_from="2018", date_to="2022-06-30")
    )

    assert records == []
    query = sent(crossref)
    assert query["query"] == "forecast"
    assert (query["rows"], query["offset"]) == ("5", "10")
    assert query["filter"] == "from-pub-date:2018,until-pub-date:2022-06-30"
    assert query["mailto"] == "librarian@example.org"
    assert "abstract" in query["select"].split(",")
    assert crossref.requests[-1].headers["user-agent"].endswith("(mailto:librarian@example.org)")


def test_search_by_author_uses_the_author_field_query(crossref, engine):
    crossref.add("/works", json_reply("works_list.json"))

    records = engine.search_by_author("carl boettiger", SearchRequest("carl boettiger"))

    assert sent(crossref)["query.author"] == "carl boettiger"
    assert "query" not in sent(crossref)
    assert {a.name for r in records for a in r.authors} == {"Carl Boettiger"}


def test_categories_are_unsupported_without_a_request(crossref, engine):
    with pytest.raises(UnsupportedOperation, match="cannot filter by subject"):
        engine.search(SearchRequest("x", categories=("Ecology",)))
    assert crossref.requests == []


def test_details_by_doi(crossref, engine):
    crossref.add("/works/10.1371%2Fjournal.pone.0033693", json_reply("work.json"))

    record = engine.get_paper_details("https://doi.org/10.1371/journal.pone.0033693")

    assert record.title == (
        "Methylphenidate Exposure Induces Dopamine Neuron Loss and Activation of Microglia in "
        "the Basal Ganglia of Mice"
    )
    assert [a.name for a in record.authors] == [
        "Shankar Sadasivan",
        "Brooks B. Pond",
        "Amar K. Pani",
        "Chunxu Qu",
        "Yun Jiao",
        "Richard J. Smeyne",
    ]
    assert (record.year, record.publication_date) == (2012, "2012-03-21")
    assert (record.venue, record.volume, record.number, record.pages) == (
        "PLoS ONE",
        "7",
        "3",
        "e33693",
    )
    assert record.publisher == "Public Library of Science (PLoS)"
    assert record.citation_count == 67
    assert record.abstract == ""
    assert record.pdf_url == ""  # its only link is for similarity checking, not a PDF
    assert sent(crossref)["mailto"] == "librarian@example.org"


def test_details_of_unknown_doi_is_not_found(crossref, engine):
    crossref.add(
        "/works/10.1371%2Fnotarealdoi",
        Reply(404, recorded("not_found.txt"), {"Content-Type": "text/plain"}),
    )

    with pytest.raises(PaperNotFoundAtSource, match=r"no work with DOI 10\.1371/notarealdoi"):
        engine.get_paper_details("10.1371/notarealdoi")


def test_details_needs_a_doi(crossref, engine):
    with pytest.raises(EngineError, match="not a DOI"):
        engine.get_paper_details("W2741809807")
    assert crossref.requests == []


def test_bibtex_comes_from_the_transform_route(crossref, engine):
    crossref.add(
        "/works/10.1126%2Fscience.169.3946.635/transform/application/x-bibtex",
        Reply(200, recorded("bibtex.bib"), {"Content-Type": "application/x-bibtex"}),
    )

    bibtex = engine.get_bibtex(PaperRef(doi="10.1126/science.169.3946.635"))

    assert bibtex.startswith("@article{Frank_1970, title={The Structure of Ordinary Water")
    assert "pages={635–641}" in bibtex
    assert crossref.requests[-1].headers["accept"] == "application/x-bibtex"


def test_bibtex_needs_a_doi(crossref, engine):
    with pytest.raises(PaperNotFoundAtSource, match="has none"):
        engine.get_bibtex(PaperRef(title="No DOI", arxiv_id="2101.00001"))


def test_citing_papers_are_unsupported(crossref, engine):
    assert CITING not in engine.operations
    with pytest.raises(UnsupportedOperation, match="openalex or semantic_scholar"):
        engine.get_citing_papers(PaperRef(doi="10.1111/ele.14024"), 5)
    assert crossref.requests == []


def test_validation_failure_is_a_permanent_error(crossref, engine):
    crossref.add("/works", Reply(400, json.loads(recorded("validation_failure.json"))))

    with pytest.raises(EngineError) as caught:
        engine.search(SearchRequest("x"))

    assert not isinstance(caught.value, TransientEngineError)
    assert "Integer specified as notanumber" in caught.value.message


def test_overload_and_rate_limit_are_transient(crossref, engine):
    crossref.add("/works", Reply(503, "<html><body>503 Service Unavailable</body></html>"))
    with pytest.raises(TransientEngineError):
        engine.search(SearchRequest("x"))

    crossref.add("/works", Reply(429, "Too many requests", {"Retry-After": "2"}))
    with pytest.raises(TransientEngineError) as caught:
        engine.search(SearchRequest("x"))
    assert caught.value.retry_after == 2


def test_answer_that_is_not_a_work_list_is_an_error(crossref, engine):
    crossref.add("/works", json_reply("work.json"))

    with pytest.raises(EngineError, match="without a list of works"):
        engine.search(SearchRequest("x"))


def test_jats_to_text_unescapes_html_inside_jats():
    escaped = "<jats:p>&lt;p&gt;The impact of AI&lt;/p&gt;</jats:p>"
    assert jats_to_text(escaped) == "The impact of AI"
    assert jats_to_text(None) == ""
