"""OpenAlex (https://openalex.org): an open catalogue of ~250M works, no key needed.

API: https://docs.openalex.org. With CONTACT_EMAIL set, calls carry `mailto` and join the
"polite pool" (about 10 requests a second). Categories are OpenAlex's 26 top-level fields
(a work's primary topic belongs to one), listed statically: they change about never.

One module because it is one provider's client (each external source has one client
module): its record mapping follows OpenAlex's work format.
"""

from __future__ import annotations

import re
from typing import Any

from django.conf import settings

from core.errors import InvalidInput
from engines import http
from engines.base import (
    AUTHOR,
    CATEGORIES,
    CITING,
    DETAILS,
    REFERENCES,
    SEARCH,
    UPDATES,
    BaseSearchEngine,
    Category,
    EngineError,
    PaperNotFoundAtSource,
    PaperRef,
    SearchRequest,
    SearchResults,
    records_of,
    reported_total,
)
from papers.identifiers import normalize_arxiv_id, normalize_doi
from papers.schemas import PaperRecord

MAX_PER_PAGE = 200
# DOIs per `doi:a|b|...` filter: OpenAlex takes up to 50 values in one OR filter.
MAX_UPDATE_DOIS = 50
# Values one OR filter (`openalex:W1|W2|...`) may hold.
MAX_OR_VALUES = 100
# Only what records are built from: a full work with its reference lists is ~10x larger.
WORK_FIELDS = ",".join(
    (
        "id", "doi", "title", "display_name", "publication_year", "publication_date", "ids",
        "language", "primary_location", "best_oa_location", "locations", "type",
        "open_access", "authorships", "biblio", "cited_by_count", "abstract_inverted_index",
        "primary_topic", "topics", "keywords", "concepts",
    )
)  # fmt: skip
_WORK_ID = re.compile(r"^(?:https?://(?:api\.)?openalex\.org/(?:works/)?)?(W\d+)$", re.IGNORECASE)
_PMID = re.compile(r"^pmid:\s*(\d+)$", re.IGNORECASE)

# (field id, name, domain): https://api.openalex.org/fields
FIELDS = (
    ("11", "Agricultural and Biological Sciences", "Life Sciences"),
    ("12", "Arts and Humanities", "Social Sciences"),
    ("13", "Biochemistry, Genetics and Molecular Biology", "Life Sciences"),
    ("14", "Business, Management and Accounting", "Social Sciences"),
    ("15", "Chemical Engineering", "Physical Sciences"),
    ("16", "Chemistry", "Physical Sciences"),
    ("17", "Computer Science", "Physical Sciences"),
    ("18", "Decision Sciences", "Social Sciences"),
    ("19", "Earth and Planetary Sciences", "Physical Sciences"),
    ("20", "Economics, Econometrics and Finance", "Social Sciences"),
    ("21", "Energy", "Physical Sciences"),
    ("22", "Engineering", "Physical Sciences"),
    ("23", "Environmental Science", "Physical Sciences"),
    ("24", "Immunology and Microbiology", "Life Sciences"),
    ("25", "Materials Science", "Physical Sciences"),
    ("26", "Mathematics", "Physical Sciences"),
    ("27", "Medicine", "Health Sciences"),
    ("28", "Neuroscience", "Life Sciences"),
    ("29", "Nursing", "Health Sciences"),
    ("30", "Pharmacology, Toxicology and Pharmaceutics", "Life Sciences"),
    ("31", "Physics and Astronomy", "Physical Sciences"),
    ("32", "Psychology", "Social Sciences"),
    ("33", "Social Sciences", "Social Sciences"),
    ("34", "Veterinary", "Health Sciences"),
    ("35", "Dentistry", "Health Sciences"),
    ("36", "Health Professions", "Health Sciences"),
)

# OpenAlex work type -> BibTeX entry type; "article" in a conference is inproceedings.
ENTRY_TYPES = {
    "article": "article",
    "review": "article",
    "letter": "article",
    "editorial": "article",
    "book": "book",
    "book-chapter": "incollection",
    "dissertation": "phdthesis",
    "report": "techreport",
    "preprint": "misc",
    "dataset": "misc",
}


class OpenAlexEngine(BaseSearchEngine):
    id = "openalex"
    name = "OpenAlex"
    description = (
        "OpenAlex: open catalogue of ~250M scholarly works across all fields, with "
        "abstracts, affiliations, open-access PDF links and citations. No key needed."
    )
    operations = frozenset({SEARCH, AUTHOR, DETAILS, CITING, CATEGORIES, UPDATES, REFERENCES})
    # `search`: AND / OR / NOT with parentheses and phrases over title, abstract and full
    # text; no fields, no truncation (whole words, stemmed).
    query_dialect = "openalex"
    # The polite pool (requests with `mailto`) allows about 10 requests a second.
    rate_limit = "10/second"

    def probe_url(self) -> str:
        return str(settings.OPENALEX_API_URL)

    def search(self, request: SearchRequest) -> list[PaperRecord]:
        """Works matching `request.query` (OpenAlex relevance), filtered by date and field.

        Raises EngineError for unknown categories, and the errors of engines.http.
        """
        return self._works(request, {"search": request.query})

    def search_by_author(self, author: str, request: SearchRequest) -> list[PaperRecord]:
        """Works of the author OpenAlex ranks first for `author`, newest first.

        The matched author is named in each record's metadata["author_match"] so a caller
        can see when a common name picked someone else. No match: no works.
        """
        found = self._get("/authors", {"search": author, "per-page": 1})
        results = found.get("results") or []
        if not results:
            return []
        match = results[0]
        author_id = _short_id(match.get("id"))
        if not author_id:
            return []
        institutions = match.get("last_known_institutions") or [
            match.get("last_known_institution") or {}
        ]
        author_match = {
            "openalex_id": author_id,
            "name": match.get("display_name") or "",
            "orcid": match.get("orcid") or "",
            "works_count": match.get("works_count") or 0,
            "institution": (institutions[0] or {}).get("display_name") or "",
        }
        records = self._works(
            request,
            {"sort": "publication_date:desc"},
            extra_filters=[f"author.id:{author_id}"],
        )
        for record in records:
            record.metadata["author_match"] = author_match
        return records

    def get_paper_details(self, paper_id: str) -> PaperRecord:
        """One work by OpenAlex id ('W2741809807' or its URL), DOI ('10.…', 'doi:10.…',
        'https://doi.org/…') or 'pmid:…'.

        Raises PaperNotFoundAtSource when OpenAlex has no such work, EngineError for an
        id of another kind.
        """
        path = f"/works/{_work_key(paper_id)}"
        work = self._get(
            path, {"select": WORK_FIELDS}, not_found=f"OpenAlex has no work {paper_id!r}."
        )
        record = _record(work)
        if record is None:
            raise EngineError(f"OpenAlex's record for {paper_id!r} has no title.")
        return record

    def get_update_notices(self, dois: list[str]) -> list[dict[str, Any]]:
        """`is_retracted` of up to MAX_UPDATE_DOIS DOIs in one request
        (`filter=doi:a|b|...`, OpenAlex's OR). A retracted work gets one notice of type
        'retraction' (OpenAlex names no notice). DOIs with '|' or ',' are left out (not
        checked); a DOI OpenAlex does not know counts as checked, with no notice."""
        wanted = [doi for doi in dict.fromkeys(filter(None, map(normalize_doi, dois)))]
        wanted = [doi for doi in wanted if not set(doi) & {"|", ","}][:MAX_UPDATE_DOIS]
        if not wanted:
            return []
        data = self._get(
            "/works",
            {
                "filter": "doi:" + "|".join(wanted),
                "select": "id,doi,is_retracted",
                # Room for works sharing a DOI (OpenAlex has duplicates): a retracted
                # one on a second page would leave its DOI looking clean.
                "per-page": MAX_PER_PAGE,
            },
        )
        results = data.get("results")
        if not isinstance(results, list):
            raise EngineError("OpenAlex answered without a list of results.")
        retracted = {
            normalize_doi(str(work.get("doi") or ""))
            for work in results
            if isinstance(work, dict) and work.get("is_retracted") is True
        }
        return [
            {"doi": doi, "notices": [{"type": "retraction"}] if doi in retracted else []}
            for doi in wanted
        ]

    def get_citing_papers(self, paper: PaperRef, max_results: int) -> list[PaperRecord]:
        """Works citing `paper`, most cited first. Uses identifiers["openalex"], else looks
        the DOI up first. Raises PaperNotFoundAtSource when neither leads to a work."""
        work_id = _short_id(paper.identifiers.get("openalex"))
        if not work_id:
            doi = normalize_doi(paper.doi)
            if not doi:
                raise PaperNotFoundAtSource(
                    "OpenAlex finds citing papers by OpenAlex id or DOI; this paper has neither."
                )
            work = self._get(
                f"/works/doi:{http.path_segment(doi, what='DOI')}",
                {"select": "id"},
                not_found=f"OpenAlex has no work with DOI {doi}.",
            )
            work_id = _short_id(work.get("id"))
            if not work_id:
                raise EngineError(f"OpenAlex's record for DOI {doi} has no id.")
        request = SearchRequest(query="", max_results=max_results)
        return self._works(
            request, {"sort": "cited_by_count:desc"}, extra_filters=[f"cites:{work_id}"]
        )

    def get_references(self, paper: PaperRef, max_results: int) -> list[PaperRecord]:
        """Works `paper` cites, in its `referenced_works` order: two requests, the work's
        reference ids (by identifiers["openalex"], else DOI), then those works in one
        `filter=openalex:W1|W2...` (OpenAlex takes at most MAX_OR_VALUES ids per filter).
        Raises PaperNotFoundAtSource when neither handle leads to a work."""
        work_id = _short_id(paper.identifiers.get("openalex"))
        doi = normalize_doi(paper.doi)
        if work_id:
            key = _work_key(work_id)
        elif doi:
            key = f"doi:{http.path_segment(doi, what='DOI')}"
        else:
            raise PaperNotFoundAtSource(
                "OpenAlex finds references by OpenAlex id or DOI; this paper has neither."
            )
        work = self._get(
            f"/works/{key}",
            {"select": "id,referenced_works"},
            not_found=f"OpenAlex has no work {work_id or doi}.",
        )
        cited = [_short_id(item) for item in work.get("referenced_works") or []]
        cited = list(dict.fromkeys(item for item in cited if _WORK_ID.match(item)))
        cited = cited[: max(1, min(max_results, MAX_OR_VALUES))]
        if not cited:
            return []
        data = self._get(
            "/works",
            {
                "filter": "openalex:" + "|".join(cited),
                "per-page": len(cited),
                "select": WORK_FIELDS,
            },
        )
        results = data.get("results")
        if not isinstance(results, list):
            raise EngineError("OpenAlex answered without a list of results.")
        order = {work_id: index for index, work_id in enumerate(cited)}
        records = _records(results)
        return sorted(records, key=lambda record: order.get(record.source_id, len(order)))

    def categories(self) -> list[Category]:
        """OpenAlex's top-level fields; filter with the id ('17') or the name."""
        return [Category(id=field_id, name=name, group=domain) for field_id, name, domain in FIELDS]

    # --- calls ---------------------------------------------------------------------------

    def _works(
        self,
        request: SearchRequest,
        params: dict[str, str | int],
        extra_filters: list[str] | None = None,
    ) -> list[PaperRecord]:
        filters = [*(extra_filters or []), *_filters(request)]
        page, per_page, skip = page_window(request.offset, request.max_results, MAX_PER_PAGE)
        query: dict[str, str | int] = {
            **params,
            "page": page,
            "per-page": per_page,
            "select": WORK_FIELDS,
        }
        if filters:
            query["filter"] = ",".join(filters)
        data = self._get("/works", query)
        results = data.get("results")
        if not isinstance(results, list):
            raise EngineError("OpenAlex answered without a list of results.")
        total = reported_total((data.get("meta") or {}).get("count"))
        return SearchResults(_records(results[skip:])[: request.max_results], total=total)

    def _get(self, path: str, params: dict[str, Any], *, not_found: str = "") -> dict[str, Any]:
        base = settings.OPENALEX_API_URL.rstrip("/")
        query = {**params, **http.contact_params()}
        # OpenAlex has begun to offer (and for heavy use, expect) free API keys.
        api_key = getattr(settings, "OPENALEX_API_KEY", "")
        if api_key:
            query["api_key"] = api_key
        data = http.get_json(
            base + path,
            params=query,
            engine_name=self.name,
            timeout=self.timeout,
            connect_timeout=self.connect_timeout,
            not_found=not_found,
        )
        if not isinstance(data, dict):
            raise EngineError("OpenAlex answered with JSON that is not an object.")
        return data


def page_window(offset: int, count: int, max_per_page: int) -> tuple[int, int, int]:
    """(page, per_page, skip) reading results offset..offset+count-1 in one page request.

    OpenAlex pages rather than offsets: pick the smallest page size that holds the whole
    window on one page. If none up to max_per_page does, read the page holding `offset`
    (fewer results, never a second request).
    """
    offset, count = max(0, offset), max(1, min(count, max_per_page))
    for per_page in range(count, max_per_page + 1):
        if offset // per_page == (offset + count - 1) // per_page:
            return offset // per_page + 1, per_page, offset % per_page
    return offset // max_per_page + 1, max_per_page, offset % max_per_page


def _filters(request: SearchRequest) -> list[str]:
    filters = []
    if request.date_from:
        filters.append(f"from_publication_date:{_full_date(request.date_from, end=False)}")
    if request.date_to:
        filters.append(f"to_publication_date:{_full_date(request.date_to, end=True)}")
    if request.categories:
        filters.append(
            "primary_topic.field.id:" + "|".join(_field_id(c) for c in request.categories)
        )
    return filters


def _full_date(value: str, *, end: bool) -> str:
    """OpenAlex date filters need a whole date: '2020' -> '2020-01-01' / '2020-12-31'."""
    value = value.strip()
    if re.fullmatch(r"\d{4}", value):
        return f"{value}-12-31" if end else f"{value}-01-01"
    if re.fullmatch(r"\d{4}-\d{2}", value):
        return f"{value}-28" if end else f"{value}-01"
    return value


def _field_id(category: str) -> str:
    wanted = category.strip().removeprefix("https://openalex.org/").removeprefix("fields/")
    for field_id, name, _domain in FIELDS:
        if wanted == field_id or wanted.casefold() == name.casefold():
            return field_id
    raise EngineError(
        f"OpenAlex has no category {category!r}; its categories are its 26 fields, "
        "e.g. '17' or 'Computer Science' (see the engine's categories)."
    )


def _work_key(paper_id: str) -> str:
    text = paper_id.strip()
    match = _WORK_ID.match(text)
    if match:
        return match.group(1).upper()
    pmid = _PMID.match(text)
    if pmid:
        return f"pmid:{pmid.group(1)}"
    doi = normalize_doi(text)
    if doi:
        return f"doi:{http.path_segment(doi, what='DOI')}"
    raise EngineError(f"{paper_id!r} is not an OpenAlex work id (W…), a DOI or a 'pmid:' id.")


def _short_id(value: object) -> str:
    """'https://openalex.org/W2741809807' -> 'W2741809807' (also for A-, S-, I-ids)."""
    text = str(value or "").strip().rstrip("/")
    return text.rsplit("/", 1)[-1] if text else ""


# --- parsing -------------------------------------------------------------------------------


def _records(works: list[Any]) -> list[PaperRecord]:
    return records_of(
        works, lambda w: _record(w) if isinstance(w, dict) else None, source="OpenAlex"
    )


def _record(work: dict[str, Any]) -> PaperRecord | None:
    """A PaperRecord from an OpenAlex Work object; None when it has no title."""
    title = work.get("title") or work.get("display_name")
    if not title:
        return None
    primary = work.get("primary_location") or {}
    source = primary.get("source") or {}
    best = work.get("best_oa_location") or {}
    biblio = work.get("biblio") or {}
    ids = work.get("ids") or {}
    topics = [t for t in work.get("topics") or [] if isinstance(t, dict)]
    openalex_id = _short_id(work.get("id"))
    identifiers = {
        "openalex": openalex_id,
        "pmid": _short_id(ids.get("pmid")),
        "pmcid": _pmcid(ids.get("pmcid")),
        "mag": str(ids.get("mag") or ""),
    }
    metadata: dict[str, Any] = {
        "openalex_type": work.get("type") or "",
        "language": work.get("language") or "",
        "open_access": (work.get("open_access") or {}).get("oa_status") or "",
        "topics": [t.get("display_name") for t in topics if t.get("display_name")],
        "openalex_keywords": [
            k.get("display_name")
            for k in work.get("keywords") or []
            if isinstance(k, dict) and k.get("display_name")
        ],
    }
    if not topics:  # older records carry only the (retired) concepts
        metadata["concepts"] = [
            c.get("display_name")
            for c in work.get("concepts") or []
            if isinstance(c, dict) and c.get("display_name")
        ]
    try:
        return PaperRecord.build(
            title=title,
            authors=[_author(a) for a in work.get("authorships") or [] if isinstance(a, dict)],
            year=work.get("publication_year"),
            publication_date=work.get("publication_date") or "",
            abstract=abstract_from_inverted_index(work.get("abstract_inverted_index")),
            venue=source.get("display_name") or "",
            publisher=source.get("host_organization_name") or "",
            volume=biblio.get("volume") or "",
            number=biblio.get("issue") or "",
            pages=_pages(biblio.get("first_page"), biblio.get("last_page")),
            entry_type=_entry_type(work.get("type"), source.get("type")),
            doi=work.get("doi") or ids.get("doi"),
            arxiv_id=_arxiv_id(work),
            source="openalex",
            source_id=openalex_id,
            source_url=work.get("id") or "",
            pdf_url=_pdf_url(best, primary),
            citation_count=work.get("cited_by_count") or 0,
            categories=_fields_of(topics),
            identifiers={k: v for k, v in identifiers.items() if v},
            metadata={k: v for k, v in metadata.items() if v},
        )
    except InvalidInput as exc:
        raise EngineError(
            f"OpenAlex's record {openalex_id or title!r} is unusable: {exc.message}"
        ) from None


def abstract_from_inverted_index(index: object) -> str:
    """The abstract text from OpenAlex's {word: [positions]} form."""
    if not isinstance(index, dict):
        return ""
    words: dict[int, str] = {}
    for word, positions in index.items():
        for position in positions if isinstance(positions, list) else []:
            if isinstance(position, int):
                words[position] = str(word)
    return " ".join(words[p] for p in sorted(words))


def _author(authorship: dict[str, Any]) -> dict[str, str]:
    person = authorship.get("author") or {}
    institutions = [
        str(i["display_name"])
        for i in authorship.get("institutions") or []
        if isinstance(i, dict) and i.get("display_name")
    ]
    raw = authorship.get("raw_affiliation_strings") or [authorship.get("raw_affiliation_string")]
    affiliation = "; ".join(institutions) or next((r for r in raw if r), "")
    return {
        "name": person.get("display_name") or authorship.get("raw_author_name") or "",
        "affiliation": affiliation,
        "profile_link": person.get("orcid") or person.get("id") or "",
    }


def _pdf_url(best: dict[str, Any], primary: dict[str, Any]) -> str:
    """The best open copy's PDF; else the publisher's, when it is open."""
    if best.get("pdf_url"):
        return str(best["pdf_url"])
    return str(primary.get("pdf_url") or "") if primary.get("is_oa") else ""


def _fields_of(topics: list[dict[str, Any]]) -> list[str]:
    names = [(t.get("field") or {}).get("display_name") for t in topics]
    return list(dict.fromkeys(n for n in names if n))


def _pages(first: object, last: object) -> str:
    first_page, last_page = str(first or "").strip(), str(last or "").strip()
    if first_page and last_page and last_page != first_page:
        return f"{first_page}-{last_page}"
    return first_page or last_page


def _entry_type(work_type: object, source_type: object) -> str:
    if work_type == "article" and source_type == "conference":
        return "inproceedings"
    return ENTRY_TYPES.get(str(work_type or ""), "misc")


def _arxiv_id(work: dict[str, Any]) -> str | None:
    for location in work.get("locations") or []:
        url = (location or {}).get("landing_page_url") or ""
        if "arxiv.org/abs/" in url:
            return normalize_arxiv_id(url)
    return None


def _pmcid(value: object) -> str:
    last = _short_id(value)
    if not last:
        return ""
    return last.upper() if last.upper().startswith("PMC") else f"PMC{last}"
