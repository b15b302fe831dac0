"""The DBLP engine against a local server replaying DBLP answers kept in public
repositories (tests/fixtures/dblp, see SOURCE.md)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from engines import probe, ratelimit
from engines.base import (
    AUTHOR,
    DETAILS,
    SEARCH,
    EngineError,
    PaperNotFoundAtSource,
    RateLimited,
    SearchRequest,
    TransientEngineError,
    UnsupportedOperation,
)
from engines.dblp import DblpEngine
from engines.registry import BUILTIN_ENGINES, registry
from engines.runner import EngineCall, call_engine
from engines.selectors import engines_list
from papers.schemas import PaperRecord
from papers.services import paper_upsert
from tests.engines.replay import ReplayServer, Reply

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "dblp"


def recorded_json(name: str) -> Reply:
    return Reply(200, json.loads((FIXTURES / name).read_text(encoding="utf-8")))


def recorded_xml(name: str) -> Reply:
    return Reply(200, (FIXTURES / name).read_bytes(), {"Content-Type": "application/xml"})


def sent(server: ReplayServer, index: int = -1) -> dict[str, str]:
    return {key: values[0] for key, values in server.requests[index].query.items()}


@pytest.fixture
def dblp(replay_server: ReplayServer, settings) -> ReplayServer:
    settings.DBLP_API_URL = replay_server.url
    return replay_server


@pytest.fixture
def engine() -> DblpEngine:
    return DblpEngine()


def by_key(records):
    return {record.source_id: record for record in records}


def test_search_sends_query_paging_and_json(dblp, engine):
    dblp.add("/search/publ/api", recorded_json("publ_search.json"))

    records = engine.search(SearchRequest("breast* cancer*", max_results=7, offset=30))

    query = sent(dblp)
    assert query["q"] == "breast* cancer*"
    assert (query["format"], query["h"], query["f"], query["c"]) == ("json", "7", "30", "0")
    assert len(records) == 7
    assert {r.source for r in records} == {"dblp"}


def test_a_journal_article_maps_to_a_record(dblp, engine):
    dblp.add("/search/publ/api", recorded_json("publ_search.json"))

    paper = by_key(engine.search(SearchRequest("x", max_results=7)))["journals/bmcmi/YeomCKCSC19"]

    # DBLP's closing '.' is taken off the title.
    assert paper.title == (
        "Screening mammography for second breast cancers in women with history of "
        "early-stage breast cancer - factors and causes associated with non-detection"
    )
    assert paper.authors[0].name == "Yoo Kyung Yeom"
    assert paper.authors[0].profile_link == "https://dblp.org/pid/235/2149"
    assert (paper.venue, paper.volume, paper.number, paper.pages) == (
        "BMC Medical Imaging",
        "19",
        "1",
        "2:1-2:9",
    )
    assert paper.year == 2019
    assert paper.entry_type == "article"
    assert paper.doi == "10.1186/s12880-018-0303-3"
    assert paper.abstract == ""  # DBLP has none
    assert paper.identifiers == {"dblp": "journals/bmcmi/YeomCKCSC19"}
    assert paper.source_url == "https://dblp.org/rec/journals/bmcmi/YeomCKCSC19"
    assert paper.metadata["dblp_type"] == "Journal Articles"
    assert paper.metadata["dblp_author_pids"][:2] == ["235/2149", "182/1026"]


def test_disambiguation_numbers_leave_the_name_but_not_the_person(dblp, engine):
    dblp.add("/search/publ/api", recorded_json("publ_search.json"))

    paper = by_key(engine.search(SearchRequest("x", max_results=7)))["conf/bcb/GandhiLSZH019"]

    huang = paper.authors[-1]
    assert huang.name == "Kun Huang"
    assert huang.profile_link == "https://dblp.org/pid/10/4151-4"
    assert paper.entry_type == "inproceedings"
    assert paper.venue == "BCB"


def test_a_corr_record_is_an_arxiv_preprint(dblp, engine):
    dblp.add("/search/publ/api", recorded_json("publ_search.json"))

    paper = by_key(engine.search(SearchRequest("x", max_results=7)))["journals/corr/abs-1905-10841"]

    assert paper.arxiv_id == "1905.10841"
    assert paper.doi is None
    assert (paper.venue, paper.volume) == ("", "")  # 'CoRR abs/1905.10841' is no venue
    assert paper.entry_type == "misc"


def test_single_authors_entities_venue_lists_and_missing_dois(dblp, engine):
    dblp.add("/search/publ/api", recorded_json("publ_search.json"))

    papers = by_key(engine.search(SearchRequest("x", max_results=7)))

    thesis = papers["phd/hal/Perrier18a"]
    assert [a.name for a in thesis.authors] == ["Flavie Perrier"]  # one author: an object
    assert "dans l'étude prospective Européenne" in thesis.title  # &apos; decoded
    assert thesis.entry_type == "phdthesis"
    book = papers["series/synthesis/2011Guliato"]
    assert book.publisher == "Morgan & Claypool Publishers"
    assert book.title.endswith("Computer-Aided Diagnosis of Breast Cancer")
    assert book.metadata["venues"][1] == "Synthesis Lectures on Biomedical Engineering"
    assert book.entry_type == "book"
    assert papers["conf/biostec/CasaliMBB12"].doi is None


def test_no_match_is_an_empty_list(dblp, engine):
    dblp.add("/search/publ/api", recorded_json("publ_search_empty.json"))

    assert engine.search(SearchRequest("zzqxv* nonexistent*")) == []


def test_dates_drop_records_of_other_years(dblp, engine):
    dblp.add("/search/publ/api", recorded_json("publ_search.json"))

    records = engine.search(SearchRequest("x", max_results=7, date_from="2019-01-01"))

    assert {r.year for r in records} == {2019}


def test_categories_are_unsupported_without_a_request(dblp, engine):
    with pytest.raises(UnsupportedOperation, match="subject category"):
        engine.search(SearchRequest("x", categories=("cs.CL",)))
    assert dblp.requests == []


def test_search_by_author_reads_the_first_persons_page(dblp, engine):
    # The author search answer in the recorded shape (author_search.json), naming the
    # person whose recorded page we have.
    dblp.add(
        "/search/author/api",
        Reply(
            200,
            {
                "result": {
                    "hits": {
                        "hit": [
                            {
                                "info": {
                                    "author": "Di Xu 0001",
                                    "url": "https://dblp.org/pid/95/7448-1",
                                }
                            }
                        ]
                    }
                }
            },
        ),
    )
    dblp.add("/pid/95/7448-1.xml", recorded_xml("person_95-7448-1.xml"))

    records = engine.search_by_author("Di Xu", SearchRequest("Di Xu", max_results=3, offset=1))

    assert sent(dblp, 0) == {"q": "Di Xu", "format": "json", "h": "1"}
    assert dblp.requests[1].path == "/pid/95/7448-1.xml"
    assert [r.source_id for r in records] == [
        "conf/iccel/XuCN12",
        "conf/ictai/PourazadXN12",
        "journals/tvcg/XuDN11",
    ]
    first = records[0]
    assert [a.name for a in first.authors] == ["Di Xu", "Lino E. Coria", "Panos Nasiopoulos"]
    assert first.authors[0].profile_link == "https://dblp.org/pid/95/7448-1"
    assert first.title == (
        "Quality of experience for the horizontal pixel parallax adjustment of "
        "stereoscopic 3D videos"
    )
    assert (first.venue, first.year, first.doi) == ("ICCE", 2012, "10.1109/icce.2012.6161918")
    article = records[2]
    assert (article.entry_type, article.venue, article.volume, article.number) == (
        "article",
        "IEEE Trans. Vis. Comput. Graph.",
        "17",
        "3",
    )
    assert article.metadata["author_match"] == {
        "dblp_pid": "95/7448-1",
        "name": "Di Xu",
        "url": "https://dblp.org/pid/95/7448-1",
    }


def test_search_by_author_takes_the_pid_of_the_recorded_author_search(dblp, engine):
    dblp.add("/search/author/api", recorded_json("author_search.json"))
    dblp.add("/pid/428/8371.xml", recorded_xml("person_95-7448-1.xml"))

    engine.search_by_author("geoffrey hinton", SearchRequest("geoffrey hinton"))

    assert dblp.requests[-1].path == "/pid/428/8371.xml"


def test_search_by_author_without_a_match_is_empty(dblp, engine):
    dblp.add("/search/author/api", recorded_json("publ_search_empty.json"))

    assert engine.search_by_author("nobody", SearchRequest("nobody")) == []
    assert len(dblp.requests) == 1


def test_details_by_record_key(dblp, engine):
    dblp.add("/rec/conf/dac/ZhangYY21.xml", recorded_xml("rec_conf_dac_ZhangYY21.xml"))

    paper = engine.get_paper_details("https://dblp.org/rec/conf/dac/ZhangYY21")

    assert paper.title == (
        "Attentional Transfer is All You Need: Technology-aware Layout Pattern Generation"
    )
    assert [a.name for a in paper.authors] == [
        "Xiaopeng Zhang",
        "Haoyu Yang",
        "Evangeline F. Y. Young",
    ]
    assert (paper.venue, paper.pages, paper.year) == ("DAC", "169-174", 2021)
    assert paper.doi == "10.1109/dac18074.2021.9586227"
    assert paper.entry_type == "inproceedings"
    assert paper.identifiers == {"dblp": "conf/dac/ZhangYY21"}


def test_details_of_an_unknown_key_and_of_no_key(dblp, engine):
    dblp.add("/rec/conf/dac/Nobody99.xml", Reply(404, "<html>not found</html>"))
    with pytest.raises(PaperNotFoundAtSource):
        engine.get_paper_details("dblp:conf/dac/Nobody99")

    with pytest.raises(EngineError, match="record key"):
        engine.get_paper_details("../../etc/passwd")
    assert len(dblp.requests) == 1


def test_xml_with_a_dtd_is_refused(dblp, engine):
    bomb = b'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaa">]><dblp>&a;</dblp>'
    dblp.add("/rec/conf/dac/ZhangYY21.xml", Reply(200, bomb))

    with pytest.raises(EngineError, match="DTD"):
        engine.get_paper_details("conf/dac/ZhangYY21")


def test_429_with_retry_after_is_rate_limited(dblp, engine):
    # DBLP's FAQ: "an empty document with a HTTP status 429" and a Retry-After header.
    dblp.add("/search/publ/api", Reply(429, b"", {"Retry-After": "60"}))
    with pytest.raises(RateLimited) as caught:
        engine.search(SearchRequest("x"))
    assert caught.value.retry_after == 60

    dblp.add("/search/publ/api", Reply(500, "<html>Internal Server Error</html>"))
    with pytest.raises(TransientEngineError):
        engine.search(SearchRequest("x"))


def test_a_blocked_client_is_an_error_not_a_bad_key(dblp, engine):
    dblp.add("/search/publ/api", Reply(403, "<html>Forbidden</html>"))

    with pytest.raises(EngineError) as caught:
        engine.search(SearchRequest("x"))

    assert caught.value.outcome == "error" and caught.value.http_status == 403


def test_an_answer_without_a_result_is_an_error(dblp, engine):
    dblp.add("/search/publ/api", Reply(200, {"hits": []}))
    with pytest.raises(EngineError, match="without a result"):
        engine.search(SearchRequest("x"))


def test_dblp_is_a_built_in_engine(settings):
    settings.ENGINES_ENABLED = []
    assert BUILTIN_ENGINES["dblp"] == "engines.dblp:DblpEngine"
    registry.refresh()
    engine = registry.engines()["dblp"]
    assert engine.operations == frozenset({SEARCH, AUTHOR, DETAILS})
    assert engine.rate_limit == "1/second"


@pytest.fixture
def dblp_through_the_runner(dblp: ReplayServer, settings) -> Iterator[ReplayServer]:
    """dblp enabled, no cache and no retries, so one answer is one outcome."""
    settings.ENGINES_ENABLED = ["dblp"]
    settings.ENGINE_CACHE_TTLS = {"dblp": 0}
    settings.ENGINE_MAX_RETRIES = 0
    registry.refresh()
    ratelimit.reset(registry.engines()["dblp"])
    yield dblp
    ratelimit.reset(registry.engines()["dblp"])
    registry.refresh()


def test_a_429_reaches_the_caller_as_rate_limited_with_its_retry_after(dblp_through_the_runner):
    dblp_through_the_runner.add("/search/publ/api", Reply(429, b"", {"Retry-After": "60"}))

    call = EngineCall.search("dblp", SearchRequest("x"))
    outcome = call_engine(call.engine, call.operation, call.arguments, timeout_seconds=5)

    assert (outcome.status, outcome.outcome, outcome.reason) == (
        "rate_limited",
        "rate_limited",
        "quota",
    )
    assert outcome.retry_after == 60


@pytest.mark.django_db
def test_a_corr_record_merges_with_the_arxiv_paper(dblp, engine):
    dblp.add("/search/publ/api", recorded_json("publ_search.json"))
    corr = by_key(engine.search(SearchRequest("x", max_results=7)))["journals/corr/abs-1905-10841"]
    arxiv = PaperRecord.build(
        title=corr.title, authors=["Han Le"], year=2019, arxiv_id="1905.10841", source="arxiv"
    )

    first, _ = paper_upsert(record=arxiv)
    second, created = paper_upsert(record=corr)

    assert (second.pk, created) == (first.pk, False)
    assert second.identifiers.filter(scheme="dblp", value="journals/corr/abs-1905-10841").exists()


def test_list_search_engines_shows_dblp_and_whether_it_answers(dblp, settings):
    settings.ENGINES_ENABLED = ["dblp"]
    probe.forget()

    reachable = engines_list(refresh=True)["engines"][1]

    assert (reachable["id"], reachable["is_available"]) == ("dblp", True)
    assert reachable["operations"] == ["get_paper_details", "search", "search_by_author"]

    settings.DBLP_API_URL = "https://dblp.research-mcp-test.invalid"
    probe.forget()
    offline = engines_list()["engines"][1]
    assert offline["is_available"] is False
    assert "dblp.research-mcp-test.invalid" in offline["unavailable_reason"]
    probe.forget()
