"""The Europe PMC engine against a local server replaying answers Europe PMC's REST API gave
(tests/fixtures/europepmc, see SOURCE.md: recorded answers, and two constructed samples
where no recording exists)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from engines.base import (
    EngineError,
    PaperNotFoundAtSource,
    PaperRef,
    RateLimited,
    SearchRequest,
    SearchResults,
    TransientEngineError,
    UnsupportedOperation,
)
from engines.europepmc import EuropePmcEngine, abstract_text, author_query
from engines.registry import registry
from engines.runner import EngineCall, run_calls
from engines.selectors import engines_list
from tests.engines.replay import ReplayServer, Reply

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "europepmc"
# The recorded core answer's order (Europe PMC relevance for 'cancer'), first five.
FIRST_PMIDS = ["39709209", "39709208", "40468710", "40464630", "40493882"]


def recorded(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


def sent(server: ReplayServer, index: int = -1) -> dict[str, str]:
    return {key: values[0] for key, values in server.requests[index].query.items()}


@pytest.fixture
def epmc(replay_server: ReplayServer, settings: Any) -> ReplayServer:
    settings.EUROPEPMC_API_URL = replay_server.url
    settings.CONTACT_EMAIL = ""
    return replay_server


@pytest.fixture
def engine() -> EuropePmcEngine:
    return EuropePmcEngine()


def test_search_keeps_europe_pmcs_relevance_order_and_maps_core_records(epmc, engine):
    epmc.add("/search", Reply(200, recorded("search_cancer_core.json")))

    records = engine.search(SearchRequest("cancer", max_results=25))

    assert [r.identifiers["pmid"] for r in records[:5]] == FIRST_PMIDS
    assert len(records) == 25
    assert (
        isinstance(records, SearchResults) and records.total == 5059039
    )  # hitCount, for the search log
    assert sent(epmc) == {
        "query": "cancer",
        "format": "json",
        "resultType": "core",
        "pageSize": "25",
        "cursorMark": "*",
    }  # fmt: skip  (no sort: relevance, never date)
    record = next(r for r in records if r.identifiers.get("pmid") == "40437959")
    assert record.title.startswith("Co-Designed Culturally Tailored Cancer Screening")
    assert record.identifiers == {"pmid": "40437959", "pmcid": "PMC12120539"}
    assert record.doi == "10.1002/hpja.70059"
    assert [(a.name, a.family, a.given) for a in record.authors] == [
        ("Cannas Kwok", "Kwok", "Cannas"),
        ("Xinyi Xu", "Xu", "Xinyi"),
    ]
    assert record.authors[0].affiliation.startswith("School of Nursing, Paramedicine")
    assert record.authors[1].profile_link == "https://orcid.org/0000-0001-6913-0549"
    assert (record.year, record.publication_date) == (2025, "2025-07-01")
    assert record.venue.startswith("Health promotion journal of Australia")
    assert record.venue_short == "Health Promot J Austr"
    assert (record.volume, record.number, record.pages) == ("36", "3", "e70059")
    # Section headings kept as labels, tags gone.
    assert record.abstract.startswith("Issue addressed: Despite national cancer screening")
    assert " Methods: A culturally tailored" in record.abstract and "<h4>" not in record.abstract
    # Author keywords, then MeSH headings; publication types as categories.
    assert record.keywords[:2] == ["Chinese", "Cancer Screening"]
    assert {"Neoplasms", "Health Promotion", "Early Detection of Cancer"} <= set(record.keywords)
    assert record.categories == ["research-article", "Journal Article"]
    assert record.metadata["mesh_major_topics"] == [
        "Neoplasms", "Health Promotion", "Early Detection of Cancer"
    ]  # fmt: skip
    # Full-text availability kept; the open-access PDF becomes pdf_url.
    assert record.metadata["open_access"] and record.metadata["in_pmc"]
    assert record.metadata["has_pdf"] and record.metadata["license"] == "cc by-nc-nd"
    assert {u["availability"] for u in record.metadata["full_text_urls"]} == {
        "Subscription required", "Open access"
    }  # fmt: skip
    assert record.pdf_url == "https://europepmc.org/articles/PMC12120539?pdf=render"
    assert record.source == "europepmc" and record.source_id == "MED/40437959"
    assert record.source_url == "https://europepmc.org/article/MED/40437959"
    assert "preprint" not in record.metadata and record.entry_type == "article"


def test_a_subscription_only_record_has_no_pdf_url(epmc, engine):
    epmc.add("/search", Reply(200, recorded("search_cancer_core.json")))

    first = engine.search(SearchRequest("cancer", max_results=1))[0]

    assert first.identifiers == {"pmid": "39709209"}
    assert first.pdf_url == "" and first.metadata["open_access"] is False
    assert first.abstract == ""  # the record has none
    assert first.authors[0].affiliation.startswith("Department of Radiation Oncology")


def test_a_date_range_is_anded_on_as_first_pdate_and_the_contact_goes_along(epmc, engine, settings):
    settings.CONTACT_EMAIL = "librarian@example.org"
    epmc.add("/search", Reply(200, recorded("search_cancer_core.json")))

    engine.search(SearchRequest("TITLE:cancer AND AUTH:\"Xu X\"", max_results=3,
                                date_from="2020", date_to="2025-06"))  # fmt: skip

    query = sent(epmc)
    assert query["query"] == (
        '(TITLE:cancer AND AUTH:"Xu X") AND FIRST_PDATE:[2020-01-01 TO 2025-06-30]'
    )
    assert query["email"] == "librarian@example.org" and query["pageSize"] == "3"


def test_preprint_records_are_flagged(epmc, engine):
    epmc.add("/search", Reply(200, recorded("search_cancer_lite_biorxiv_only.json")))

    records = engine.search(SearchRequest("cancer", max_results=10))

    assert len(records) == 6
    first = records[0]
    assert first.title == (
        "Transitional lncRNA Signatures Reveal Distinct Stages of Cancer Progression and Metastasis"
    )
    assert first.doi == "10.1101/2025.06.10.658949"
    assert first.metadata["preprint"] is True and first.metadata["preprint_server"] == "bioRxiv"
    assert first.categories == ["preprint"] and first.entry_type == "misc"
    assert first.venue == "bioRxiv" and first.source_id == "PPR/PPR1036694"
    # A lite record's authorString: 'Zok S, Behar D, Linial M.'
    assert [(a.family, a.given) for a in first.authors] == [
        ("Zok", "S."), ("Behar", "D."), ("Linial", "M.")
    ]  # fmt: skip
    assert "pmid" not in first.identifiers


def test_a_preprint_linked_to_its_journal_version_carries_it(epmc, engine):
    # Constructed sample (SOURCE.md): the real medRxiv record with a "Preprint of" link.
    epmc.add("/search", Reply(200, recorded("constructed_preprint_of.json")))

    record = engine.get_paper_details("PPR1036674")

    assert sent(epmc)["query"] == "EXT_ID:PPR1036674 AND SRC:PPR"
    assert record.doi == "10.1101/2025.06.13.25329599"
    assert record.identifiers == {
        "published_doi": "10.9999/sample.2026.0001",
        "published_pmid": "99999903",
    }
    assert record.metadata["published_version"]["source"] == "MED"
    assert record.metadata["published_version"]["note"].startswith("Link created based on")
    assert record.metadata["preprint"] is True


def test_an_offset_past_the_first_page_walks_the_cursor_with_id_pages(epmc, engine):
    idlist = recorded("search_cancer_idlist.json")
    cursor = idlist["nextCursorMark"]
    epmc.add("/search", Reply(200, idlist), query={"resultType": "idlist"})
    epmc.add("/search", Reply(200, recorded("search_cancer_core.json")),
             query={"resultType": "core", "cursorMark": cursor})  # fmt: skip

    records = engine.search(SearchRequest("cancer", max_results=5, offset=1002))

    assert [r.identifiers["pmid"] for r in records] == [
        *FIRST_PMIDS[2:],
        "40437959",
        "40377773",
    ]  # fmt: skip  (items 2..6 of the page the cursor reached)
    first, second = sent(epmc, 0), sent(epmc, 1)
    assert (first["resultType"], first["pageSize"], first["cursorMark"]) == ("idlist", "1000", "*")
    assert (second["resultType"], second["pageSize"], second["cursorMark"]) == (
        "core", "7", cursor
    )  # fmt: skip


def test_details_by_doi_pmid_and_pmcid_ask_the_matching_field(epmc, engine):
    epmc.add("/search", Reply(200, recorded("search_cancer_core.json")))

    by_doi = engine.get_paper_details("https://doi.org/10.1002/HPJA.70059")
    assert sent(epmc)["query"] == 'DOI:"10.1002/hpja.70059"'
    assert by_doi.identifiers["pmid"] == "40437959"  # the exact DOI, not the first result
    engine.get_paper_details("PMID: 39709208")
    assert sent(epmc)["query"] == "EXT_ID:39709208 AND SRC:MED"
    engine.get_paper_details("https://pmc.ncbi.nlm.nih.gov/articles/pmc12120539/")
    assert sent(epmc)["query"] == "PMCID:PMC12120539"


def test_details_of_an_unknown_paper_is_not_found_and_of_a_non_id_an_error(epmc, engine):
    epmc.add("/search", Reply(200, recorded("search_no_results.json")))

    with pytest.raises(PaperNotFoundAtSource):
        engine.get_paper_details("10.1234/unknown")
    with pytest.raises(EngineError, match="DOI, PMID, PMCID"):
        engine.get_paper_details("attention is all you need")


def test_details_never_answer_with_a_record_that_lacks_the_id_asked_for(epmc, engine):
    epmc.add("/search", Reply(200, recorded("search_cancer_core.json")))  # other papers

    for paper_id in ("PMID: 31452104", "PMC6739224", "10.1234/not-in-the-answer"):
        with pytest.raises(PaperNotFoundAtSource):
            engine.get_paper_details(paper_id)


def test_search_by_author_uses_europe_pmcs_author_form(epmc, engine):
    epmc.add("/search", Reply(200, recorded("search_no_results.json")))

    assert engine.search_by_author("Xinyi Xu", SearchRequest("Xinyi Xu")) == []
    assert sent(epmc)["query"] == 'AUTH:"Xu X"'
    assert author_query("Kwok C") == 'AUTH:"Kwok C"'
    assert author_query('Haas-Kogan, Daphne A"') == 'AUTH:"Haas-Kogan DA"'


def test_citing_papers_of_a_pmid_come_from_its_citations_list(epmc, engine):
    # Constructed sample (SOURCE.md): the envelope of /MED/{pmid}/citations.
    epmc.add("/MED/40437959/citations", Reply(200, recorded("constructed_citations.json")))

    records = engine.get_citing_papers(
        PaperRef(title="Co-Designed", identifiers={"pmid": "40437959"}), 10
    )

    assert sent(epmc) == {"format": "json", "page": "1", "pageSize": "10"}
    assert [(r.title, r.identifiers) for r in records] == [
        ("Sample citing article one.", {"pmid": "99999901"}),
        ("Sample citing preprint two", {}),
    ]
    assert records[0].venue == "Sample J" and records[0].year == 2026
    assert records[1].metadata["preprint"] is True


def test_citing_papers_of_a_paper_known_by_doi_look_its_id_up_first(epmc, engine):
    epmc.add("/search", Reply(200, recorded("search_cancer_core.json")))
    epmc.add("/MED/39709209/citations", Reply(200, recorded("constructed_citations.json")))

    records = engine.get_citing_papers(PaperRef(doi="10.1016/S0140-6736(24)02600-X"), 1)

    assert len(records) == 1
    assert sent(epmc, 0)["query"] == 'DOI:"10.1016/s0140-6736(24)02600-x"'
    with pytest.raises(PaperNotFoundAtSource):
        engine.get_citing_papers(PaperRef(title="no ids"), 5)


@pytest.mark.parametrize(
    ("reply", "error"),
    [
        (Reply(429, {"error": "slow down"}, headers={"Retry-After": "2"}), RateLimited),
        (Reply(503, "<html>Service Unavailable</html>"), TransientEngineError),
        (Reply(200, b"{not json", headers={"Content-Type": "application/json"}), EngineError),
        (Reply(200, {"version": "6.9", "hitCount": 3}), EngineError),  # no result list
    ],
)
def test_source_failures_become_engine_errors(epmc, engine, reply, error):
    epmc.add("/search", reply)

    with pytest.raises(error) as raised:
        engine.search(SearchRequest("cancer"))

    if error is RateLimited:
        assert raised.value.retry_after == 2
    if error is EngineError:
        assert not isinstance(raised.value, TransientEngineError)


def test_categories_and_empty_queries_are_refused_before_any_request(epmc, engine):
    with pytest.raises(UnsupportedOperation):
        engine.search(SearchRequest("cancer", categories=("oncology",)))
    with pytest.raises(EngineError, match="needs a query"):
        engine.search(SearchRequest("   "))
    assert epmc.requests == []


def test_abstract_text_keeps_section_labels_and_drops_markup():
    text = "<h4>Background</h4>Cells (<i>in vitro</i>).<h4>Results:</h4>Fine &amp; well."
    assert abstract_text(text) == "Background: Cells (in vitro). Results: Fine & well."


def test_europe_pmc_biorxiv_and_medrxiv_are_built_in(settings):
    settings.ENGINES_ENABLED = []
    registry.refresh()
    engines = registry.engines()
    assert {"europepmc", "biorxiv", "medrxiv"} <= set(engines)
    assert engines["europepmc"].query_dialect == "europepmc"
    assert engines["europepmc"].rate_limit == "8/second"
    assert sorted(engines["medrxiv"].describe()["operations"]) == [
        "get_paper_details", "search", "search_by_author"
    ]  # fmt: skip


@pytest.mark.django_db
def test_the_runner_searches_europe_pmc_and_biorxiv_together_and_lists_them(
    replay_server, settings
):
    settings.ENGINES_ENABLED = ["europepmc", "biorxiv", "medrxiv"]
    settings.EUROPEPMC_API_URL = replay_server.url
    settings.BIORXIV_API_URL = replay_server.url
    settings.ENGINE_CACHE_TTLS = {"europepmc": 0, "biorxiv": 0, "medrxiv": 0}
    settings.CELERY_TASK_ALWAYS_EAGER = True  # a worker would not see these URLs
    settings.CONTACT_EMAIL = ""
    registry.refresh()
    preprints = Reply(200, recorded("search_cancer_lite_biorxiv_only.json"))
    everything = Reply(200, recorded("search_cancer_core.json"))
    replay_server.add(
        "/search",
        lambda request: preprints if "SRC:PPR" in request.query["query"][0] else everything,
    )

    request = SearchRequest("cancer", max_results=3)
    outcomes = {
        o.engine: o
        for o in run_calls(
            [EngineCall.search("europepmc", request), EngineCall.search("biorxiv", request)]
        )
    }

    assert {name: o.status for name, o in outcomes.items()} == {"europepmc": "ok", "biorxiv": "ok"}
    assert [r["source"] for r in outcomes["biorxiv"].result] == ["biorxiv"] * 3  # as dicts
    assert len(outcomes["europepmc"].result) == 3
    listed = {e["id"]: e for e in engines_list(probe=True)["engines"]}
    assert all(listed[name]["is_available"] for name in ("europepmc", "biorxiv", "medrxiv"))
    assert listed["europepmc"]["rate_limit"]["limit"] == "8 per 1 second"
