"""The OpenReview engine against a local server replaying OpenReview answers
(tests/fixtures/openreview, see SOURCE.md: the API 1 note is a real one; no real API 2
answer could be found, so the API 2 notes are constructed from the documented format)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engines import probe
from engines.base import (
    DETAILS,
    SEARCH,
    EngineError,
    PaperNotFoundAtSource,
    RateLimited,
    SearchRequest,
    TransientEngineError,
    UnsupportedOperation,
)
from engines.openreview import OpenReviewEngine, decision_of
from engines.registry import BUILTIN_ENGINES, registry
from engines.selectors import engines_list
from tests.engines.replay import ReplayServer, Reply

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "openreview"


def recorded(name: str) -> Reply:
    return Reply(200, json.loads((FIXTURES / name).read_text(encoding="utf-8")))


def sent(server: ReplayServer, index: int = -1) -> dict[str, str]:
    return {key: values[0] for key, values in server.requests[index].query.items()}


@pytest.fixture
def openreview(replay_server: ReplayServer, settings) -> ReplayServer:
    settings.OPENREVIEW_API_URL = replay_server.url
    return replay_server


@pytest.fixture
def engine() -> OpenReviewEngine:
    return OpenReviewEngine()


def test_search_asks_the_full_text_index_for_papers(openreview, engine):
    openreview.add("/notes/search", recorded("api2_notes_search.json"))

    records = engine.search(SearchRequest("sparse attention", max_results=5, offset=10))

    query = sent(openreview)
    assert query["term"] == "sparse attention"
    assert (query["content"], query["source"]) == ("all", "forum")
    assert (query["limit"], query["offset"]) == ("5", "10")
    assert "venueid" not in query
    assert [r.source_id for r in records] == ["aB3dE5fG7h", "Cd4eF6gH8i", "Ef5gH7iJ9k"]


def test_an_accepted_paper_keeps_venue_decision_and_links(openreview, engine):
    openreview.add("/notes/search", recorded("api2_notes_search.json"))

    paper = engine.search(SearchRequest("sparse attention"))[0]

    assert paper.title == "Sample Accepted Paper on Sparse Attention"
    assert [(a.name, a.profile_link) for a in paper.authors] == [
        ("Ada Example", "https://openreview.net/profile?id=~Ada_Example1"),
        ("Ben Sample", "https://openreview.net/profile?id=~Ben_Sample1"),
    ]
    assert paper.abstract == "A constructed abstract about sparse attention."
    assert paper.keywords == ["sparse attention", "transformers"]
    assert paper.venue == "ICLR 2024 poster"
    assert (paper.year, paper.publication_date) == (2024, "2024-01-16")
    assert paper.entry_type == "inproceedings"
    assert paper.identifiers == {"openreview": "aB3dE5fG7h"}
    assert (paper.source, paper.source_id) == ("openreview", "aB3dE5fG7h")
    assert paper.source_url == "https://openreview.net/forum?id=aB3dE5fG7h"
    assert paper.pdf_url == "https://openreview.net/pdf?id=aB3dE5fG7h"
    assert paper.categories == ["decision:accepted"]
    assert paper.metadata["decision"] == "accepted"
    assert paper.metadata["presentation"] == "poster"
    assert paper.metadata["venueid"] == "ICLR.cc/2024/Conference"
    assert paper.metadata["license"] == "CC BY 4.0"


def test_rejected_and_withdrawn_submissions_say_so_and_claim_no_venue(openreview, engine):
    openreview.add("/notes/search", recorded("api2_notes_search.json"))

    _, rejected, withdrawn = engine.search(SearchRequest("sparse attention"))

    assert rejected.metadata["decision"] == "rejected"
    assert rejected.categories == ["decision:rejected"]
    assert rejected.venue == ""
    assert rejected.metadata["openreview_venue"] == "Submitted to ICLR 2024"
    assert rejected.entry_type == "misc"
    # No publication date: the year is the venue's, not the submission's creation (2023).
    assert (rejected.year, rejected.publication_date) == (2024, "")
    assert withdrawn.metadata["decision"] == "withdrawn"
    assert withdrawn.categories == ["decision:withdrawn"]
    assert withdrawn.pdf_url == ""  # the note has no PDF


def test_a_venue_id_in_the_query_lists_that_venue(openreview, engine):
    openreview.add("/notes", recorded("api2_notes_venue.json"))

    records = engine.search(SearchRequest("ICLR.cc/2024/Conference", max_results=2))

    assert openreview.requests[-1].path == "/notes"
    query = sent(openreview)
    assert query["content.venueid"] == "ICLR.cc/2024/Conference"
    assert "term" not in query
    assert [r.metadata["presentation"] for r in records] == ["oral", "spotlight"]
    assert {r.metadata["decision"] for r in records} == {"accepted"}


def test_a_venue_with_words_searches_within_the_venue(openreview, engine):
    openreview.add("/notes/search", recorded("api2_notes_search.json"))

    engine.search(SearchRequest("sparse attention ICLR.cc/2024/Conference"))

    query = sent(openreview)
    assert query["term"] == "sparse attention"
    assert query["venueid"] == "ICLR.cc/2024/Conference"


def test_categories_are_venue_ids(openreview, engine):
    openreview.add("/notes", recorded("api2_notes_venue.json"))

    engine.search(SearchRequest("", categories=("ICLR.cc/2024/Conference",)))

    assert sent(openreview)["content.venueid"] == "ICLR.cc/2024/Conference"


def test_an_empty_query_asks_nothing(openreview, engine):
    assert engine.search(SearchRequest("  ")) == []
    assert openreview.requests == []


def test_a_category_that_is_no_venue_id_is_refused_without_a_request(openreview, engine):
    with pytest.raises(UnsupportedOperation, match="venue id"):
        engine.search(SearchRequest("x", categories=("cs.CL",)))
    assert openreview.requests == []


def test_dates_drop_papers_of_other_years(openreview, engine):
    openreview.add("/notes/search", recorded("api2_notes_search.json"))

    assert engine.search(SearchRequest("x", date_from="2025-01-01")) == []
    assert len(engine.search(SearchRequest("x", date_from="2024", date_to="2024-12-31"))) == 3


def test_an_api1_note_parses_too(openreview, engine):
    openreview.add("/notes/search", recorded("api1_notes_forum.json"))

    (paper,) = engine.search(SearchRequest("targeted dropout"))

    assert paper.title == "Targeted Dropout"
    assert [a.name for a in paper.authors][-1] == "Geoffrey E. Hinton"
    assert paper.abstract.startswith("Neural networks are extremely flexible models")
    assert (paper.year, paper.publication_date) == (2018, "2018-10-20")
    assert paper.pdf_url == "https://openreview.net/pdf?id=HkghWScuoQ"
    assert paper.identifiers == {"openreview": "HkghWScuoQ"}
    # A 2018 note says nothing of its decision.
    assert "decision" not in paper.metadata and paper.categories == []
    assert paper.metadata["invitation"] == "NIPS.cc/2018/Workshop/CDNNRIA/-/Blind_Submission"


def test_details_by_forum_url(openreview, engine):
    openreview.add("/notes", recorded("api2_note_by_id.json"), query={"id": "aB3dE5fG7h"})

    paper = engine.get_paper_details("https://openreview.net/forum?id=aB3dE5fG7h")

    assert paper.title == "Sample Accepted Paper on Sparse Attention"
    assert sent(openreview) == {"id": "aB3dE5fG7h"}


def test_details_of_a_review_id_give_its_paper(openreview, engine):
    openreview.add("/notes", recorded("api2_note_review.json"), query={"id": "Kl8mN0oP2q"})
    openreview.add("/notes", recorded("api2_note_by_id.json"), query={"id": "aB3dE5fG7h"})

    paper = engine.get_paper_details("openreview:Kl8mN0oP2q")

    assert paper.source_id == "aB3dE5fG7h"
    assert [sent(openreview, i)["id"] for i in (0, 1)] == ["Kl8mN0oP2q", "aB3dE5fG7h"]


def test_details_of_an_unknown_or_private_note_are_not_found(openreview, engine):
    openreview.add("/notes", Reply(200, {"notes": [], "count": 0}))
    with pytest.raises(PaperNotFoundAtSource):
        engine.get_paper_details("ZZZZZZZZZZ")

    forbidden = {"name": "ForbiddenError", "message": "Forbidden", "status": 403}
    openreview.add("/notes", Reply(403, forbidden))
    with pytest.raises(PaperNotFoundAtSource, match="no public note"):
        engine.get_paper_details("ZZZZZZZZZZ")


def test_a_refused_search_is_an_error_not_a_bad_key(openreview, engine):
    forbidden = {"name": "ForbiddenError", "message": "Forbidden", "status": 403}
    openreview.add("/notes/search", Reply(403, forbidden))

    with pytest.raises(EngineError) as caught:
        engine.search(SearchRequest("x"))

    assert caught.value.outcome == "error" and caught.value.http_status == 403


def test_details_need_a_forum_id(openreview, engine):
    with pytest.raises(EngineError, match="forum id"):
        engine.get_paper_details("10.1234/not-an-openreview-id")
    assert openreview.requests == []


def test_rate_limit_server_errors_and_degraded_search(openreview, engine):
    openreview.add("/notes/search", Reply(429, {"name": "RateLimitError"}, {"Retry-After": "3"}))
    with pytest.raises(RateLimited) as caught:
        engine.search(SearchRequest("x"))
    assert caught.value.retry_after == 3

    openreview.add("/notes/search", Reply(502, "<html>Bad Gateway</html>"))
    with pytest.raises(TransientEngineError):
        engine.search(SearchRequest("x"))

    openreview.add("/notes/search", Reply(200, {"notes": [], "searchUnavailable": True}))
    with pytest.raises(TransientEngineError, match="unavailable"):
        engine.search(SearchRequest("x"))


def test_an_answer_without_notes_is_an_error(openreview, engine):
    openreview.add("/notes/search", Reply(200, {"count": 0}))
    with pytest.raises(EngineError, match="without a list of notes"):
        engine.search(SearchRequest("x"))

    openreview.add("/notes/search", Reply(200, b"<html>maintenance</html>"))
    with pytest.raises(EngineError, match="not JSON"):
        engine.search(SearchRequest("x"))


@pytest.mark.parametrize(
    ("venue", "venueid", "decision"),
    [
        ("ICLR 2024 oral", "ICLR.cc/2024/Conference", "accepted"),
        ("Submitted to ICLR 2024", "ICLR.cc/2024/Conference/Rejected_Submission", "rejected"),
        ("Submitted to ICLR 2025", "ICLR.cc/2025/Conference/Submission", "under_review"),
        ("ICLR 2024 Conference Desk Rejected Submission", "", "desk_rejected"),
        ("NeurIPS 2023 Withdrawn Submission", "", "withdrawn"),
        ("Accepted by TMLR", "TMLR", "accepted"),
        ("", "", ""),
    ],
)
def test_decision_of_venue_fields(venue, venueid, decision):
    assert decision_of(venue, venueid) == decision


def test_openreview_is_a_built_in_engine(settings):
    settings.ENGINES_ENABLED = []
    assert BUILTIN_ENGINES["openreview"] == "engines.openreview:OpenReviewEngine"
    registry.refresh()
    engine = registry.engines()["openreview"]
    assert engine.operations == frozenset({SEARCH, DETAILS})
    assert engine.query_dialect == "plain"


def test_list_search_engines_shows_openreview_and_whether_it_answers(openreview, settings):
    settings.ENGINES_ENABLED = ["openreview"]
    probe.forget()

    reachable = engines_list(refresh=True)["engines"][1]

    assert (reachable["id"], reachable["is_available"]) == ("openreview", True)
    assert reachable["operations"] == ["get_paper_details", "search"]
    assert reachable["rate_limit"]["limit"] == "1 per 1 second"

    settings.OPENREVIEW_API_URL = "https://api2.research-mcp-test.invalid"
    probe.forget()
    offline = engines_list()["engines"][1]
    assert offline["is_available"] is False
    assert "research-mcp-test.invalid" in offline["unavailable_reason"]
    assert openreview.requests == []  # the probe opens a connection, it sends nothing
    probe.forget()
