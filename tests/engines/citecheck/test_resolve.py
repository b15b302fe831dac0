"""Resolving a draft's citations (engines/citecheck/resolve.py, checks.py): the library
first, then Crossref replayed locally from recorded answers (tests/fixtures/crossref)."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone

from engines import registry as registry_module
from engines.base import SearchRequest
from engines.citecheck.checks import metadata_mismatches, update_flags
from engines.citecheck.parse import draft_parse
from engines.citecheck.resolve import Resolution, resolve_all
from engines.crossref import CrossrefEngine
from papers.models import Paper
from papers.retractions import paper_retraction_update
from tests.engines.replay import ReplayServer, Reply

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "crossref"
PLOS_DOI = "10.1371/journal.pone.0033693"
PLOS_PATH = "/crossref/works/10.1371%2Fjournal.pone.0033693"
PLOS_TITLE = (
    "Methylphenidate Exposure Induces Dopamine Neuron Loss and Activation of Microglia in "
    "the Basal Ganglia of Mice"
)

pytestmark = pytest.mark.django_db


def plos_work(update_type: str = "correction") -> dict[str, Any]:
    """Crossref's recorded answer for the PLOS ONE article, which carries an `updated-by`
    correction; `update_type` swaps the type (a retraction has the same documented shape)."""
    work = json.loads((FIXTURES / "work.json").read_text())
    changed = copy.deepcopy(work)
    changed["message"]["updated-by"][0]["type"] = update_type
    return changed


@pytest.fixture
def crossref(settings: Any, replay_server: ReplayServer) -> Iterator[ReplayServer]:
    settings.ENGINES_ENABLED = ["crossref"]
    settings.CELERY_TASK_ALWAYS_EAGER = True  # a worker would not see this URL
    settings.ENGINE_CACHE_TTLS = {"crossref": 0}
    settings.ENGINE_MAX_RETRIES = 0
    settings.CROSSREF_API_URL = f"{replay_server.url}/crossref"
    registry_module.registry.refresh()
    yield replay_server
    registry_module.registry.refresh()


def check(text: str, engines: tuple[str, ...] = ()) -> list[Resolution]:
    draft = draft_parse(text)
    return resolve_all(draft, scope=None, engine_ids=list(engines))


def test_citekeys_resolve_in_the_library(make_paper) -> None:
    paper = make_paper()
    (found, unknown) = check(rf"Shown \citep{{{paper.citekey}, nobody2031ghost}}.")
    assert (found.status, found.via, found.work and found.work.paper_id) == (
        "exists", "citekey", paper.pk,
    )  # fmt: skip
    assert unknown.status == "unresolved"  # a key the library lacks says nothing of the paper


def test_a_reference_entry_resolves_by_doi_and_its_wrong_year_is_reported(make_paper) -> None:
    paper = make_paper(doi="10.5555/3295222.3295349")
    text = (
        "Attention suffices [1].\n\nReferences\n"
        "[1] A. Vaswani and N. Shazeer, \u201cAttention is all you need,\u201d NeurIPS, 2016. "
        "doi:10.5555/3295222.3295349\n"
    )
    (resolution,) = check(text)
    assert (resolution.status, resolution.via) == ("exists", "doi")
    assert resolution.work is not None and resolution.work.paper_id == paper.pk
    cite = draft_parse(text).cites[0]
    assert metadata_mismatches(cite, resolution.reference, resolution.work) == ["year"]


def test_a_reference_entry_resolves_by_title_whatever_its_case_and_punctuation(make_paper) -> None:
    paper = make_paper()
    make_paper("Attention Is Not All You Need", authors=["Yihe Dong"], year=2021)
    text = (
        "As argued (Vaswani et al., 2017).\n\nReferences\n\n"
        "Vaswani, A., & Shazeer, N. (2017). ATTENTION is all you need! NeurIPS.\n"
    )
    (resolution,) = check(text)
    assert (resolution.status, resolution.via) == ("exists", "title")
    assert resolution.work is not None and resolution.work.paper_id == paper.pk
    cite = draft_parse(text).cites[0]
    assert metadata_mismatches(cite, resolution.reference, resolution.work) == []


def test_wrong_authors_and_title_in_the_entry_are_reported(make_paper) -> None:
    make_paper(doi="10.5555/3295222.3295349")
    text = (
        "Shown [1].\n\nReferences\n"
        "[1] J. Devlin, \u201cDeep residual learning for images,\u201d 2017. "
        "https://doi.org/10.5555/3295222.3295349\n"
    )
    (resolution,) = check(text)
    assert resolution.work is not None and resolution.reference is not None
    cite = draft_parse(text).cites[0]
    assert metadata_mismatches(cite, resolution.reference, resolution.work) == ["authors", "title"]


def test_author_year_without_a_reference_list_uses_the_library(make_paper) -> None:
    make_paper()
    make_paper("Deep Residual Learning", authors=["Kaiming He"], year=2016)
    make_paper("Identity Mappings in Deep Residual Networks", authors=["Kaiming He"], year=2016)
    one, two, none = check(
        "Attention (Vaswani et al., 2017). Residuals (He et al., 2016). Ghosts (Nobody, 2031)."
    )
    assert (one.status, one.via) == ("exists", "author_year")
    assert two.status == "ambiguous"
    assert sorted(w.title for w in two.candidates) == [
        "Deep Residual Learning", "Identity Mappings in Deep Residual Networks",
    ]  # fmt: skip
    assert none.status == "unresolved"  # no entry to look up: not evidence of absence


def test_a_doi_the_library_lacks_is_found_at_crossref_with_its_correction(crossref) -> None:
    crossref.add(PLOS_PATH, Reply(200, plos_work()))
    (resolution,) = check(f"Dopamine neurons are lost (doi:{PLOS_DOI}).", ("crossref",))
    assert (resolution.status, resolution.via) == ("exists", "crossref")
    assert resolution.work is not None and resolution.work.paper_id is None
    assert resolution.work.title == PLOS_TITLE
    assert update_flags(resolution.work) == [
        {
            "flag": "corrected",
            "notice_doi": "10.1371/annotation/c76da2c1-ccb8-4797-94c1-359d3ceceeda",
            "date": "2012-05-08",
        }
    ]
    assert resolution.engines["crossref"]["status"] == "ok"


def test_a_retraction_notice_is_read_for_a_library_paper_cited_by_doi(crossref, make_paper) -> None:
    make_paper(PLOS_TITLE, authors=["Ariel Sobel"], year=2012, doi=PLOS_DOI)
    crossref.add(PLOS_PATH, Reply(200, plos_work("retraction")))
    (resolution,) = check(f"Dopamine neurons are lost (doi:{PLOS_DOI}).", ("crossref",))
    assert (resolution.status, resolution.via) == ("exists", "doi")
    assert resolution.work is not None
    assert [flag["flag"] for flag in update_flags(resolution.work)] == ["retracted"]


# The notice of the PLOS article's correction, as the retraction watch stores it
# (papers/retractions.py), here given as a retraction.
STORED_RETRACTION = {
    "type": "retraction",
    "doi": "10.1371/annotation/c76da2c1-ccb8-4797-94c1-359d3ceceeda",
    "date": "2012-05-08",
    "source": "crossref",
    "reported_by": "retraction-watch",
}


def test_a_retraction_the_watch_stored_on_a_library_paper_is_flagged_offline(make_paper) -> None:
    paper = make_paper(PLOS_TITLE, authors=["Ariel Sobel"], year=2012, doi=PLOS_DOI)
    paper_retraction_update(
        paper_id=paper.pk, notices=[STORED_RETRACTION], complete=True, checked_at=timezone.now()
    )
    (resolution,) = check(f"Dopamine neurons are lost \\cite{{{paper.citekey}}}.")
    assert resolution.work is not None and resolution.work.paper_id == paper.pk
    assert update_flags(resolution.work) == [
        {
            "flag": "retracted",
            "notice_doi": STORED_RETRACTION["doi"],
            "date": "2012-05-08",
            "source": "retraction-watch",
        }
    ]
    # A status set without a notice (by hand in the admin) still flags the paper.
    Paper.objects.filter(pk=paper.pk).update(retraction_notices=[], retraction_status="withdrawn")
    (resolution,) = check(f"Dopamine neurons are lost \\cite{{{paper.citekey}}}.")
    assert resolution.work is not None
    assert update_flags(resolution.work) == [{"flag": "retracted", "source": "library"}]


def test_a_notice_both_stored_and_given_again_by_crossref_is_flagged_once(
    crossref, make_paper
) -> None:
    paper = make_paper(PLOS_TITLE, authors=["Ariel Sobel"], year=2012, doi=PLOS_DOI)
    paper_retraction_update(
        paper_id=paper.pk, notices=[STORED_RETRACTION], complete=True, checked_at=timezone.now()
    )
    crossref.add(PLOS_PATH, Reply(200, plos_work("retraction")))
    (resolution,) = check(f"Dopamine neurons are lost (doi:{PLOS_DOI}).", ("crossref",))
    assert resolution.work is not None and resolution.work.paper_id == paper.pk
    flags = update_flags(resolution.work)
    assert [(flag["flag"], flag["notice_doi"]) for flag in flags] == [
        ("retracted", STORED_RETRACTION["doi"])
    ]


def test_an_unknown_doi_is_not_found_when_crossref_answers(crossref) -> None:
    body = (FIXTURES / "not_found.txt").read_text()
    crossref.add("/crossref/works/10.1371%2Fnotarealdoi", Reply(404, body))
    (resolution,) = check("Made up (doi:10.1371/notarealdoi).", ("crossref",))
    assert resolution.status == "not_found"
    assert resolution.engines["crossref"]["status"] == "not_found"


def test_an_invented_title_is_not_found_when_the_search_finds_other_papers(crossref) -> None:
    crossref.add(
        "/crossref/works", Reply(200, json.loads((FIXTURES / "works_list.json").read_text()))
    )
    text = (
        "Bees dream [1].\n\nReferences\n"
        "[1] Q. Nobody, \u201cOn the dreams of honeybees in quantum ecology,\u201d 2031.\n"
    )
    (resolution,) = check(text, ("crossref",))
    assert resolution.status == "not_found"
    assert "crossref" in resolution.reason


def test_failing_engines_leave_a_citation_unresolved_not_not_found(crossref) -> None:
    crossref.add(PLOS_PATH, Reply(503, "down"))
    (resolution,) = check(f"Lost (doi:{PLOS_DOI}).", ("crossref",))
    assert resolution.status == "unresolved"
    assert resolution.engines["crossref"]["status"] != "ok"
    (offline,) = check(f"Lost (doi:{PLOS_DOI}).")  # engines='local'
    assert offline.status == "unresolved"
    assert "no engine asked" in offline.reason


def test_crossref_keeps_update_notices_in_the_record(crossref) -> None:
    crossref.add(PLOS_PATH, Reply(200, plos_work()))
    record = CrossrefEngine().get_paper_details(PLOS_DOI)
    assert record.metadata["updated_by"] == [
        {
            "type": "correction",
            "doi": "10.1371/annotation/c76da2c1-ccb8-4797-94c1-359d3ceceeda",
            "date": "2012-05-08",
        }
    ]
    assert "update_to" not in record.metadata  # an original work, not a notice
    # Searches ask only for the fields records are built from: the notices are among them.
    crossref.add(
        "/crossref/works", Reply(200, json.loads((FIXTURES / "works_list.json").read_text()))
    )
    CrossrefEngine().search(SearchRequest("ecology"))
    assert {"updated-by", "update-to"} <= set(crossref.requests[-1].query["select"][0].split(","))


def test_an_author_year_marker_that_two_entries_fit_is_ambiguous(make_paper) -> None:
    make_paper()
    text = (
        "Attention (Vaswani et al., 2017).\n\nReferences\n\n"
        "Vaswani, A., & Shazeer, N. (2017). Attention is all you need. NeurIPS.\n\n"
        "Vaswani, A., & Parmar, N. (2017). Image transformer. ICML.\n"
    )
    (resolution,) = check(text)
    assert resolution.status == "ambiguous"
    assert "2 reference entries" in resolution.reason


def test_a_dropped_common_word_is_a_name_again_when_the_library_knows_the_author(
    make_paper,
) -> None:
    """'May' is a sentence's word and a surname: the library decides."""
    make_paper(title="Graph kernels for molecules", authors=["Robert May", "Ann Lee"], year=2020)
    draft = draft_parse("May, Lee and Kim (2020) compare graph kernels.")
    (resolution,) = resolve_all(draft, scope=None, engine_ids=[])
    assert draft.cites[0].key == "may|2020"
    assert resolution.status == "exists"
