"""The bioRxiv and medRxiv engines against a local server: their details API replaying
bioRxiv's record of 10.1101/456574 (tests/fixtures/biorxiv, see SOURCE.md) and their search
through Europe PMC replaying its preprint answers (tests/fixtures/europepmc)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from engines import europepmc, http, ratelimit
from engines.base import (
    EngineError,
    PaperNotFoundAtSource,
    RateLimited,
    SearchRequest,
    TransientEngineError,
)
from engines.biorxiv import BiorxivEngine, MedrxivEngine
from tests.engines.replay import ReplayServer, Reply

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
DETAILS = "/details/biorxiv/10.1101/456574/na/json"


def recorded(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


def sent(server: ReplayServer, index: int = -1) -> dict[str, str]:
    return {key: values[0] for key, values in server.requests[index].query.items()}


@pytest.fixture
def sources(replay_server: ReplayServer, settings: Any) -> ReplayServer:
    settings.BIORXIV_API_URL = f"{replay_server.url}/biorxiv-api"
    settings.EUROPEPMC_API_URL = f"{replay_server.url}/europepmc"
    settings.CONTACT_EMAIL = ""
    return replay_server


def test_details_by_doi_read_the_latest_version_and_its_published_doi(sources):
    sources.add(f"/biorxiv-api{DETAILS}", Reply(200, recorded("biorxiv/details_456574.json")))

    record = BiorxivEngine().get_paper_details("doi:10.1101/456574")

    assert [r.path for r in sources.requests] == [f"/biorxiv-api{DETAILS}"]
    assert record.title == "Complementary subnetworks of cortical somatostatin interneurons"
    assert [(a.family, a.given) for a in record.authors][:2] == [("Naka", "A."), ("Shababo", "B.")]
    assert len(record.authors) == 7
    # The corresponding author (Hillel Adesnik) carries the corresponding institution.
    assert record.authors[-1].affiliation == "UC Berkeley"
    assert record.authors[0].affiliation == ""
    assert (record.year, record.publication_date) == (2018, "2018-10-30")
    assert record.categories == ["neuroscience", "preprint"]
    assert record.abstract.startswith("The neocortex is organized into discrete layers")
    assert record.doi == "10.1101/456574"
    # `published` names the journal version: carried for de-duplication.
    assert record.identifiers == {"published_doi": "10.7554/elife.43696"}
    assert record.venue == "bioRxiv" and record.entry_type == "misc"
    assert record.source == "biorxiv" and record.source_id == "10.1101/456574v1"
    assert record.source_url == "https://www.biorxiv.org/content/10.1101/456574v1"
    assert record.pdf_url == "https://www.biorxiv.org/content/10.1101/456574v1.full.pdf"
    assert record.metadata["version"] == "1" and record.metadata["license"] == "cc_by_nc"
    assert record.metadata["preprint"] is True
    assert record.metadata["jats_xml_url"].endswith("/2018/10/30/456574.source.xml")


def test_of_several_versions_the_highest_is_kept_and_na_means_not_published(sources):
    answer = recorded("biorxiv/details_456574.json")
    first = answer["collection"][0]
    # The recorded item as its own version 2 posted later, not yet in a journal.
    second = {**first, "version": "2", "date": "2019-01-15", "published": "NA"}
    answer["collection"] = [second, first]
    sources.add(f"/biorxiv-api{DETAILS}", Reply(200, answer))

    record = BiorxivEngine().get_paper_details("10.1101/456574")

    assert record.metadata["version"] == "2" and record.publication_date == "2019-01-15"
    assert record.identifiers == {}
    assert record.pdf_url.endswith("/10.1101/456574v2.full.pdf")


def test_a_doi_the_server_does_not_hold_is_not_found(sources):
    no_posts = Reply(200, recorded("biorxiv/constructed_no_posts_found.json"))
    sources.add("/biorxiv-api/details/medrxiv/10.1101/456574/na/json", no_posts)

    with pytest.raises(PaperNotFoundAtSource, match="medRxiv has no preprint"):
        MedrxivEngine().get_paper_details("10.1101/456574")


def test_details_need_a_preprint_doi_and_other_dois_are_not_asked_for(sources):
    with pytest.raises(EngineError, match="not one"):
        BiorxivEngine().get_paper_details("PMC12120539")
    with pytest.raises(PaperNotFoundAtSource, match="not a bioRxiv DOI"):
        BiorxivEngine().get_paper_details("10.1002/hpja.70059")
    with pytest.raises(PaperNotFoundAtSource):
        BiorxivEngine().get_paper_details("10.1101/a/b")  # no bioRxiv DOI has a second '/'
    assert sources.requests == []


@pytest.mark.parametrize(
    ("reply", "error"),
    [
        (Reply(429, "Too Many Requests"), RateLimited),
        (Reply(502, "<html>Bad Gateway</html>"), TransientEngineError),
        (Reply(200, b"<html>not json</html>", headers={"Content-Type": "text/html"}), EngineError),
    ],
)
def test_details_failures_become_engine_errors(sources, reply, error):
    sources.add(f"/biorxiv-api{DETAILS}", reply)

    with pytest.raises(error):
        BiorxivEngine().get_paper_details("10.1101/456574")


def test_search_goes_through_europe_pmcs_preprints_of_the_server(sources):
    sources.add(
        "/europepmc/search", Reply(200, recorded("europepmc/search_cancer_lite_biorxiv_only.json"))
    )

    records = BiorxivEngine().search(SearchRequest("cancer", max_results=4, date_from="2025"))

    assert sent(sources)["query"] == (
        '((cancer) AND SRC:PPR AND PUBLISHER:"bioRxiv") AND FIRST_PDATE:[2025-01-01 TO 2999-12-31]'
    )
    assert sent(sources)["resultType"] == "core" and sent(sources)["pageSize"] == "4"
    assert [r.doi for r in records] == [
        "10.1101/2025.06.10.658949", "10.1101/2025.05.29.656750",
        "10.1101/2025.06.11.659108", "10.1101/2025.06.05.658173",
    ]  # fmt: skip
    assert {r.source for r in records} == {"biorxiv"}
    assert all(r.metadata["preprint"] and r.venue == "bioRxiv" for r in records)


def test_medrxiv_search_and_author_search_name_medrxiv(sources):
    sources.add(
        "/europepmc/search", Reply(200, recorded("europepmc/search_cancer_lite_medrxiv_only.json"))
    )
    engine = MedrxivEngine()

    records = engine.search(SearchRequest("TITLE:cancer"))
    assert sent(sources)["query"] == '(TITLE:cancer) AND SRC:PPR AND PUBLISHER:"medRxiv"'
    assert [r.doi for r in records] == [
        "10.1101/2025.06.13.25329599", "10.1101/2025.06.05.25329031"
    ]  # fmt: skip
    assert {r.source for r in records} == {"medrxiv"}

    engine.search_by_author("Stern, Mariana C", SearchRequest("Stern, Mariana C"))
    assert sent(sources)["query"] == '(AUTH:"Stern MC") AND SRC:PPR AND PUBLISHER:"medRxiv"'


def test_searches_share_europe_pmcs_rate_limit(sources, settings):
    # One Europe PMC request allowed a minute: the bioRxiv search takes it, so the medRxiv
    # search finds no turn before its deadline (the whole rule is Europe PMC's).
    settings.ENGINE_RATE_LIMITS = {"europepmc": "1/minute"}
    ratelimit.reset(europepmc.SHARED)
    sources.add("/europepmc/search", Reply(200, recorded("europepmc/search_no_results.json")))
    try:
        BiorxivEngine().search(SearchRequest("x"))
        with http.call_deadline(time.monotonic() + 0.3), pytest.raises(RateLimited):
            MedrxivEngine().search(SearchRequest("x"))
    finally:
        ratelimit.reset(europepmc.SHARED)
    assert len(sources.requests) == 1


def test_a_failing_europe_pmc_search_says_it_was_europe_pmc(sources):
    sources.add("/europepmc/search", Reply(400, {"error": "bad query"}))

    with pytest.raises(EngineError, match=r"^Europe PMC \(searching bioRxiv\) refused"):
        BiorxivEngine().search(SearchRequest("cancer AND"))
