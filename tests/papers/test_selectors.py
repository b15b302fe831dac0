"""One paper record for every interface (issue 18, item 4): the brief record of lists and
search results carries links, `publication`, `has_pdf`, projects, summaries and the
annotation count, costs a fixed number of queries per page, and is the same whether it is
built from models (paper_brief) or by the search's one-statement loader (paper_briefs)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from core.errors import NotFound
from papers import assets
from papers.models import Annotation, Paper
from papers.pdf import services as pdf_services
from papers.search.fulltext import paper_briefs, paper_search
from papers.search.listings import paper_search_by_payload
from papers.search.local import local_search, search_filters_build
from papers.search.types import SearchFilters
from papers.selectors import (
    paper_brief,
    paper_detail,
    paper_get,
    papers_filter,
    papers_resolve,
    with_relations,
)
from projects.models import Project
from projects.selectors import project_papers
from projects.services import project_add_papers
from tests.papers.pdf.builders import EXPOSITORY

pytestmark = pytest.mark.django_db

BRIEF_KEYS = {
    "paper_id", "id", "citekey", "title", "year", "venue", "publication", "authors",
    "keywords", "source", "doi", "arxiv_id", "source_id", "url", "pdf_url", "pages", "publisher",
    "has_pdf", "projects", "summaries", "annotation_count",
}  # fmt: skip


@pytest.fixture(autouse=True)
def knowledge_base(settings: Any, tmp_path: Path) -> None:
    settings.DOWNLOADS_DIR = tmp_path / "downloads"
    settings.ASSETS_DIR = tmp_path / "assets"
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.SEARCH_RERANK = False


@pytest.fixture
def curated(make_paper: Callable[..., Paper], make_project: Callable[..., Project]) -> Paper:
    """A paper with everything a record can show: an attached PDF, two annotations, a
    summary, keywords, two projects, journal details."""
    paper = make_paper(
        "Curated Retrieval Study",
        venue="Computational Linguistics",
        volume="49",
        number="2",
        pages="301-340",
        publisher="MIT Press",
        doi="10.1162/coli_a_00001",
        arxiv_id="2301.00001",
        source_url="https://example.org/curated",
        keywords=["retrieval", "curation"],
    )
    pdf_services.pdf_attach_file(paper_id=paper.pk, path=EXPOSITORY)
    for page in (1, 2):
        Annotation.objects.create(
            paper=paper, page=page, kind="highlight", rects=[[1, 1, 2, 2]], color="#ffd400"
        )
    assets.asset_save(
        paper=paper, kind=assets.Kind.SUMMARY, name="brief", content='{"tldr": "Short."}'
    )
    for name in ("Reading list", "Another project"):
        project_add_papers(project=make_project(name), paper_ids=[paper.pk])
    return paper


def test_brief_record_carries_links_publication_pdf_projects_summaries_annotations(
    curated: Paper,
) -> None:
    brief = paper_brief(with_relations(Paper.objects.filter(pk=curated.pk)).get())
    assert set(brief) == BRIEF_KEYS
    assert brief["publication"] == "Computational Linguistics, 49(2), 301-340"
    assert brief["url"] == "https://example.org/curated"
    assert brief["pdf_url"] is None
    assert brief["has_pdf"] is True  # the attached file, though there is no pdf_url
    assert brief["pages"] == "301-340" and brief["publisher"] == "MIT Press"
    assert brief["doi"] == "10.1162/coli_a_00001" and brief["arxiv_id"] == "2301.00001"
    assert brief["projects"] == ["another-project", "reading-list"]
    assert brief["summaries"] == ["brief"]
    assert brief["annotation_count"] == 2
    assert brief["keywords"] == ["curation", "retrieval"]


def test_brief_of_a_paper_loaded_without_prefetching_is_the_same(curated: Paper) -> None:
    plain = Paper.objects.get(pk=curated.pk)
    loaded = with_relations(Paper.objects.filter(pk=curated.pk)).get()
    assert paper_brief(plain) == paper_brief(loaded)


def test_search_hits_carry_the_same_record_as_paper_brief(
    curated: Paper, make_paper: Callable[..., Paper]
) -> None:
    bare = make_paper("Curated Nothing Else", authors=[], year=None)
    page = paper_search(query="curated", limit=10)
    by_id = {hit.record["paper_id"]: hit.record for hit in page.hits}
    for paper in (curated, bare):
        expected = paper_brief(with_relations(Paper.objects.filter(pk=paper.pk)).get())
        assert by_id[paper.pk] == expected
    assert paper_briefs([bare.pk])[bare.pk]["has_pdf"] is False
    assert paper_briefs([bare.pk])[bare.pk]["publication"] is None


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ({"publication_info": "NeurIPS 2017, 1-9", "venue": "NeurIPS"}, "NeurIPS 2017, 1-9"),
        ({"venue": "Proceedings of ACL 2023", "pages": "1-10"}, "Proceedings of ACL 2023, 1-10"),
        ({"venue": "Journal of Things", "volume": "7"}, "Journal of Things, 7"),
        ({}, None),
    ],
)  # fmt: skip
def test_publication_is_the_sources_line_or_venue_volume_issue_pages(
    make_paper: Callable[..., Paper], values: dict[str, str], expected: str | None
) -> None:
    paper = make_paper("A Paper About Publication Lines", **values)
    assert paper_brief(paper)["publication"] == expected
    assert paper_briefs([paper.pk])[paper.pk]["publication"] == expected


def test_a_pdf_url_alone_is_not_has_pdf(make_paper: Callable[..., Paper]) -> None:
    # has_pdf tells an agent which papers the PDF, passage and quote tools work on: only a
    # stored file. The link stays visible as pdf_url.
    paper = make_paper("Downloadable", pdf_url="https://example.org/d.pdf")
    brief = paper_brief(paper)
    assert brief["has_pdf"] is False
    assert brief["pdf_url"] == "https://example.org/d.pdf"


def test_detail_record_is_the_brief_plus_the_rest(curated: Paper) -> None:
    detail = paper_detail(ref=curated.citekey)
    assert BRIEF_KEYS <= set(detail)
    assert detail["source_url"] == "https://example.org/curated"
    assert detail["volume"] == "49" and detail["number"] == "2"
    assert detail["annotation_count"] == 2 and detail["has_pdf"] is True


def _queries(run: Callable[[], object]) -> int:
    with CaptureQueriesContext(connection) as captured:
        run()
    return len(captured.captured_queries)


def test_a_page_of_twenty_papers_costs_as_many_queries_as_a_page_of_two(
    make_paper: Callable[..., Paper], make_project: Callable[..., Project]
) -> None:
    project = make_project("Big page")
    ids = []
    for number in range(20):
        paper = make_paper(
            f"Paper number {number} on paging", authors=[f"Author {number}"], keywords=["k"]
        )
        Annotation.objects.create(
            paper=paper, page=1, kind="area", rects=[[1, 1, 2, 2]], color="#ffd400"
        )
        ids.append(paper.pk)
    project_add_papers(project=project, paper_ids=ids)

    def listing(limit: int) -> Callable[[], object]:
        def run() -> object:
            papers, _ = project_papers(project=project, limit=limit, offset=0)
            return [paper_brief(paper) for paper in papers]

        return run

    def exported(count: int) -> Callable[[], object]:
        return lambda: [paper_brief(p) for p in papers_filter(refs=ids[:count])]

    small, large = _queries(listing(2)), _queries(listing(20))
    assert small == large <= 10, (small, large)
    papers, _ = project_papers(project=project, limit=20, offset=0)
    assert all(paper_brief(p)["annotation_count"] == 1 for p in papers)

    # The payload search's page (ids first, then the records) is flat as well.
    def payload(limit: int) -> Callable[[], object]:
        return lambda: paper_search_by_payload(filters=SearchFilters(keyword="k"), limit=limit)

    assert _queries(payload(2)) == _queries(payload(20))
    # papers_filter resolves each reference once, then loads the page in fixed queries.
    assert _queries(exported(20)) - _queries(exported(2)) <= 18 * 1


def test_has_pdf_filter_matches_attached_pdfs(
    curated: Paper, make_paper: Callable[..., Paper]
) -> None:
    with_url = make_paper("Only A Link", pdf_url="https://example.org/l.pdf")
    neither = make_paper("No PDF At All")
    found = {
        hit.record["paper_id"]
        for hit in paper_search_by_payload(filters=SearchFilters(has_pdf=True), limit=10).hits
    }
    assert found == {curated.pk}
    missing = paper_search_by_payload(filters=SearchFilters(has_pdf=False), limit=10).hits
    assert {hit.record["paper_id"] for hit in missing} == {with_url.pk, neither.pk}
    linked = paper_search_by_payload(filters=SearchFilters(has_pdf_url=True), limit=10).hits
    assert {hit.record["paper_id"] for hit in linked} == {with_url.pk}


def test_local_search_within_a_project_tags_every_result_with_it(
    curated: Paper, make_paper: Callable[..., Paper]
) -> None:
    make_paper("Curated But Outside")
    filters = search_filters_build(project="Reading list")
    page = local_search(query="curated", filters=filters, limit=10)
    assert [hit.record["paper_id"] for hit in page.hits] == [curated.pk]
    assert page.hits[0].as_dict()["project_id"] == "reading-list"
    unrestricted = local_search(query="curated", limit=10)
    assert all("project_id" not in hit.record for hit in unrestricted.hits)


def test_a_search_filing_results_into_a_project_tags_each_result(
    curated: Paper, make_project: Callable[..., Project]
) -> None:
    from projects.intake import engines_search

    target = make_project("Filed results")
    result = engines_search(
        calls=[], local=lambda: local_search(query="curated", limit=10), project_ids=[target.id]
    )
    assert [entry["paper_id"] for entry in result.results] == [curated.pk]
    assert result.results[0]["project_id"] == target.id
    assert result.results[0]["publication"] == "Computational Linguistics, 49(2), 301-340"
    assert target.id in paper_brief(Paper.objects.get(pk=curated.pk))["projects"]


# --- papers named by external identifiers (PMID, PMCID, OpenReview, DOI, arXiv) ----------


@pytest.fixture
def pubmed_paper(make_paper: Callable[..., Paper]) -> Paper:
    return make_paper(
        "A PubMed paper",
        doi="10.1038/s41586-019-1506-7",
        identifiers={"pmid": "31452104", "pmcid": "PMC6739224", "openreview": "YicbFdNTTy"},
    )


@pytest.mark.parametrize(
    "ref",
    [
        "pmid:31452104",
        "PMID 31452104",
        "PMID: 31452104",
        "https://pubmed.ncbi.nlm.nih.gov/31452104/",
        "PMC6739224",
        "pmc6739224",
        "https://pmc.ncbi.nlm.nih.gov/articles/PMC6739224/",
        "https://www.ncbi.nlm.nih.gov/pmc/articles/PMC6739224",
        "openreview:YicbFdNTTy",
        "https://openreview.net/forum?id=YicbFdNTTy",
        "10.1038/S41586-019-1506-7",
        "https://doi.org/10.1038/s41586-019-1506-7",
    ],
)
def test_a_paper_is_named_by_its_external_identifiers(pubmed_paper: Paper, ref: str) -> None:
    assert paper_get(ref=ref) == pubmed_paper
    assert papers_resolve(refs=[ref, pubmed_paper.citekey]) == [pubmed_paper.pk]


def test_bare_digits_stay_a_paper_id_never_a_pmid(pubmed_paper: Paper) -> None:
    with pytest.raises(NotFound):
        paper_get(ref="31452104")
    with pytest.raises(NotFound):
        papers_resolve(refs=["31452104"])
    assert paper_get(ref=str(pubmed_paper.pk)) == pubmed_paper
    # A bare OpenReview-shaped token is a citekey, not an OpenReview id.
    with pytest.raises(NotFound):
        paper_get(ref="YicbFdNTTy")


def test_a_citekey_shaped_like_an_identifier_wins_and_unknown_ids_are_not_found(
    make_paper: Callable[..., Paper], pubmed_paper: Paper
) -> None:
    other = make_paper("Other", preferred_citekey="PMC6739224")
    assert other.citekey == "PMC6739224"
    assert paper_get(ref="PMC6739224") == other  # the exact citekey first
    assert paper_get(ref="pmcid:PMC6739224") == pubmed_paper  # the prefix makes it a PMCID
    assert papers_resolve(refs=["PMC6739224", "pmcid:PMC6739224"]) == [other.pk, pubmed_paper.pk]
    with pytest.raises(NotFound):
        paper_get(ref="pmid:1")
    with pytest.raises(NotFound) as unknown:
        papers_resolve(refs=["pmid:31452104", "PMC1", "openreview:NoSuchNote"])
    assert unknown.value.details["paper_ids"] == ["PMC1", "openreview:NoSuchNote"]


def test_a_preprint_is_named_by_its_published_versions_doi_after_the_published_paper(
    make_paper: Callable[..., Paper],
) -> None:
    preprint = make_paper(
        "A preprint",
        doi="10.1101/2020.01.01.123456",
        identifiers={"published_doi": "10.1000/journal.1"},
    )
    assert paper_get(ref="10.1000/journal.1") == preprint
    assert papers_resolve(refs=["doi:10.1000/JOURNAL.1"]) == [preprint.pk]
