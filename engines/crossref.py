"""Crossref (https://www.crossref.org): the registry behind most DOIs, no key needed.

API: https://api.crossref.org/swagger-ui/index.html. With CONTACT_EMAIL set, calls carry
`mailto` and join the "polite pool". Crossref has DOI metadata and publisher-deposited
abstracts, BibTeX for any DOI, but no subject filter and no open list of citing works.
"""

from __future__ import annotations

import html
import re
from typing import Any

from django.conf import settings

from core.errors import InvalidInput
from engines import http
from engines.base import (
    AUTHOR,
    BIBTEX,
    DETAILS,
    REFERENCES,
    SEARCH,
    UPDATES,
    BaseSearchEngine,
    EngineError,
    PaperNotFoundAtSource,
    PaperRef,
    SearchRequest,
    SearchResults,
    UnsupportedOperation,
    records_of,
    reported_total,
)
from papers.identifiers import normalize_doi
from papers.schemas import PaperRecord

MAX_ROWS = 1000
# DOIs per update-notice request: 50 filter values keep the URL near 2 KB.
MAX_UPDATE_DOIS = 50
MAX_OFFSET = 10_000
# DOIs of a reference list fetched in one `filter=doi:...` request (a URL of ~4 kB).
MAX_REFERENCE_DOIS = 100
# Only what records are built from: deposited reference lists can be hundreds of entries.
WORK_FIELDS = ",".join(
    (
        "DOI", "URL", "title", "subtitle", "author", "issued", "published-print",
        "published-online", "container-title", "short-container-title", "volume", "issue",
        "page", "publisher", "type", "is-referenced-by-count", "abstract", "link", "subject",
        "ISSN", "ISBN", "language", "updated-by", "update-to",
    )
)  # fmt: skip

# Crossref work type -> BibTeX entry type.
ENTRY_TYPES = {
    "journal-article": "article",
    "proceedings-article": "inproceedings",
    "book-chapter": "incollection",
    "book-part": "incollection",
    "book-section": "incollection",
    "book": "book",
    "monograph": "book",
    "edited-book": "book",
    "reference-book": "book",
    "dissertation": "phdthesis",
    "report": "techreport",
    "posted-content": "misc",
    "dataset": "misc",
}
_JATS_TITLE = re.compile(r"<(jats:)?title\b[^>]*>.*?</(jats:)?title>", re.IGNORECASE | re.DOTALL)
_TAG = re.compile(r"<[^>]+>")


class CrossrefEngine(BaseSearchEngine):
    id = "crossref"
    name = "Crossref"
    description = (
        "Crossref: metadata of ~180M DOIs straight from publishers (journals, proceedings, "
        "books), with citation counts and BibTeX. No key needed."
    )
    operations = frozenset({SEARCH, AUTHOR, DETAILS, BIBTEX, UPDATES, REFERENCES})
    # `query` is relevance-ranked keywords: no booleans, fields or phrases.
    query_dialect = "plain"
    # The polite pool (requests with `mailto`) allows about 10 requests a second.
    rate_limit = "10/second"

    def probe_url(self) -> str:
        return str(settings.CROSSREF_API_URL)

    def search(self, request: SearchRequest) -> list[PaperRecord]:
        """Works matching `request.query` (Crossref relevance), filtered by publication date.

        Raises UnsupportedOperation when categories are asked for (Crossref has no subject
        filter), and the errors of engines.http.
        """
        return self._works(request, {"query": request.query})

    def search_by_author(self, author: str, request: SearchRequest) -> list[PaperRecord]:
        """Works whose author list matches `author` (Crossref's `query.author`)."""
        return self._works(request, {"query.author": author})

    def get_paper_details(self, paper_id: str) -> PaperRecord:
        """The work with this DOI. Raises PaperNotFoundAtSource when Crossref does not
        know it, EngineError when `paper_id` is not a DOI."""
        doi = _doi(paper_id)
        data = self._get(
            f"/works/{http.path_segment(doi, what='DOI')}",
            {},
            not_found=f"Crossref has no work with DOI {doi}.",
        )
        message = data.get("message")
        if data.get("message-type") != "work" or not isinstance(message, dict):
            raise EngineError(f"Crossref's answer for DOI {doi} is not a work.")
        record = _record(message)
        if record is None:
            raise EngineError(f"Crossref's record for DOI {doi} has no title.")
        return record

    def get_bibtex(self, paper: PaperRef) -> str:
        """Crossref's own BibTeX for the paper's DOI. Raises PaperNotFoundAtSource when the
        paper has no DOI or Crossref does not know it."""
        doi = normalize_doi(paper.doi)
        if not doi:
            raise PaperNotFoundAtSource("Crossref gives BibTeX by DOI; this paper has none.")
        text = http.get_text(
            f"{_base()}/works/{http.path_segment(doi, what='DOI')}/transform/application/x-bibtex",
            accept="application/x-bibtex",
            params=http.contact_params(),
            engine_name=self.name,
            timeout=self.timeout,
            connect_timeout=self.connect_timeout,
            not_found=f"Crossref has no work with DOI {doi}.",
        ).strip()
        if not text.startswith("@"):
            raise EngineError(f"Crossref's BibTeX for DOI {doi} is not BibTeX.")
        return text

    def get_update_notices(self, dois: list[str]) -> list[dict[str, Any]]:
        """Update notices of up to MAX_UPDATE_DOIS DOIs, in two requests: the works
        themselves (`filter=doi:a,doi:b`: their `updated-by`) and the notices that update
        them (`filter=updates:a,updates:b`: their `update-to`; filters of one name are
        ORed). DOIs a filter value cannot carry (with ',') are left out: not checked."""
        wanted = [doi for doi in dict.fromkeys(filter(None, map(normalize_doi, dois)))]
        wanted = [doi for doi in wanted if "," not in doi][:MAX_UPDATE_DOIS]
        found: dict[str, dict[tuple[str, str], dict[str, str]]] = {doi: {} for doi in wanted}
        if not wanted:
            return []

        def add(target: str, update: dict[str, str], notice_doi: str) -> None:
            notices = found.get(normalize_doi(target) or "")
            if notices is not None:
                notice = {
                    "type": update["type"], "doi": notice_doi, "date": update.get("date", ""),
                    "reported_by": update.get("source", ""),
                }  # fmt: skip
                notices[(notice["type"], notice_doi)] = {k: v for k, v in notice.items() if v}

        works = self._list("doi", wanted, "DOI,updated-by")
        for work in works:
            for update in _updates(work.get("updated-by")):
                add(str(work.get("DOI") or ""), update, update.get("doi", ""))
        for notice in self._list("updates", wanted, "DOI,type,update-to"):
            for update in _updates(notice.get("update-to")):
                add(update.get("doi", ""), update, str(notice.get("DOI") or "").lower())
        return [{"doi": doi, "notices": list(notices.values())} for doi, notices in found.items()]

    def _list(self, name: str, dois: list[str], select: str) -> list[dict[str, Any]]:
        """Every work matching `name:<doi>` for any of `dois`, with the `select`ed fields."""
        data = self._get(
            "/works",
            {
                "filter": ",".join(f"{name}:{doi}" for doi in dois),
                "select": select,
                "rows": MAX_ROWS,
            },
        )
        items = (data.get("message") or {}).get("items")
        if data.get("message-type") != "work-list" or not isinstance(items, list):
            raise EngineError("Crossref answered without a list of works.")
        return [item for item in items if isinstance(item, dict)]

    def get_citing_papers(self, paper: PaperRef, max_results: int) -> list[PaperRecord]:
        raise UnsupportedOperation(
            "Crossref does not publish who cites a paper (its cited-by lists are for member "
            "publishers only); use openalex or semantic_scholar for citing papers."
        )

    def get_references(self, paper: PaperRef, max_results: int) -> list[PaperRecord]:
        """Works `paper` cites, from the `reference` list its publisher deposited: the
        entries with a DOI (in list order), fetched as full works in one
        `filter=doi:A,doi:B...` request; entries without a DOI (unstructured citations)
        are left out. Raises PaperNotFoundAtSource when the paper has no DOI or Crossref
        does not know it."""
        doi = normalize_doi(paper.doi)
        if not doi:
            raise PaperNotFoundAtSource("Crossref has reference lists by DOI; this paper has none.")
        data = self._get(
            f"/works/{http.path_segment(doi, what='DOI')}",
            {},
            not_found=f"Crossref has no work with DOI {doi}.",
        )
        message = data.get("message")
        if data.get("message-type") != "work" or not isinstance(message, dict):
            raise EngineError(f"Crossref's answer for DOI {doi} is not a work.")
        cited = [
            normalize_doi(str(entry.get("DOI") or ""))
            for entry in message.get("reference") or []
            if isinstance(entry, dict)
        ]
        wanted = list(dict.fromkeys(d for d in cited if d and d != doi))
        wanted = wanted[: max(1, min(max_results, MAX_REFERENCE_DOIS))]
        if not wanted:
            return []
        listing = self._get(
            "/works",
            {
                "filter": ",".join(f"doi:{d}" for d in wanted),
                "rows": len(wanted),
                "select": WORK_FIELDS,
            },
        )
        items = (listing.get("message") or {}).get("items")
        if listing.get("message-type") != "work-list" or not isinstance(items, list):
            raise EngineError("Crossref answered without a list of works.")
        order = {d: index for index, d in enumerate(wanted)}
        records = _records(items)
        return sorted(records, key=lambda r: order.get(r.doi or "", len(order)))

    # --- calls ---------------------------------------------------------------------------

    def _works(self, request: SearchRequest, params: dict[str, str | int]) -> list[PaperRecord]:
        if request.categories:
            raise UnsupportedOperation("Crossref cannot filter by subject category.")
        if request.offset >= MAX_OFFSET:
            raise EngineError(f"Crossref pages through at most {MAX_OFFSET:,} results of a search.")
        filters = []
        if request.date_from:
            filters.append(f"from-pub-date:{request.date_from}")
        if request.date_to:
            filters.append(f"until-pub-date:{request.date_to}")
        query: dict[str, str | int] = {
            **params,
            "rows": max(1, min(request.max_results, MAX_ROWS)),
            "offset": max(0, request.offset),
            "select": WORK_FIELDS,
        }
        if filters:
            query["filter"] = ",".join(filters)
        data = self._get("/works", query)
        items = (data.get("message") or {}).get("items")
        if data.get("message-type") != "work-list" or not isinstance(items, list):
            raise EngineError("Crossref answered without a list of works.")
        total = reported_total((data.get("message") or {}).get("total-results"))
        return SearchResults(_records(items)[: request.max_results], total=total)

    def _get(self, path: str, params: dict[str, Any], *, not_found: str = "") -> dict[str, Any]:
        data = http.get_json(
            _base() + path,
            params={**params, **http.contact_params()},
            engine_name=self.name,
            timeout=self.timeout,
            connect_timeout=self.connect_timeout,
            not_found=not_found,
        )
        if not isinstance(data, dict):
            raise EngineError("Crossref answered with JSON that is not an object.")
        return data


def _base() -> str:
    return settings.CROSSREF_API_URL.rstrip("/")


def _doi(paper_id: str) -> str:
    doi = normalize_doi(paper_id)
    if not doi:
        raise EngineError(f"Crossref looks papers up by DOI; {paper_id!r} is not a DOI.")
    return doi


# --- parsing -------------------------------------------------------------------------------


def _records(items: list[Any]) -> list[PaperRecord]:
    return records_of(
        items, lambda i: _record(i) if isinstance(i, dict) else None, source="Crossref"
    )


def _record(item: dict[str, Any]) -> PaperRecord | None:
    """A PaperRecord from a Crossref work; None when it has no title."""
    title = _first(item.get("title"))
    if not title:
        return None
    subtitle = _first(item.get("subtitle"))
    if subtitle and subtitle.lower() not in title.lower():
        title = f"{title}: {subtitle}"
    year, date = _issued(item)
    doi = item.get("DOI") or ""
    metadata = {
        "crossref_type": item.get("type") or "",
        "language": item.get("language") or "",
        "issn": item.get("ISSN") or [],
        "isbn": item.get("ISBN") or [],
        # Retractions, corrections, expressions of concern: on the original work
        # (`updated-by`), and on a notice, the works it updates (`update-to`).
        "updated_by": _updates(item.get("updated-by")),
        "update_to": _updates(item.get("update-to")),
    }
    try:
        return PaperRecord.build(
            title=title,
            authors=[_author(a) for a in item.get("author") or [] if isinstance(a, dict)],
            year=year,
            publication_date=date,
            abstract=jats_to_text(item.get("abstract")),
            venue=_first(item.get("container-title")),
            venue_short=_first(item.get("short-container-title")),
            volume=item.get("volume") or "",
            number=item.get("issue") or "",
            pages=item.get("page") or "",
            publisher=item.get("publisher") or "",
            entry_type=ENTRY_TYPES.get(str(item.get("type") or ""), "misc"),
            doi=doi,
            source="crossref",
            source_id=doi,
            source_url=f"https://doi.org/{doi}" if doi else item.get("URL") or "",
            pdf_url=_pdf_url(item.get("link")),
            citation_count=item.get("is-referenced-by-count") or 0,
            categories=[s for s in item.get("subject") or [] if isinstance(s, str)],
            metadata={k: v for k, v in metadata.items() if v},
        )
    except InvalidInput as exc:
        raise EngineError(
            f"Crossref's record {doi or title!r} is unusable: {exc.message}"
        ) from None


def jats_to_text(value: object) -> str:
    """Plain text from a JATS abstract: section titles ('Abstract') and tags dropped,
    entities decoded (twice: some publishers escape HTML inside the JATS)."""
    if not isinstance(value, str):
        return ""
    text = _JATS_TITLE.sub(" ", value)
    for _ in range(2):
        text = html.unescape(_TAG.sub(" ", text))
    text = _TAG.sub(" ", text)
    text = " ".join(text.split())
    # Tags replaced by spaces leave "word ," and "( word": close them up again.
    return re.sub(r"\s+([,.;:)])", r"\1", re.sub(r"\(\s+", "(", text))


def _author(author: dict[str, Any]) -> dict[str, str]:
    given, family = author.get("given") or "", author.get("family") or ""
    affiliations = [a.get("name") for a in author.get("affiliation") or [] if isinstance(a, dict)]
    return {
        "name": " ".join(p for p in (given, family) if p) or author.get("name") or "",
        "given": given,
        "family": family,
        "affiliation": "; ".join(a for a in affiliations if a),
        "profile_link": author.get("ORCID") or "",
    }


def _issued(item: dict[str, Any]) -> tuple[int | None, str]:
    """(year, 'YYYY[-MM[-DD]]') from the first usable of issued / published dates."""
    for key in ("issued", "published-print", "published-online"):
        parts = ((item.get(key) or {}).get("date-parts") or [[]])[0] or []
        numbers = [p for p in parts if isinstance(p, int)]
        if numbers:
            date = "-".join(f"{n:02d}" if i else f"{n:04d}" for i, n in enumerate(numbers[:3]))
            return numbers[0], date
    return None, ""


def _updates(values: object) -> list[dict[str, str]]:
    """Crossref's update entries, kept short: type, the other work's DOI, who says so
    (publisher or retraction-watch) and when."""
    updates = []
    for value in values if isinstance(values, list) else []:
        if isinstance(value, dict) and value.get("type"):
            parts = ((value.get("updated") or {}).get("date-parts") or [[]])[0] or []
            parts = [n for n in parts if isinstance(n, int)]
            date = "-".join(f"{n:02d}" if i else f"{n:04d}" for i, n in enumerate(parts[:3]))
            entry = {
                "type": str(value["type"]),
                "doi": str(value.get("DOI") or "").lower(),
                "source": str(value.get("source") or ""),
                "date": date,
            }
            updates.append({key: item for key, item in entry.items() if item})
    return updates


def _pdf_url(links: object) -> str:
    for link in links if isinstance(links, list) else []:
        if isinstance(link, dict) and link.get("content-type") == "application/pdf":
            return str(link.get("URL") or "")
    return ""


def _first(values: object) -> str:
    if isinstance(values, list):
        return next((str(v) for v in values if v), "")
    return str(values or "")
