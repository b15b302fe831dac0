"""The PubMed engine against a local server replaying answers NCBI's E-utilities gave
(tests/fixtures/pubmed, see SOURCE.md)."""

from __future__ import annotations

import logging
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from engines import pubmed, ratelimit
from engines.base import (
    BadKey,
    EngineError,
    PaperNotFoundAtSource,
    RateLimited,
    SearchRequest,
    SearchResults,
    TransientEngineError,
    UnsupportedOperation,
)
from engines.pubmed import PubMedEngine
from engines.registry import registry
from engines.runner import EngineCall, call_engine
from papers.models import Paper
from papers.retractions import status_of
from projects.intake import search_by_author_everywhere, search_everywhere
from tests.engines.replay import ReplayServer, Reply

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "pubmed"
ESEARCH = "/eutils/esearch.fcgi"
EFETCH = "/eutils/efetch.fcgi"
KEY = "ncbi-secret-key-0123456789abcdef"
# A query in PubMed's own syntax: tags, booleans, truncation, a phrase, a date tag.
SYSTEMATIC_QUERY = (
    '("pancreatic neoplasms"[mh] OR pancrea*[tiab]) AND telomere*[tiab] '
    'AND 2010:2017[dp] NOT "review"[pt]'
)


def recorded(name: str) -> Reply:
    body = (FIXTURES / name).read_bytes()
    return Reply(200, body, headers={"Content-Type": "text/xml; charset=UTF-8"})


def sent(server: ReplayServer, path: str, index: int = -1) -> dict[str, str]:
    requests = [request for request in server.requests if request.path == path]
    return {key: values[0] for key, values in requests[index].query.items()}


def paths(server: ReplayServer) -> list[str]:
    return [request.path for request in server.requests]


@pytest.fixture
def ncbi(replay_server: ReplayServer, settings: Any) -> ReplayServer:
    settings.NCBI_EUTILS_URL = f"{replay_server.url}/eutils"
    settings.NCBI_API_KEY = ""
    settings.NCBI_EMAIL = "librarian@example.org"
    settings.ENGINE_RATE_LIMITS = {"pubmed": "1000/second"}
    ratelimit.reset(PubMedEngine())
    return replay_server


@pytest.fixture
def engine() -> PubMedEngine:
    return PubMedEngine()


# --- search ----------------------------------------------------------------------------


def test_a_search_sends_the_query_as_typed_then_fetches_the_page_from_the_history_server(
    ncbi: ReplayServer, engine: PubMedEngine
) -> None:
    ncbi.add(ESEARCH, recorded("esearch2.xml"))
    ncbi.add(EFETCH, recorded("pubmed4.xml"))

    records = engine.search(SearchRequest(SYSTEMATIC_QUERY, max_results=20, offset=40))

    assert paths(ncbi) == [ESEARCH, EFETCH]
    search = sent(ncbi, ESEARCH)
    assert search["term"] == SYSTEMATIC_QUERY  # PubMed's syntax passed through untouched
    assert (search["db"], search["sort"], search["usehistory"]) == ("pubmed", "relevance", "y")
    assert (search["retstart"], search["retmax"]) == ("40", "20")
    assert (search["tool"], search["email"]) == ("research-mcp", "librarian@example.org")
    assert "api_key" not in search and "mindate" not in search
    fetch = sent(ncbi, EFETCH)
    assert (fetch["WebEnv"], fetch["query_key"]) == ("MCID_6927d6e7fee3e90f880ec190", "1")
    assert (fetch["retstart"], fetch["retmax"], fetch["retmode"]) == ("40", "20", "xml")
    assert [r.identifiers["pmid"] for r in records] == ["27797938"]
    assert (
        isinstance(records, SearchResults) and records.total == 42249
    )  # ESearch's Count, for the search log


def test_a_record_keeps_labelled_sections_mesh_publication_types_and_identifiers(
    ncbi: ReplayServer, engine: PubMedEngine
) -> None:
    ncbi.add(ESEARCH, recorded("esearch2.xml"))
    ncbi.add(EFETCH, recorded("pubmed4.xml"))

    (record,) = engine.search(SearchRequest("telomere pancreatic cancer"))

    assert record.title.startswith("Leucocyte telomere length, genetic variants at the TERT")
    assert not record.title.endswith(".")
    assert (record.source, record.source_id) == ("pubmed", "27797938")
    assert record.source_url == "https://pubmed.ncbi.nlm.nih.gov/27797938/"
    assert record.identifiers == {"pmid": "27797938", "pmcid": "PMC5442267"}
    assert record.doi == "10.1136/gutjnl-2016-312510"
    assert (record.venue, record.venue_short) == ("Gut", "Gut")
    assert (record.volume, record.number, record.pages) == ("66", "6", "1116-1122")
    assert (record.year, record.publication_date) == (2017, "2017-06")
    assert record.abstract.startswith(
        "OBJECTIVE: Telomere shortening occurs as an early event in pancreatic tumorigenesis"
    )
    for label in ("DESIGN: We measured", "RESULTS: Shorter prediagnostic", "CONCLUSIONS: "):
        assert label in record.abstract
    assert "(TERT) gene region" in record.abstract  # inline <i> kept as text
    assert "r2<0.25" in record.abstract
    assert len(record.authors) == 22
    first = record.authors[0]
    assert (first.name, first.family, first.given) == ("Ying Bao", "Bao", "Ying")
    assert first.affiliation.startswith("Channing Division of Network Medicine")
    # MeSH descriptors as keywords, the major topics named; publication types as categories.
    assert {"Adenocarcinoma", "Pancreatic Neoplasms", "Telomere Shortening"} <= set(record.keywords)
    assert record.metadata["mesh_major"] == [
        "Adenocarcinoma", "Pancreatic Neoplasms", "Telomerase", "Telomere Shortening",
    ]  # fmt: skip
    assert record.categories == [
        "Journal Article", "Observational Study", "Research Support, N.I.H., Extramural",
        "Research Support, U.S. Gov't, Non-P.H.S.", "Research Support, Non-U.S. Gov't",
    ]  # fmt: skip
    assert "updated_by" not in record.metadata


def test_structured_abstract_doi_from_elocation_and_full_dates(
    ncbi: ReplayServer, engine: PubMedEngine
) -> None:
    ncbi.add(ESEARCH, recorded("esearch1.xml"))
    ncbi.add(EFETCH, recorded("pubmed-29768149.xml"))

    (record,) = engine.search(SearchRequest("budesonide formoterol mild asthma"))

    assert record.title == "Inhaled Combined Budesonide-Formoterol as Needed in Mild Asthma"
    assert record.doi == "10.1056/nejmoa1715274"
    assert (record.year, record.publication_date) == (2018, "2018-05-17")
    sections = [part.split(":")[0] for part in record.abstract.split(". ") if ":" in part]
    assert sections[:2] == ["BACKGROUND", "METHODS"]
    assert "RESULTS: " in record.abstract and "CONCLUSIONS: " in record.abstract
    assert "Randomized Controlled Trial" in record.categories
    assert record.venue_short == "N Engl J Med"


def test_group_authors_orcids_and_author_keywords(ncbi: ReplayServer, engine: PubMedEngine) -> None:
    ncbi.add(ESEARCH, recorded("esearch1.xml"))
    ncbi.add(EFETCH, recorded("pubmed7.xml"))

    (record,) = engine.search(SearchRequest("pulmonary imaging biomarker pipeline"))

    names = [author.name for author in record.authors]
    assert "Canadian Respiratory Research Network" in names
    group = record.authors[names.index("Canadian Respiratory Research Network")]
    assert (group.family, group.given) == ("Canadian Respiratory Research Network", "")
    capaldi = record.authors[names.index("Dante Capaldi")]
    assert capaldi.profile_link == "https://orcid.org/0000-0002-4590-7461"
    assert record.keywords[:2] == ["asthma", "chronic obstructive lung disease"]
    assert record.identifiers == {"pmid": "29963580", "pmcid": "PMC6022861"}
    assert record.pages == "026002"


def test_a_page_without_history_is_fetched_by_pmid_and_old_records_parse(
    ncbi: ReplayServer, engine: PubMedEngine
) -> None:
    ncbi.add(ESEARCH, recorded("esearch1.xml"))  # ESearch kept no WebEnv
    ncbi.add(EFETCH, recorded("pubmed1.xml"))

    records = engine.search(SearchRequest("biopython", max_results=3))

    assert sent(ncbi, EFETCH)["id"] == "41282813,41148224,41011574"
    assert "WebEnv" not in sent(ncbi, EFETCH)
    aids, magnetic = records
    assert (aids.year, aids.publication_date) == (1990, "1990")  # <Season>Spring</Season>
    assert aids.doi is None and aids.abstract == ""
    assert aids.identifiers == {"pmid": "12091962"}
    assert magnetic.doi == "10.1016/0005-2795(76)90109-4"
    assert magnetic.publication_date == "1976-09-28"


def test_a_retracted_publication_is_flagged(ncbi: ReplayServer, engine: PubMedEngine) -> None:
    ncbi.add(ESEARCH, recorded("esearch1.xml"))
    ncbi.add(EFETCH, recorded("retracted-993.xml"))

    (record,) = engine.search(SearchRequest("oleate synaptic membranes"))

    assert "Retracted Publication" in record.categories
    assert record.metadata["updated_by"] == [
        {
            "type": "retraction",
            "pmid": "195582",
            "citation": "Rowe CE. Biochem J. 1977 Apr 15;164(1):287-8",
            "source": "pubmed",
        }
    ]
    assert status_of(record.metadata["updated_by"]) == "retracted"
    assert record.pages == "557-565"  # MEDLINE's '557-65' written out
    assert record.identifiers == {"pmid": "993", "pmcid": "PMC1165577"}


def test_a_bookshelf_entry_is_a_book_with_its_editors_apart(
    ncbi: ReplayServer, engine: PubMedEngine
) -> None:
    ncbi.add(EFETCH, recorded("book-20301295.xml"))

    book = engine.get_paper_details("20301295")

    assert (book.title, book.entry_type) == ("GeneReviews™", "book")
    assert (book.year, book.publisher) == (1993, "University of Washington, Seattle")
    assert book.authors == []
    assert book.metadata["editors"][:2] == ["Roberta A Pagon", "Thomas D Bird"]
    assert book.metadata["bookaccession"] == "NBK1116"
    assert book.abstract.startswith("GeneReviews are expert-authored, peer-reviewed")
    assert book.source_url == "https://pubmed.ncbi.nlm.nih.gov/20301295/"


def test_large_pages_are_fetched_in_batches(
    ncbi: ReplayServer, engine: PubMedEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pubmed, "EFETCH_BATCH", 40)
    ncbi.add(ESEARCH, recorded("esearch2.xml"))  # 100 PMIDs
    ncbi.add(EFETCH, recorded("pubmed2.xml"))

    engine.search(SearchRequest("cancer", max_results=100, offset=10))

    fetches = [sent(ncbi, EFETCH, index) for index in range(3)]
    assert [(f["retstart"], f["retmax"]) for f in fetches] == [
        ("10", "40"), ("50", "40"), ("90", "20"),
    ]  # fmt: skip


def test_dates_become_a_publication_date_range(ncbi: ReplayServer, engine: PubMedEngine) -> None:
    ncbi.add(ESEARCH, recorded("esearch8.xml"))

    engine.search(SearchRequest("x", date_from="2015", date_to="2018-06-30"))
    engine.search(SearchRequest("x", date_from="2020-01"))

    bounded, open_ended = sent(ncbi, ESEARCH, 0), sent(ncbi, ESEARCH, 1)
    assert (bounded["datetype"], bounded["mindate"], bounded["maxdate"]) == (
        "pdat", "2015", "2018/06/30",
    )  # fmt: skip
    assert (open_ended["mindate"], open_ended["maxdate"]) == ("2020/01", "3000/12/31")


def test_no_match_is_an_empty_answer_without_a_fetch(
    ncbi: ReplayServer, engine: PubMedEngine
) -> None:
    ncbi.add(ESEARCH, recorded("esearch8.xml"))  # Count 0, PhraseNotFound

    assert engine.search(SearchRequest("abcXYZ")) == []
    assert paths(ncbi) == [ESEARCH]


def test_search_by_author_uses_the_author_tag(ncbi: ReplayServer, engine: PubMedEngine) -> None:
    ncbi.add(ESEARCH, recorded("esearch8.xml"))

    engine.search_by_author("Bao Y", SearchRequest("Bao Y", date_from="2017"))
    engine.search_by_author("bao ying[fau]", SearchRequest("bao ying[fau]"))

    assert sent(ncbi, ESEARCH, 0)["term"] == '"Bao Y"[au]'
    assert sent(ncbi, ESEARCH, 0)["mindate"] == "2017"
    assert sent(ncbi, ESEARCH, 1)["term"] == "bao ying[fau]"


def test_categories_and_depth_past_ten_thousand_are_refused_without_a_request(
    ncbi: ReplayServer, engine: PubMedEngine
) -> None:
    with pytest.raises(UnsupportedOperation, match=r"\[pt\]"):
        engine.search(SearchRequest("x", categories=("Review",)))
    with pytest.raises(EngineError, match="10,000"):
        engine.search(SearchRequest("x", offset=10_000))
    assert ncbi.requests == []


# --- one paper ------------------------------------------------------------------------------


def test_details_by_pmid_pmcid_and_doi(ncbi: ReplayServer, engine: PubMedEngine) -> None:
    ncbi.add(EFETCH, recorded("pubmed4.xml"))
    ncbi.add(ESEARCH, recorded("esearch1.xml"))

    by_pmid = engine.get_paper_details("https://pubmed.ncbi.nlm.nih.gov/27797938/")
    assert sent(ncbi, EFETCH)["id"] == "27797938" and paths(ncbi) == [EFETCH]
    by_doi = engine.get_paper_details("doi:10.1136/gutjnl-2016-312510")
    assert sent(ncbi, ESEARCH)["term"] == '"10.1136/gutjnl-2016-312510"[doi]'
    by_pmcid = engine.get_paper_details("pmc5442267")
    assert sent(ncbi, ESEARCH)["term"] == "PMC5442267"
    assert by_pmid.title == by_doi.title == by_pmcid.title
    assert by_pmcid.identifiers["pmid"] == "27797938"


def test_details_of_a_paper_pubmed_does_not_have_are_not_found(
    ncbi: ReplayServer, engine: PubMedEngine
) -> None:
    ncbi.add(EFETCH, recorded("pubmed1.xml"))  # other citations than the one asked for
    ncbi.add(ESEARCH, recorded("esearch8.xml"))

    with pytest.raises(PaperNotFoundAtSource):
        engine.get_paper_details("31452104")
    with pytest.raises(PaperNotFoundAtSource):
        engine.get_paper_details("10.1000/not-in-pubmed")
    with pytest.raises(EngineError, match="PMID, PMCID or DOI"):
        engine.get_paper_details("attention is all you need")


# --- failures ------------------------------------------------------------------------------


def test_an_esearch_error_is_an_engine_error_with_ncbis_message(
    ncbi: ReplayServer, engine: PubMedEngine
) -> None:
    ncbi.add(ESEARCH, recorded("esearch-error.xml"))

    with pytest.raises(EngineError, match="Invalid db name specified: fleegle") as caught:
        engine.search(SearchRequest("x"))
    assert not isinstance(caught.value, TransientEngineError)


@pytest.mark.parametrize(
    ("reply", "error", "reason"),
    [
        (Reply(429, {"error": "API rate limit exceeded", "count": "4", "limit": "3"}),
         RateLimited, "quota"),
        (Reply(200, {"error": "API rate limit exceeded", "count": "4", "limit": "3"}),
         RateLimited, "quota"),
        (Reply(503, "<html><body>Service Unavailable</body></html>"),
         TransientEngineError, "server_error"),
        (Reply(200, "<eSearchResult><ERROR>Search Backend failed: read timeout</ERROR>"
                    "</eSearchResult>"), TransientEngineError, "server_error"),
        (Reply(200, "<!DOCTYPE x [<!ENTITY a 'aaaa'>]><eSearchResult>&a;</eSearchResult>"),
         EngineError, "error"),
        (Reply(200, "<eSearchResult><Count>3"), EngineError, "error"),
    ],
)  # fmt: skip
def test_ncbi_failures_map_to_engine_errors(
    ncbi: ReplayServer, engine: PubMedEngine, reply: Reply, error: type, reason: str
) -> None:
    ncbi.add(ESEARCH, reply)

    with pytest.raises(EngineError) as caught:
        engine.search(SearchRequest("x"))
    assert type(caught.value) is error and caught.value.reason == reason


def test_the_api_key_is_sent_but_never_in_messages_or_logs(
    ncbi: ReplayServer, settings: Any, caplog: pytest.LogCaptureFixture
) -> None:
    settings.NCBI_API_KEY = KEY
    settings.ENGINE_CACHE_TTLS = {"pubmed": 0}
    settings.ENGINE_MAX_RETRIES = 1
    settings.ENGINES_ENABLED = ["pubmed"]
    registry.refresh()
    caplog.set_level(logging.DEBUG)
    # NCBI echoes the key in its refusals.
    ncbi.add(
        ESEARCH,
        Reply(429, {"error": "API rate limit exceeded", "api-key": KEY, "count": "11",
                    "limit": "10"}),
    )  # fmt: skip
    call = EngineCall.search("pubmed", SearchRequest("asthma"))
    limited = call_engine(call.engine, call.operation, call.arguments, timeout_seconds=5)
    assert all(sent(ncbi, ESEARCH, i)["api_key"] == KEY for i in range(len(ncbi.requests)))
    assert limited.outcome == "rate_limited" and limited.attempts == 2
    assert "API rate limit exceeded" in limited.message and KEY not in limited.message

    ncbi.add(
        ESEARCH,
        Reply(400, {"error": "API key invalid", "api-key": KEY, "type": "invalid",
                    "status": "unknown"}),
    )  # fmt: skip
    refused = call_engine(call.engine, call.operation, call.arguments, timeout_seconds=5)
    assert refused.outcome == "bad_key" and "API key invalid" in refused.message
    assert KEY not in refused.message
    with pytest.raises(BadKey) as caught:
        PubMedEngine().search(SearchRequest("asthma"))
    assert KEY not in str(caught.value)
    assert caplog.records and not any(KEY in record.getMessage() for record in caplog.records)
    registry.refresh()


def test_the_rate_limit_is_three_a_second_or_ten_with_a_key(
    settings: Any, engine: PubMedEngine
) -> None:
    settings.ENGINE_RATE_LIMITS = {}
    settings.NCBI_API_KEY = ""
    assert engine.current_rate_limit() == "3/second"
    assert (ratelimit.rate_for(engine).amount, ratelimit.rate_for(engine).get_expiry()) == (3, 1)
    settings.NCBI_API_KEY = KEY
    assert engine.current_rate_limit() == "10/second"
    assert ratelimit.rate_for(engine).amount == 10
    settings.ENGINE_RATE_LIMITS = {"pubmed": "5/second"}  # the setting still wins
    assert ratelimit.rate_for(engine).amount == 5


def test_each_request_of_a_call_takes_a_rate_limit_slot(ncbi: ReplayServer, settings: Any) -> None:
    """NCBI counts requests: a search is an ESearch and an EFetch, so two slots."""
    settings.ENGINE_RATE_LIMITS = {"pubmed": "10/minute"}
    settings.ENGINE_CACHE_TTLS = {"pubmed": 0}
    settings.ENGINES_ENABLED = ["pubmed"]
    registry.refresh()
    engine = registry.get("pubmed")
    ratelimit.reset(engine)
    ncbi.add(ESEARCH, recorded("esearch1.xml"))
    ncbi.add(EFETCH, recorded("pubmed2.xml"))

    call = EngineCall.search("pubmed", SearchRequest("cryopreservation", max_results=2))
    outcome = call_engine(call.engine, call.operation, call.arguments, timeout_seconds=5)

    assert outcome.ok and len(outcome.result) == 2
    assert ratelimit.state(engine).remaining == 8
    ratelimit.reset(engine)
    registry.refresh()


# --- through the product -----------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_search_papers_with_pubmed_saves_its_citations_with_pmids(
    ncbi: ReplayServer, settings: Any
) -> None:
    settings.ENGINES_ENABLED = ["pubmed"]
    settings.CELERY_TASK_ALWAYS_EAGER = True  # a worker would not see the local server
    settings.ENGINE_CACHE_TTLS = {"pubmed": 0}
    registry.refresh()
    ncbi.add(ESEARCH, recorded("esearch2.xml"))
    ncbi.add(EFETCH, recorded("pubmed2.xml"))

    page = search_everywhere(query="cryopreservation[mh] AND sperm*[tiab]", engines=["pubmed"],
                             limit=5)  # fmt: skip

    assert sent(ncbi, ESEARCH)["term"] == "cryopreservation[mh] AND sperm*[tiab]"
    assert page.engines["pubmed"].status == "ok" and page.engines["pubmed"].count == 2
    assert [result.engines for result in page.results] == [["pubmed"], ["pubmed"]]
    paper_id = page.results[0].paper_id
    assert paper_id is not None
    paper = Paper.objects.get(pk=paper_id)
    assert paper.title.startswith("Is cryopreservation a homogeneous process?")
    assert paper.doi == "10.1006/cryo.2001.2328"
    identifiers = dict(paper.identifiers.values_list("scheme", "value"))
    assert identifiers["pmid"] == "11748933"
    assert "Cryopreservation" in set(paper.keywords.values_list("name", flat=True))
    registry.refresh()


def test_pubmed_is_a_built_in_engine_speaking_its_own_query_language(settings: Any) -> None:
    settings.ENGINES_ENABLED = []
    registry.refresh()
    engine = registry.get("pubmed")
    assert isinstance(engine, PubMedEngine) and engine.query_dialect == "pubmed"
    assert engine.is_available()  # no key needed
    assert set(engine.describe()["operations"]) == {
        "search", "search_by_author", "get_paper_details",
    }  # fmt: skip


def test_a_medline_date_gives_its_first_year_and_month() -> None:
    """MedlineDate is free text ('1998 Dec-1999 Jan'; PubMed DTD); none of the recordings
    has one, so the element is built here."""
    cases = {
        "<PubDate><MedlineDate>1998 Dec-1999 Jan</MedlineDate></PubDate>": (1998, "1998-12"),
        "<PubDate><MedlineDate>2018 Winter</MedlineDate></PubDate>": (2018, "2018"),
        "<PubDate><MedlineDate>2000-2001</MedlineDate></PubDate>": (2000, "2000"),
        "<PubDate><Year>2009</Year><Month>Jul</Month><Day>4</Day></PubDate>": (2009, "2009-07-04"),
    }
    for xml, expected in cases.items():
        assert pubmed._pub_date(ET.fromstring(xml)) == expected  # noqa: S314 - our own XML


@pytest.mark.django_db(transaction=True)
def test_search_by_author_logs_the_term_pubmed_was_sent(ncbi: ReplayServer, settings: Any) -> None:
    settings.ENGINES_ENABLED = ["pubmed"]
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.ENGINE_CACHE_TTLS = {"pubmed": 0}
    registry.refresh()
    ncbi.add(ESEARCH, recorded("esearch2.xml"))
    ncbi.add(EFETCH, recorded("pubmed2.xml"))

    page = search_by_author_everywhere(author_name="Helen K Reddel", engines=["pubmed"], limit=5)

    status = page.engines["pubmed"].model_dump()
    assert status["query_sent"] == '"Helen K Reddel"[au]' == sent(ncbi, ESEARCH)["term"]
    assert status["total"] == 42249 and status["searched_at"]
    registry.refresh()
