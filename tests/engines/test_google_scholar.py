"""The Google Scholar engine: the real `serpapi` client (and httpx for BibTeX) against a
local server replaying SerpApi answers (tests/fixtures/serpapi, see SOURCE.txt for which
are recorded and which are built from SerpApi's documented error shapes)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from engines.base import (
    CATEGORIES,
    DETAILS,
    EngineError,
    EngineNotAvailable,
    EngineTimeout,
    EngineUnreachable,
    PaperNotFoundAtSource,
    PaperRef,
    RateLimited,
    SearchRequest,
    TransientEngineError,
    UnsupportedOperation,
)
from engines.google_scholar import GoogleScholarEngine
from tests.engines.replay import ReplayServer, Reply

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "serpapi"
KEY = "test-serp-key-5f0e2c9a71"
MATH = "rezam7596_q-math_num20.json"
MINECRAFT = "dimitryzub_scrape-google-scholar-py_README_organic_results_q-minecraft.json"
CITE = "dimitryzub_blog_cite_citations_links_PkuLyccmJ74J.json"
SCHOLAR_BIB_HOST = "https://scholar.googleusercontent.com"


def load(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


def minecraft_answer() -> dict[str, Any]:
    """The recorded organic results, inside the answer they came in."""
    return {"search_metadata": {"status": "Success"}, "organic_results": load(MINECRAFT)}


def sent(server: ReplayServer, index: int = -1) -> dict[str, str]:
    """The query parameters of a request the client really sent."""
    return {key: values[0] for key, values in server.requests[index].query.items()}


@pytest.fixture
def serpapi(replay_server: ReplayServer, settings) -> ReplayServer:
    settings.SERPAPI_URL = replay_server.url
    settings.SERP_API_KEY = KEY
    return replay_server


@pytest.fixture
def engine() -> GoogleScholarEngine:
    return GoogleScholarEngine()


# --- availability ---------------------------------------------------------------------


def test_missing_key_makes_the_engine_unavailable(serpapi, settings, engine):
    settings.SERP_API_KEY = ""

    assert engine.unavailable_reason() == "SERP_API_KEY is not set"
    assert not engine.is_available()
    with pytest.raises(EngineNotAvailable, match="SERP_API_KEY is not set"):
        engine.search(SearchRequest("math"))
    assert serpapi.requests == []


def test_key_set_makes_it_available(serpapi, engine):
    assert engine.unavailable_reason() == ""
    assert engine.is_available()


# --- search -----------------------------------------------------------------------------


def test_search_parses_recorded_organic_results(serpapi, engine):
    serpapi.add("/search", Reply(200, load(MATH)), query={"engine": "google_scholar", "q": "math"})

    records = engine.search(SearchRequest("math", max_results=20))

    assert len(records) == 20
    assert records.total == 7_340_000  # search_information.total_results: the search log's
    nosek = records[0]
    assert nosek.title == "Math= male, me= female, therefore math≠ me."
    # Scholar's summary names both authors; only Nosek has a profile (structured author).
    assert [a.name for a in nosek.authors] == ["BA Nosek", "MR Banaji"]
    assert nosek.authors[0].profile_link.startswith(
        "https://scholar.google.com/citations?user=ztt_"
    )
    assert nosek.authors[1].profile_link == ""
    assert nosek.metadata["authors_truncated"] is True
    assert nosek.metadata["scholar_author_ids"] == {"BA Nosek": "ztt_j28AAAAJ"}
    # "Journal of personality and …" is cut short: not a venue, but kept.
    assert nosek.venue == ""
    assert nosek.metadata["venue_truncated"] == "Journal of personality and …"
    assert nosek.year == 2002
    assert nosek.publication_info == (
        "BA Nosek, MR Banaji… - Journal of personality and …, 2002 - psycnet.apa.org"
    )
    assert nosek.metadata["host"] == "psycnet.apa.org"
    assert nosek.snippet.startswith("… A large body of literature")
    assert (nosek.citation_count, nosek.versions_count) == (1470, 25)
    assert nosek.scholar["cites_id"] == "12435291760799138133"
    assert nosek.scholar["result_id"] == "VUHGsPgHk6wJ"
    assert nosek.scholar["versions_link"].startswith("https://scholar.google.com/scholar?cluster=")
    assert nosek.scholar["related_pages_link"].startswith(
        "https://scholar.google.com/scholar?q=related:"
    )
    assert (
        nosek.pdf_url
        == "http://dspace.ashoka.edu.in/bitstream/123456789/4583/1/2002_Nosek_JPSP.pdf"
    )
    assert nosek.resources[0]["file_format"] == "PDF"
    assert (nosek.source, nosek.source_id) == ("google_scholar", "VUHGsPgHk6wJ")
    assert nosek.source_url.startswith("https://psycnet.apa.org/journals/psp/83/1/44.html")

    culture = records[1]
    assert culture.title == "Culture, gender, and math"
    assert [a.name for a in culture.authors] == ["L Guiso", "F Monte", "P Sapienza", "L Zingales"]
    assert (culture.venue, culture.year) == ("Science", 2008)
    assert culture.doi == "10.1126/science.1154094"  # from the science.org /doi/ link
    assert "authors_truncated" not in culture.metadata


def test_search_keeps_results_without_structured_authors_or_venue(serpapi, engine):
    serpapi.add("/search", Reply(200, load(MATH)))

    records = {
        r.scholar["result_id"]: r for r in engine.search(SearchRequest("math", max_results=20))
    }

    hyde = records["F_5myHzNdfMJ"]  # no authors[], no versions, a cached page
    assert [a.name for a in hyde.authors] == ["A Hyde"]
    assert hyde.versions_count == 0 and "versions_link" not in hyde.scholar
    assert hyde.scholar["cached_page_link"].startswith("https://scholar.googleusercontent.com/")
    assert hyde.pdf_url == ""
    book = next(r for r in records.values() if r.title == "Winning at math")
    assert (book.entry_type, book.year, book.venue) == ("book", 1997, "")
    assert book.metadata["host"] == "books.google.com"
    landing = next(r for r in records.values() if r.title.startswith("A meta-analysis"))
    assert landing.doi == "10.1037/bul0000307"  # psycnet's doiLanding?doi=


def test_query_sent_carries_engine_paging_and_key(serpapi, engine):
    serpapi.add("/search", Reply(200, load(MATH)))

    engine.search(SearchRequest("math", max_results=20))
    few = engine.search(SearchRequest("math", max_results=5, offset=20))
    engine.search(SearchRequest("math", max_results=100))

    assert sent(serpapi, 0) == {
        "engine": "google_scholar",
        "q": "math",
        "num": "20",
        "hl": "en",
        "output": "json",
        "api_key": KEY,
        "source": "python",
    }
    assert (sent(serpapi, 1)["num"], sent(serpapi, 1)["start"]) == ("5", "20")
    assert len(few) == 5
    assert sent(serpapi, 2)["num"] == "20"  # Scholar's page limit
    assert len(serpapi.requests) == 3  # one request per call


def test_years_of_the_date_range_reach_the_query(serpapi, engine):
    serpapi.add("/search", Reply(200, load(MATH)))

    engine.search(
        SearchRequest("math", date_from="2018-03-01", date_to="2020", categories=("cs.CL",))
    )

    query = sent(serpapi)
    assert (query["as_ylo"], query["as_yhi"]) == ("2018", "2020")
    assert "cs.CL" not in json.dumps(query)  # Scholar has no categories


@pytest.mark.parametrize(
    "request_",
    [SearchRequest("math", date_from="March 2020"), SearchRequest("  ")],
)
def test_bad_requests_fail_before_any_call(serpapi, engine, request_):
    with pytest.raises(EngineError):
        engine.search(request_)
    assert serpapi.requests == []


def test_zero_max_results_asks_nothing(serpapi, engine):
    assert engine.search(SearchRequest("math", max_results=0)) == []
    assert serpapi.requests == []


def test_author_search_uses_the_author_operator(serpapi, engine):
    serpapi.add("/search", Reply(200, minecraft_answer()))

    records = engine.search_by_author("S Nebel", SearchRequest("S Nebel", max_results=10))

    assert sent(serpapi)["q"] == 'author:"S Nebel"'
    first = records[0]
    assert first.title.startswith("Mining learning and crafting scientific experiments")
    assert [a.name for a in first.authors] == ["S Nebel", "S Schneider", "GD Rey"]
    assert first.authors[0].profile_link.startswith("https://scholar.google.com/citations?user=")


def test_empty_answer_is_an_empty_list(serpapi, engine):
    serpapi.add("/search", Reply(200, load("empty_results.json")))

    assert engine.search(SearchRequest("qwzxqwzx vbnmvbnm plkjplkj")) == []


# --- citing papers ------------------------------------------------------------------------


def test_citing_papers_ask_for_the_cites_id(serpapi, engine):
    serpapi.add("/search", Reply(200, minecraft_answer()), query={"cites": "12435291760799138133"})
    paper = PaperRef(title="Math= male", scholar={"cites_id": "12435291760799138133"})

    records = engine.get_citing_papers(paper, max_results=3)

    assert [r.scholar["result_id"] for r in records] == [
        "61OUs-3P374J",
        "_Lo9erywZPUJ",
        "wOTRJ8q0KIsJ",
    ]
    query = sent(serpapi)
    assert (query["engine"], query["cites"], query["num"]) == (
        "google_scholar",
        "12435291760799138133",
        "3",
    )
    assert "q" not in query


def test_citing_papers_need_a_cites_id(serpapi, engine):
    with pytest.raises(PaperNotFoundAtSource, match="cites_id"):
        engine.get_citing_papers(PaperRef(title="Attention Is All You Need", doi="10.1/x"), 5)
    assert serpapi.requests == []


# --- BibTeX -------------------------------------------------------------------------------


def cite_answer(server: ReplayServer) -> dict[str, Any]:
    """The recorded cite output as google_scholar_cite answers it, its links pointing at the
    local server instead of scholar.googleusercontent.com."""
    recorded = load(CITE)[0]
    links = [
        {**link, "link": link["link"].replace(SCHOLAR_BIB_HOST, server.url)}
        for link in recorded["links"]
    ]
    return {
        "search_metadata": {"status": "Success"},
        "citations": recorded["citations"],
        "links": links,
    }


def test_bibtex_comes_from_the_cite_links_bibtex_download(serpapi, engine):
    bibtex = (FIXTURES / "bibtex_PkuLyccmJ74J.bib").read_text(encoding="utf-8")
    serpapi.add(
        "/search", Reply(200, cite_answer(serpapi)), query={"engine": "google_scholar_cite"}
    )
    serpapi.add(
        "/scholar.bib", Reply(200, bibtex, {"Content-Type": "text/x-bibtex; charset=UTF-8"})
    )

    text = engine.get_bibtex(
        PaperRef(title="Morphological astronomy", scholar={"result_id": "PkuLyccmJ74J"})
    )

    assert text == bibtex.strip()
    assert sent(serpapi, 0)["q"] == "PkuLyccmJ74J"
    download = sent(serpapi, 1)
    assert serpapi.requests[1].path == "/scholar.bib"
    assert download["q"] == "info:PkuLyccmJ74J:scholar.google.com/"
    assert "api_key" not in download  # the key goes to SerpApi only, never to Google


def test_refused_bibtex_download_is_a_permanent_error(serpapi, engine):
    serpapi.add("/search", Reply(200, cite_answer(serpapi)))
    page = (FIXTURES / "scholar_bib_403.html").read_bytes()
    serpapi.add("/scholar.bib", Reply(403, page, {"Content-Type": "text/html; charset=UTF-8"}))

    with pytest.raises(EngineError, match="HTTP 403") as caught:
        engine.get_bibtex(PaperRef(scholar={"result_id": "PkuLyccmJ74J"}))

    assert not isinstance(caught.value, (TransientEngineError, EngineNotAvailable))


def test_bibtex_link_answering_html_is_an_error(serpapi, engine):
    serpapi.add("/search", Reply(200, cite_answer(serpapi)))
    serpapi.add("/scholar.bib", Reply(200, "<html>Please show you're not a robot</html>"))

    with pytest.raises(EngineError, match="something else"):
        engine.get_bibtex(PaperRef(scholar={"result_id": "PkuLyccmJ74J"}))


def test_slow_bibtex_download_times_out_as_transient(serpapi, engine, monkeypatch):
    monkeypatch.setattr(GoogleScholarEngine, "timeout", 0.3)
    serpapi.add("/search", Reply(200, cite_answer(serpapi)))
    serpapi.add("/scholar.bib", Reply(200, "@book{x,}", delay=2.0))

    with pytest.raises(EngineTimeout, match=r"within 0\.3 s"):
        engine.get_bibtex(PaperRef(scholar={"result_id": "PkuLyccmJ74J"}))


def test_bibtex_needs_a_result_id(serpapi, engine):
    with pytest.raises(PaperNotFoundAtSource, match="result_id"):
        engine.get_bibtex(PaperRef(title="Morphological astronomy"))
    assert serpapi.requests == []


# --- failures -----------------------------------------------------------------------------


def test_bad_request_is_a_permanent_error(serpapi, engine):
    serpapi.add("/search", Reply(400, load("error_400_missing_query.json")))

    with pytest.raises(EngineError, match="Missing query `q` parameter") as caught:
        engine.search(SearchRequest("math"))

    assert type(caught.value) is EngineError
    assert caught.value.http_status == 400


@pytest.mark.parametrize(
    ("status", "fixture", "outcome"),
    [
        (401, "error_401_invalid_api_key.json", "bad_key"),
        (429, "error_429_out_of_searches.json", "rate_limited"),
        (200, "error_sample_account_credit.json", "rate_limited"),
        (429, "error_sample_account_credit.json", "rate_limited"),
    ],
)
def test_account_problems_make_the_engine_unavailable(serpapi, engine, status, fixture, outcome):
    serpapi.add("/search", Reply(status, load(fixture)))

    with pytest.raises(EngineNotAvailable) as caught:
        engine.search(SearchRequest("math"))

    assert load(fixture)["error"] in caught.value.message
    # Issue 20: a rejected key and spent searches are told apart.
    assert caught.value.outcome == outcome


@pytest.mark.parametrize(
    ("reply", "error", "retry_after"),
    [
        (Reply(429, {"error": "Too many requests."}, {"Retry-After": "30"}), RateLimited, 30.0),
        (Reply(503, load("error_503_search_failed.json")), TransientEngineError, None),
        (Reply(500, "<html>Internal Server Error</html>"), TransientEngineError, None),
    ],
)
def test_throttling_and_server_errors_are_transient(serpapi, engine, reply, error, retry_after):
    serpapi.add("/search", reply)

    with pytest.raises(TransientEngineError) as caught:
        engine.search(SearchRequest("math"))

    assert type(caught.value) is error
    assert caught.value.http_status == reply.status
    assert caught.value.retry_after == retry_after


def test_non_json_answer_is_an_error(serpapi, engine):
    serpapi.add("/search", Reply(200, "<html>maintenance</html>"))

    with pytest.raises(EngineError, match="other than JSON"):
        engine.search(SearchRequest("math"))


def test_slow_answer_times_out_as_transient(serpapi, engine, monkeypatch):
    monkeypatch.setattr(GoogleScholarEngine, "timeout", 0.3)
    serpapi.add("/search", Reply(200, load(MATH), delay=2.0))

    started = time.monotonic()
    with pytest.raises(EngineTimeout, match=r"within 0\.3 s"):
        engine.search(SearchRequest("math"))

    assert time.monotonic() - started < 1.5


def test_unreachable_serpapi_is_transient(settings, engine):
    settings.SERP_API_KEY = KEY
    settings.SERPAPI_URL = "http://127.0.0.1:9"  # discard port: nothing listens

    with pytest.raises(EngineUnreachable, match="SerpApi could not be reached") as caught:
        engine.search(SearchRequest("math"))

    assert caught.value.reason == "refused"

    # requests' own error text holds the URL, api_key included: it must not travel along.
    assert caught.value.__cause__ is None and caught.value.__suppress_context__


def test_no_error_message_contains_the_api_key(serpapi, settings, engine, monkeypatch):
    monkeypatch.setattr(GoogleScholarEngine, "timeout", 0.3)
    scenarios = [
        Reply(400, {"error": f"Invalid value for api_key {KEY}."}),
        Reply(401, load("error_401_invalid_api_key.json")),
        Reply(429, load("error_429_out_of_searches.json")),
        Reply(503, load("error_503_search_failed.json")),
        Reply(502, "Bad Gateway"),
        Reply(200, "not json"),
        Reply(200, load(MATH), delay=2.0),
    ]
    errors: list[EngineError] = []
    for reply in scenarios:
        serpapi.add("/search", reply)
        with pytest.raises(EngineError) as caught:
            engine.search(SearchRequest("math"))
        errors.append(caught.value)
    settings.SERPAPI_URL = "http://127.0.0.1:9"
    with pytest.raises(EngineError) as caught:
        engine.search(SearchRequest("math"))
    errors.append(caught.value)

    assert len(errors) == len(scenarios) + 1
    for error in errors:
        assert KEY not in error.message and KEY not in str(error) and KEY not in repr(error)
    assert "***" in errors[0].message
    # ... while every request did carry it.
    assert all(request.query["api_key"] == [KEY] for request in serpapi.requests)


def test_details_and_categories_are_unsupported(serpapi, engine):
    assert DETAILS not in engine.operations and CATEGORIES not in engine.operations
    with pytest.raises(UnsupportedOperation):
        engine.get_paper_details("VUHGsPgHk6wJ")
    with pytest.raises(UnsupportedOperation):
        engine.categories()
    assert serpapi.requests == []
