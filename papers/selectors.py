"""Reads from the paper library: resolving a reference, shaping records for interfaces."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any

from django.db.models import (
    Count,
    Exists,
    IntegerField,
    OuterRef,
    Prefetch,
    Q,
    QuerySet,
    Subquery,
)
from django.db.models.functions import Coalesce
from pydantic import Field

from core.errors import InvalidInput, NotFound
from papers.identifiers import reference_identifier
from papers.models import Annotation, Paper, PaperAsset, PaperAuthor, PaperIdentifier, PaperPdf
from papers.scoping import papers_in_project, project_find, visible_project_ids
from papers.scoping import papers_in_scope as papers_in_scope

MAX_REF_LENGTH = 600
# A paper as a client names it (paper_id, human id, citekey or an external identifier such as
# 'pmid:31452104'; `paper_get` reads them all):
# the one input type of the MCP tools and the REST endpoints that take papers.
PaperRefValue = (
    Annotated[int, Field(ge=1)] | Annotated[str, Field(min_length=1, max_length=MAX_REF_LENGTH)]
)
# Larger numbers cannot be a paper_id (a 64-bit integer); the databases refuse to compare
# them (SQLite: OverflowError, PostgreSQL: bigint out of range), so they simply match nothing.
MAX_PAPER_ID = 2**63 - 1
# papers_resolve: most references in one call.
MAX_REFS = 1_000


def identifier_lookups(scheme: str, values: Sequence[str]) -> list[tuple[Q, str]]:
    """Where papers with these (normalised) external identifiers are found, best first, each
    with the field holding the value: a DOI or arXiv id in its column, then among the
    identifier rows (an alias, another scheme's id), then a DOI as a preprint's published
    version's DOI (`published_doi`)."""
    lookups = []
    if scheme in ("doi", "arxiv"):
        column = "doi" if scheme == "doi" else "arxiv_id"
        lookups.append((Q(**{f"{column}__in": values}), column))
    lookups.append(
        (Q(identifiers__scheme=scheme, identifiers__value__in=values), "identifiers__value")
    )
    if scheme == "doi":
        lookups.append(
            (
                Q(identifiers__scheme="published_doi", identifiers__value__in=values),
                "identifiers__value",
            )
        )
    return lookups


def paper_get(*, ref: str | int, scope: Sequence[str] | None = None) -> Paper:
    """The paper named by its paper_id (integer or digits), human id ('[Smith, J. 2024]'),
    citekey, a citekey alias (e.g. the key it had in an imported BibTeX file), or an
    external identifier: 'pmid:31452104' / 'PMID 31452104' / a PubMed URL, 'PMC6739224' /
    a PMC URL, 'openreview:<id>' / an OpenReview URL, a DOI or an arXiv id (the rule, and
    why bare digits stay a paper_id: papers.identifiers.reference_identifier).

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
            named = reference_identifier(text) if paper is None else None
            for query, _ in identifier_lookups(named[0], [named[1]]) if named else []:
                paper = paper or queryset.filter(query).order_by("pk").first()
    if paper is None:
        raise NotFound(f"No paper {ref!r} in the library.", paper_id=str(ref))
    return paper


def papers_get_many(
    *, refs: Sequence[str | int], scope: Sequence[str] | None = None
) -> list[Paper]:
    """Several papers by reference, in the order given; NotFound names the first unknown."""
    return [paper_get(ref=ref, scope=scope) for ref in refs]


def papers_resolve(*, refs: Sequence[str | int], scope: Sequence[str] | None = None) -> list[int]:
    """The paper_ids of these references (paper_id, human id, citekey or citekey alias, as
    paper_get accepts), in the order given, each once, in a few queries whatever the count.

    Raises InvalidInput for more than MAX_REFS references or an empty, oversized or
    non-text one; NotFound naming every reference that matches no paper (in scope).
    """
    if isinstance(refs, str | bytes) or not isinstance(refs, Sequence):
        raise InvalidInput("paper_ids must be a list of paper identifiers.", field="paper_ids")
    if len(refs) > MAX_REFS:
        raise InvalidInput(f"At most {MAX_REFS} paper_ids at a time.", field="paper_ids")
    texts = [_ref_text(ref) for ref in refs]
    numbers = {number for t in texts if (number := _paper_number(t)) is not None}
    human_ids = {t for t in texts if t.startswith("[")}
    keys = {t for t in texts if not _is_number(t) and not t.startswith("[")}

    visible = papers_in_scope(scope)
    found: dict[str, int] = {}
    for pk in visible.filter(pk__in=numbers).values_list("pk", flat=True):
        found[str(pk)] = pk
    for pk, human_id in visible.filter(human_id__in=human_ids).values_list("pk", "human_id"):
        found[human_id] = pk
    for pk, citekey in visible.filter(citekey__in=keys).values_list("pk", "citekey"):
        found[citekey] = pk
    aliases = keys - found.keys()
    if aliases:
        alias_rows = PaperIdentifier.objects.filter(
            scheme="citekey", value__in=aliases, paper__in=visible.values("pk")
        ).values_list("value", "paper_id")
        for value, pk in alias_rows:
            found.setdefault(value, pk)
    _resolve_identifiers(keys - found.keys(), visible, found)
    unknown = [ref for ref, text in zip(refs, texts, strict=True) if _lookup(found, text) is None]
    if unknown:
        listed = ", ".join(repr(ref) for ref in unknown[:20])
        more = f" and {len(unknown) - 20} more" if len(unknown) > 20 else ""
        raise NotFound(
            f"No paper {listed}{more} in the library.", paper_ids=[str(ref) for ref in unknown]
        )
    return list(dict.fromkeys(_lookup(found, text) or 0 for text in texts))


def _resolve_identifiers(texts: set[str], visible: QuerySet[Paper], found: dict[str, int]) -> None:
    """Add to `found` the references among `texts` that are external identifiers
    (`reference_identifier`) of visible papers: one query per scheme named."""
    by_scheme: dict[str, dict[str, list[str]]] = {}
    for text in texts:
        named = reference_identifier(text)
        if named is not None:
            by_scheme.setdefault(named[0], {}).setdefault(named[1], []).append(text)
    for scheme, wanted in by_scheme.items():
        for query, field_name in identifier_lookups(scheme, list(wanted)):
            rows = visible.filter(query).order_by("pk").values_list(field_name, "pk")
            for value, pk in rows:
                for text in wanted.get(value, []):
                    found.setdefault(text, pk)


def _ref_text(ref: object) -> str:
    if isinstance(ref, bool) or not isinstance(ref, str | int):
        raise InvalidInput(
            "Each paper_id must be a number or a text identifier.", field="paper_ids"
        )
    text = str(ref).strip()
    if not text:
        raise InvalidInput("A paper_id cannot be empty.", field="paper_ids")
    if len(text) > MAX_REF_LENGTH:
        raise InvalidInput("A paper_id is too long.", field="paper_ids")
    return text


def _is_number(text: str) -> bool:
    return text.isascii() and text.isdigit()  # not '¹' or '٣', which int() refuses


def _paper_number(text: str) -> int | None:
    """The paper_id a digits reference names, None past the largest possible one (a
    database integer would overflow: no such paper)."""
    if not _is_number(text):
        return None
    number = int(text)
    return number if 0 < number <= MAX_PAPER_ID else None


def _lookup(found: dict[str, int], text: str) -> int | None:
    # Digits are keyed by their canonical form, so '007' finds paper 7 as paper_get does.
    if _is_number(text):
        number = _paper_number(text)
        return None if number is None else found.get(str(number))
    return found.get(text)


def with_relations(queryset: QuerySet[Paper]) -> QuerySet[Paper]:
    """Prefetch and annotate what records show, so a page of papers costs a fixed number
    of queries (the paper rows with `has_pdf_file` and `annotation_total`, then one query
    per relation), whatever the page size."""
    annotations = (
        Annotation.objects.filter(paper=OuterRef("pk"))
        .order_by()
        .values("paper")
        .annotate(n=Count("pk"))
        .values("n")
    )
    return (
        queryset.select_related("venue")
        .annotate(
            has_pdf_file=Exists(PaperPdf.objects.filter(paper=OuterRef("pk"))),
            annotation_total=Coalesce(
                Subquery(annotations, output_field=IntegerField()), 0, output_field=IntegerField()
            ),
        )
        .prefetch_related(
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
            Prefetch(
                "assets",
                queryset=PaperAsset.objects.filter(kind=PaperAsset.Kind.SUMMARY).only(
                    "pk", "paper_id", "kind", "name"
                ),
                to_attr="summary_assets",
            ),
        )
    )


# Identifier schemes exports write (BibTeX, RIS, CSV), beside the DOI and the arXiv id.
EXPORTED_SCHEMES = ("pmid", "pmcid", "openreview")


def paper_identifiers(paper: Paper) -> dict[str, str]:
    """The paper's PubMed, PMC and OpenReview ids (the first stored of a scheme, when a
    preprint merged with its publication brought two), from its prefetched rows."""
    found: dict[str, str] = {}
    for row in sorted(paper.identifiers.all(), key=lambda row: row.pk):
        if row.scheme in EXPORTED_SCHEMES:
            found.setdefault(row.scheme, row.value)
    return found


def _authors(paper: Paper) -> list[str]:
    return [link.author.name for link in paper.author_links.all()]


def publication_text(
    *, publication_info: str, venue: str | None, volume: str, number: str, pages: str
) -> str | None:
    """A paper's `publication`: where the paper appeared, as one line, 'Journal Name,
    Volume(Issue), Pages'. The source's own line (Scholar's publication summary, arXiv's
    journal reference) when there is one, else made from the venue, volume, issue and
    pages; None when nothing is known."""
    if publication_info:
        return publication_info
    if not venue:
        return None
    issue = f"({number})" if number else ""
    parts = [venue, f"{volume}{issue}", pages]
    return ", ".join(part for part in parts if part)


def brief_from_values(values: dict[str, Any]) -> dict[str, Any]:
    """The brief record from plain values: `paper_brief` (model instances) and the search's
    one-statement loader (papers.search.fulltext.paper_briefs) both build it here, so the
    two can never differ. `values` holds the paper's columns by field name, plus `venue`
    (its name), `authors`, `keywords`, `projects`, `summaries` (lists), `has_pdf_file`
    and `annotation_count`."""
    brief = {
        "paper_id": values["paper_id"],
        "id": values["human_id"],
        "citekey": values["citekey"],
        "title": values["title"],
        "year": values["year"],
        "venue": values["venue"],
        "publication": publication_text(
            publication_info=values["publication_info"],
            venue=values["venue"],
            volume=values["volume"],
            number=values["number"],
            pages=values["pages"],
        ),
        "authors": list(values["authors"]),
        "keywords": sorted(values["keywords"]),
        "source": values["source"],
        "doi": values["doi"],
        "arxiv_id": values["arxiv_id"],
        # The source's own id (an ACL Anthology id, a collection's document id): with the DOI
        # and arXiv id, what a caller maps a result back to its own list by.
        "source_id": values["source_id"] or None,
        "url": values["source_url"] or None,
        "pdf_url": values["pdf_url"] or None,
        "pages": values["pages"] or None,
        "publisher": values["publisher"] or None,
        # A PDF stored in the library: the PDF, passage and quote tools work on it. A
        # `pdf_url` alone is only where one could be downloaded from (attach_pdf).
        "has_pdf": bool(values["has_pdf_file"]),
        "projects": visible_project_ids(values["projects"]),
        "summaries": sorted(values["summaries"]),
        "annotation_count": int(values["annotation_count"] or 0),
    }
    # Only when set, to keep lists lean: 'retracted', 'corrected', ... (papers/retractions.py).
    if values["retraction_status"]:
        brief["retraction"] = values["retraction_status"]
    return brief


# The paper columns a brief record reads (brief_from_values' plain fields).
BRIEF_COLUMNS = (
    "paper_id", "human_id", "citekey", "title", "year", "source", "doi", "arxiv_id",
    "publication_info", "volume", "number", "pages", "publisher", "source_url", "pdf_url",
    "retraction_status", "source_id",
)  # fmt: skip


def paper_brief(paper: Paper) -> dict[str, Any]:
    """The short record used in lists and search results: identifiers, title, year, venue
    and `publication`, authors, keywords, links (url, pdf_url, doi, arxiv_id), `has_pdf`,
    the paper's `projects`, its `summaries` (template names) and `annotation_count`.

    Costs no query for a paper loaded through `with_relations`; otherwise the relations
    are read one query each."""
    summaries = getattr(paper, "summary_assets", None)
    if summaries is None:
        summaries = paper.assets.filter(kind=PaperAsset.Kind.SUMMARY).only("name")
    has_pdf_file = getattr(paper, "has_pdf_file", None)
    if has_pdf_file is None:
        has_pdf_file = PaperPdf.objects.filter(paper=paper).exists()
    annotation_count = getattr(paper, "annotation_total", None)
    if annotation_count is None:
        annotation_count = paper.annotations.count()
    return brief_from_values(
        {
            **{column: getattr(paper, column) for column in BRIEF_COLUMNS},
            "venue": paper.venue.name if paper.venue else None,
            "authors": _authors(paper),
            "keywords": [k.name for k in paper.keywords.all()],
            "projects": [p.id for p in paper.projects.all()],  # type: ignore[attr-defined]
            "summaries": [asset.name for asset in summaries],
            "has_pdf_file": has_pdf_file,
            "annotation_count": annotation_count,
        }
    )


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
        "projects": visible_project_ids(p.id for p in paper.projects.all()),
        "identifiers": {i.scheme: i.value for i in paper.identifiers.all()},
        "resources": paper.resources,
        "metadata": paper.metadata,
        # Retraction watch: the notices behind `retraction`, and when every source last
        # answered (None: never checked, or a source failed each time).
        "retraction_notices": paper.retraction_notices or [],
        "retraction_checked_at": (
            paper.retraction_checked_at.isoformat() if paper.retraction_checked_at else None
        ),
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
