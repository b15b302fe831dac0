"""Reads from the paper library: resolving a reference, shaping records for interfaces."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db.models import Prefetch, QuerySet

from core.errors import InvalidInput, NotFound
from papers.models import Paper, PaperAuthor
from papers.scoping import papers_in_project, project_find
from papers.scoping import papers_in_scope as papers_in_scope

MAX_REF_LENGTH = 600
# Larger numbers cannot be a paper_id (a 64-bit integer); the databases refuse to compare
# them (SQLite: OverflowError, PostgreSQL: bigint out of range), so they simply match nothing.
MAX_PAPER_ID = 2**63 - 1


def paper_get(*, ref: str | int, scope: Sequence[str] | None = None) -> Paper:
    """The paper named by its paper_id (integer or digits), human id ('[Smith, J. 2024]'),
    citekey, or a citekey alias (e.g. the key it had in an imported BibTeX file).

    Raises NotFound (with the reference) or InvalidInput for an empty or oversized ref.
    """
    queryset = papers_in_scope(scope).select_related("venue")
    if isinstance(ref, bool):
        raise InvalidInput("paper_id must be a number or a text identifier.", field="paper_id")
    if isinstance(ref, int):
        paper = queryset.filter(pk=ref).first() if 0 < ref <= MAX_PAPER_ID else None
    else:
        text = str(ref).strip()
        if not text:
            raise InvalidInput("paper_id cannot be empty.", field="paper_id")
        if len(text) > MAX_REF_LENGTH:
            raise InvalidInput("paper_id is too long.", field="paper_id")
        if text.isascii() and text.isdigit():  # not '¹', which int() refuses
            number = int(text)
            paper = queryset.filter(pk=number).first() if 0 < number <= MAX_PAPER_ID else None
        elif text.startswith("["):
            paper = queryset.filter(human_id=text).first()
        else:
            paper = (
                queryset.filter(citekey=text).first()
                or queryset.filter(identifiers__scheme="citekey", identifiers__value=text).first()
            )
    if paper is None:
        raise NotFound(f"No paper {ref!r} in the library.", paper_id=str(ref))
    return paper


def papers_get_many(
    *, refs: Sequence[str | int], scope: Sequence[str] | None = None
) -> list[Paper]:
    """Several papers by reference, in the order given; NotFound names the first unknown."""
    return [paper_get(ref=ref, scope=scope) for ref in refs]


def with_relations(queryset: QuerySet[Paper]) -> QuerySet[Paper]:
    """Prefetch what records show, so a page of papers costs a fixed number of queries."""
    return queryset.select_related("venue").prefetch_related(
        Prefetch(
            "author_links",
            queryset=PaperAuthor.objects.select_related("author", "affiliation").order_by(
                "position"
            ),
        ),
        "keywords",
        "categories",
        "projects",
        "identifiers",
    )


def _authors(paper: Paper) -> list[str]:
    return [link.author.name for link in paper.author_links.all()]


def paper_brief(paper: Paper) -> dict[str, Any]:
    """The short record used in lists and search results."""
    return {
        "paper_id": paper.pk,
        "id": paper.human_id,
        "citekey": paper.citekey,
        "title": paper.title,
        "year": paper.year,
        "venue": paper.venue.name if paper.venue else None,
        "authors": _authors(paper),
        "keywords": sorted(k.name for k in paper.keywords.all()),
        "source": paper.source,
        "doi": paper.doi,
    }


def paper_record(paper: Paper) -> dict[str, Any]:
    """The complete record of a paper (get_paper_details, exports to JSON)."""
    links = list(paper.author_links.all())
    return {
        **paper_brief(paper),
        "authors_detail": [
            {
                "name": link.author.name,
                "family_name": link.author.family_name,
                "given_name": link.author.given_name,
                "affiliation": link.affiliation.name if link.affiliation else None,
                "profile_link": link.author.profile_link or None,
            }
            for link in links
        ],
        "authors_string": paper.authors_string,
        "entry_type": paper.entry_type,
        "abstract": paper.abstract or None,
        "snippet": paper.snippet or None,
        "publication_info": paper.publication_info or None,
        "publication_date": paper.publication_date or None,
        "volume": paper.volume or None,
        "number": paper.number or None,
        "pages": paper.pages or None,
        "publisher": paper.publisher or None,
        "arxiv_id": paper.arxiv_id,
        "source_id": paper.source_id or None,
        "source_url": paper.source_url or None,
        "pdf_url": paper.pdf_url or None,
        "citation_count": paper.citation_count,
        "cites_id": paper.cites_id or None,
        "result_id": paper.result_id or None,
        "versions_count": paper.versions_count,
        "categories": sorted(c.name for c in paper.categories.all()),
        "projects": sorted(p.id for p in paper.projects.all()),
        "identifiers": {i.scheme: i.value for i in paper.identifiers.all()},
        "resources": paper.resources,
        "metadata": paper.metadata,
        "created_at": paper.created_at.isoformat(),
        "updated_at": paper.updated_at.isoformat(),
    }


def paper_detail(*, ref: str | int, scope: Sequence[str] | None = None) -> dict[str, Any]:
    paper = paper_get(ref=ref, scope=scope)
    return paper_record(with_relations(Paper.objects.filter(pk=paper.pk)).get())


# Large free-text parts of a record that the compact metadata record leaves out.
BULKY_RECORD_FIELDS = frozenset({"abstract", "snippet", "metadata", "resources", "authors_detail"})


def paper_metadata(*, ref: str | int, scope: Sequence[str] | None = None) -> dict[str, Any]:
    """The compact structured record (get_paper_metadata, paper://{id}/metadata): the full
    record without abstract and free-form blobs, plus the paper's summary templates
    (`preferred_summary_template`, `available_summary_templates`)."""
    from papers.assets import summary_templates_info

    detail = paper_detail(ref=ref, scope=scope)
    compact = {k: v for k, v in detail.items() if k not in BULKY_RECORD_FIELDS}
    return {**compact, **summary_templates_info(paper_id=detail["paper_id"])}


def papers_filter(
    *,
    refs: Sequence[str | int] | None = None,
    project: str | None = None,
    scope: Sequence[str] | None = None,
) -> QuerySet[Paper]:
    """Papers for an export: by references, by project, or both (intersection)."""
    queryset = papers_in_scope(scope)
    if refs:
        ids = [p.pk for p in papers_get_many(refs=refs, scope=scope)]
        queryset = queryset.filter(pk__in=ids)
    if project:
        found = project_find(ref=project, scope=scope)
        queryset = queryset.filter(pk__in=papers_in_project(found).values("pk"))
    return with_relations(queryset.order_by("paper_id"))
