"""The arXiv engine: the real `arxiv` client against a local server replaying answers the
live arXiv API gave (tests/fixtures/arxiv, see SOURCE.txt)."""

from __future__ import annotations

import json
import re
import time
from urllib.parse import parse_qs, urlsplit

import pytest
from limits import parse as parse_rate

from engines.arxiv import ArxivEngine
from engines.base import (
    CITING,
    EngineError,
    EngineTimeout,
    EngineUnreachable,
    PaperNotFoundAtSource,
    PaperRef,
    RateLimited,
    SearchRequest,
    TransientEngineError,
    UnsupportedOperation,
)
from tests.engines.arxiv_builders import API_PATH, FIXTURES, recorded, sent
from tests.engines.replay import ReplayServer, Reply


def recorded_query(name: str, *keys: str) -> dict[str, str]:
    """Parameters of the URL the recording was made for (to route on them)."""
    url = json.loads((FIXTURES / name).read_text(encoding="utf-8"))["url"]
    query = parse_qs(urlsplit(url).query, keep_blank_values=True)
    return {key: query[key][0] for key in keys}


@pytest.fixture
def arxiv(replay_server: ReplayServer, settings) -> ReplayServer:
    settings.ARXIV_API_URL = replay_server.url + API_PATH
    return replay_server


@pytest.fixture
def engine() -> ArxivEngine:
    return ArxivEngine()


def test_search_maps_recorded_entries_to_records(arxiv, engine):
    name = "q_testing_s0_m10_bc5a6c384fe9.json"
    arxiv.add(API_PATH, recorded(name), query=recorded_query(name, "search_query", "start"))

    records = engine.search(SearchRequest("testing", max_results=10))

    assert len(records) == 10
    first = records[0]
    assert first.title == (
        "Testing Deep Learning Models: A First Comparative Study of Multiple Testing Techniques"
    )
    assert [a.name for a in first.authors] == [
        "Mohit Kumar Ahuja",
        "Arnaud Gotlieb",
        "Helge Spieker",
    ]
    assert first.arxiv_id == "2202.12139"
    assert first.source == "arxiv"
    assert first.source_id == "2202.12139v1"
    assert first.source_url == "http://arxiv.org/abs/2202.12139v1"
    assert first.pdf_url == "https://arxiv.org/pdf/2202.12139v1"
    assert first.doi == "10.1109/icstw55395.2022.00035"
    assert first.publication_info.startswith("Artificial Intelligence in Software Testing @ 2022")
    assert (first.year, first.publication_date) == (2022, "2022-02-24")
    assert first.categories == ["cs.SE", "cs.LG"]  # primary first, no repeats
    assert first.metadata["primary_category"] == "cs.SE"
    assert first.abstract.startswith("Deep Learning (DL) has revolutionized")
    # The bytes arrive as UTF-8: accented names survive.
    assert records[1].authors[0].name == "Aurora Ramírez"
    assert records[5].doi is None  # no DOI recorded for 1202.4527
    assert records[5].metadata["comment"] == "GUI Testing, Test case generation"
    assert sent(arxiv) == {
        "search_query": "testing",
        "id_list": "",
        "sortBy": "relevance",
        "sortOrder": "descending",
        "start": "0",
        "max_results": "10",
    }


def test_offset_and_max_results_select_one_page(arxiv, engine):
    page_of_15 = "q_testing_s0_m15_80c242b59d59.json"
    from_5 = "q_testing_s5_m10_c0e94a259d4a.json"
    arxiv.add(
        API_PATH, recorded(page_of_15), query=recorded_query(page_of_15, "start", "max_results")
    )
    arxiv.add(API_PATH, recorded(from_5), query=recorded_query(from_5, "start", "max_results"))

    fifteen = engine.search(SearchRequest("testing", max_results=15))
    page = engine.search(SearchRequest("testing", max_results=10, offset=5))

    assert len(fifteen) == 15
    assert [r.source_id for r in page] == [r.source_id for r in fifteen[5:15]]
    assert page[0].title == "Study Paper on Test Case generation for GUI Based Testing"
    assert len(arxiv.requests) == 2  # one request per call: no paging or retrying of its own
    assert (sent(arxiv)["start"], sent(arxiv)["max_results"]) == ("5", "10")


def test_zero_max_results_asks_nothing(arxiv, engine):
    assert engine.search(SearchRequest("testing", max_results=0)) == []
    assert arxiv.requests == []


def test_categories_and_dates_reach_the_query(arxiv, engine):
    # Any recorded feed will do: what is checked is the query the client sent.
    arxiv.add(API_PATH, recorded("q_testing_s0_m10_bc5a6c384fe9.json"))

    engine.search(
        SearchRequest(
            "testing", date_from="2020-01-15", date_to="2021-02", categories=("cs.SE", "cs.LG")
        )
    )
    engine.search(SearchRequest("testing", date_from="2019", categories=("cs.CL",)))

    assert sent(arxiv, 0)["search_query"] == (
        "(testing) AND (cat:cs.SE OR cat:cs.LG) AND submittedDate:[202001150000 TO 202102282359]"
    )
    second = sent(arxiv, 1)["search_query"]
    assert second.startswith("(testing) AND cat:cs.CL AND submittedDate:[201901010000 TO ")
    assert second.endswith("2359]")


@pytest.mark.parametrize(
    ("request_", "complaint"),
    [
        (SearchRequest("testing", date_from="2024-02-30"), "does not exist"),
        (SearchRequest("testing", date_to="last week"), "is not YYYY"),
        (SearchRequest("testing", categories=("cs.CL) OR (all:x",)), "not an arXiv category"),
        (SearchRequest("   "), "needs a query"),
    ],
)
def test_bad_filters_fail_before_any_request(arxiv, engine, request_, complaint):
    with pytest.raises(EngineError, match=complaint) as caught:
        engine.search(request_)
    assert not isinstance(caught.value, TransientEngineError)
    assert arxiv.requests == []


def test_author_search_asks_for_the_author_newest_first(arxiv, engine):
    arxiv.add(API_PATH, recorded("id_1707.08567_s0_m100_6a1afebfc6a3.json"))

    records = engine.search_by_author(
        'A. J. "Han" Vinck', SearchRequest("A. J. Han Vinck", max_results=5, date_to="2018")
    )

    assert "A. J. Han Vinck" in [a.name for a in records[0].authors]
    assert len(records[0].authors) == 34
    query = sent(arxiv)
    assert query["search_query"] == (
        '(au:"A. J. Han Vinck") AND submittedDate:[199101010000 TO 201812312359]'
    )
    assert (query["sortBy"], query["max_results"]) == ("submittedDate", "5")


@pytest.mark.parametrize(
    ("paper_id", "fixture", "id_list", "expected"),
    [
        (
            "2104.12255v1",
            "id_2104.12255v1_s0_m100_6ae69987ffe1.json",
            "2104.12255v1",
            {"title": "0", "arxiv_id": "2104.12255", "source_id": "2104.12255v1", "year": 2021},
        ),
        (
            "arXiv:quant-ph/0201082v1",
            "id_quant-ph_0201082v1_s0_m100_86989fe779ef.json",
            "quant-ph/0201082v1",
            {
                "title": "Quantum Computers and Quantum Computer Languages: Quantum Assembly "
                "Language and Quantum C Language",
                "arxiv_id": "quant-ph/0201082",
                "categories": ["quant-ph", "cs.PL"],
                "pdf_url": "https://arxiv.org/pdf/quant-ph/0201082v1",
            },
        ),
        (
            "https://arxiv.org/abs/astro-ph/0601001",
            "id_astro-ph_0601001_s0_m100_3150dca9dc76.json",
            "astro-ph/0601001",
            {
                "source_id": "astro-ph/0601001v1",
                "publication_info": "ActaAstron.56:1-50,2006",
                "publication_date": "2006-01-02",
            },
        ),
        (
            "1605.08386",
            "id_1605.08386_s0_m100_199195aa31ad.json",
            "1605.08386",
            {
                "title": "Heat-bath random walks with Markov bases",
                "categories": ["math.CO", "math.ST"],
            },
        ),
    ],
)
def test_details_by_new_and_old_ids(arxiv, engine, paper_id, fixture, id_list, expected):
    arxiv.add(API_PATH, recorded(fixture), query={"id_list": id_list})

    record = engine.get_paper_details(paper_id)

    assert {field: getattr(record, field) for field in expected} == expected
    assert sent(arxiv)["id_list"] == id_list


def test_details_keep_affiliations_and_comment(arxiv, engine):
    arxiv.add(API_PATH, recorded("id_astro-ph_0601001_s0_m100_3150dca9dc76.json"))

    record = engine.get_paper_details("astro-ph/0601001")

    assert [(a.name, a.affiliation) for a in record.authors][:2] == [
        ("Andrew Gould", "Ohio State"),
        ("Susan Dorsher", "Ohio State"),
    ]
    assert record.metadata["comment"].startswith("62 pages including 16 figures")


@pytest.mark.parametrize(
    ("paper_id", "fixture"),
    [
        ("0000.0000", "id_0000.0000_s0_m100_8b51d9633a68.json"),
        ("0808.05394", "id_0808.05394_s0_m100_7b0c7d0a7cdd.json"),
    ],
)
def test_unknown_id_is_not_found(arxiv, engine, paper_id, fixture):
    arxiv.add(API_PATH, recorded(fixture), query={"id_list": paper_id})

    with pytest.raises(PaperNotFoundAtSource, match=paper_id):
        engine.get_paper_details(paper_id)


def test_empty_search_is_an_empty_list(arxiv, engine):
    arxiv.add(API_PATH, recorded("id_0000.0000_s0_m100_8b51d9633a68.json"))

    assert engine.search(SearchRequest("zzzzqqqq")) == []


@pytest.mark.parametrize(
    "paper_id", ["abc", "2104.12255/../../admin", "../2104.12255", "2104.12255,1706.03762"]
)
def test_malformed_or_hostile_ids_are_refused_before_any_request(arxiv, engine, paper_id):
    with pytest.raises(EngineError) as caught:
        engine.get_paper_details(paper_id)

    assert not isinstance(caught.value, TransientEngineError)
    assert "is not an arXiv id" in caught.value.message
    assert arxiv.requests == []


@pytest.mark.parametrize(
    ("reply", "error", "retry_after"),
    [
        (Reply(429, "Rate exceeded.", {"Retry-After": "7"}), RateLimited, 7.0),
        (Reply(503, "Service Unavailable", {"Retry-After": "120"}), TransientEngineError, 120.0),
        (Reply(503, "Service Unavailable"), TransientEngineError, None),
        (Reply(502, "Bad Gateway"), TransientEngineError, None),
    ],
)
def test_rate_limits_and_server_errors_are_transient(arxiv, engine, reply, error, retry_after):
    arxiv.add(API_PATH, reply)

    with pytest.raises(TransientEngineError) as caught:
        engine.search(SearchRequest("testing"))

    assert type(caught.value) is error
    assert (caught.value.http_status, caught.value.retry_after) == (reply.status, retry_after)
    assert len(arxiv.requests) == 1  # the package's own retries are off


def test_retry_after_as_an_http_date(arxiv, engine):
    arxiv.add(API_PATH, Reply(429, "", {"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}))

    with pytest.raises(TransientEngineError) as caught:
        engine.search(SearchRequest("testing"))

    assert caught.value.retry_after == 0.0  # a moment in the past: retry now


def test_slow_answer_times_out_as_transient(arxiv, engine, monkeypatch):
    monkeypatch.setattr(ArxivEngine, "timeout", 0.3)
    arxiv.add(API_PATH, Reply(200, b"", delay=2.0))

    started = time.monotonic()
    with pytest.raises(EngineTimeout, match=r"within 0\.3 s"):
        engine.search(SearchRequest("testing"))

    assert time.monotonic() - started < 1.5


def test_refused_connection_is_unreachable_and_not_retried(settings, engine):
    settings.ARXIV_API_URL = "http://127.0.0.1:9/api/query"  # discard port: nothing listens

    with pytest.raises(EngineUnreachable, match="connection was refused") as caught:
        engine.search(SearchRequest("testing"))

    assert caught.value.reason == "refused" and not caught.value.retryable


def test_categories_are_the_taxonomy_without_network(engine):
    categories = engine.categories()
    by_id = {category.id: category for category in categories}

    assert len(by_id) == len(categories) > 150
    assert by_id["cs.CL"].name == "Computation and Language"
    assert by_id["cs.CL"].group == "Computer Science"
    assert by_id["quant-ph"].group == "Physics"
    assert by_id["stat.ML"].group == "Statistics"
    # Every category in the recorded answers is one the engine offers as a filter, but for
    # 'astro-ph': a 2006 paper's archive, retired as a category in 2009.
    recorded_terms = {
        term
        for path in FIXTURES.glob("*.json")
        for term in re.findall(r'category term="([^"]+)"', json.loads(path.read_text())["body"])
    }
    assert len(recorded_terms) > 10
    assert recorded_terms - by_id.keys() == {"astro-ph"}


def test_no_citations_no_bibtex(engine, arxiv):
    paper = PaperRef(title="0", arxiv_id="2104.12255")

    with pytest.raises(UnsupportedOperation):
        engine.get_citing_papers(paper, 10)
    with pytest.raises(UnsupportedOperation):
        engine.get_bibtex(paper)
    assert CITING not in engine.operations
    assert arxiv.requests == []


def test_rate_limit_is_arxivs_one_request_per_three_seconds():
    rate = parse_rate(ArxivEngine.rate_limit)
    assert (rate.amount, rate.get_expiry()) == (1, 3)
