"""Semantic Scholar (https://www.semanticscholar.org): ~200M papers with citation graph.

Graph API: https://api.semanticscholar.org/api-docs/graph. Works without a key, but the
keyless pool is shared by everyone and answers 429 often; SEMANTIC_SCHOLAR_API_KEY (sent
as `x-api-key`) gives a dedicated 1 request a second. Categories are S2's 23 fields of
study.
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
from papers.acl import anthology_pdf_url
from papers.identifiers import normalize_arxiv_id, normalize_doi
from papers.schemas import PaperRecord

PAPER_FIELDS = ",".join(
    (
        "paperId", "externalIds", "url", "title", "abstract", "venue", "publicationVenue",
        "year", "publicationDate", "authors", "citationCount", "influentialCitationCount",
        "fieldsOfStudy", "s2FieldsOfStudy", "openAccessPdf", "publicationTypes", "journal",
    )
)  # fmt: skip
DETAIL_FIELDS = PAPER_FIELDS + ",tldr"  # tldr only on single-paper lookups
MAX_SEARCH_LIMIT = 100
# Relevance search serves at most the first 1,000 results (offset + limit <= 1000).
MAX_SEARCH_DEPTH = 1000
MAX_LIST_LIMIT = 1000

FIELDS_OF_STUDY = (
    "Computer Science", "Medicine", "Chemistry", "Biology", "Materials Science", "Physics",
    "Geology", "Psychology", "Art", "History", "Geography", "Sociology", "Business",
    "Political Science", "Economics", "Philosophy", "Mathematics", "Engineering",
    "Environmental Science", "Agricultural and Food Sciences", "Education", "Law",
    "Linguistics",
)  # fmt: skip

# Prefixes the Graph API accepts in /paper/{id}, in its spelling.
ID_PREFIXES = {
    p.lower(): p for p in ("DOI", "ARXIV", "CorpusId", "MAG", "ACL", "PMID", "PMCID", "URL")
}
_PAPER_ID = re.compile(r"^[0-9a-f]{40}$")

# publicationTypes -> BibTeX entry type, first match wins.
ENTRY_TYPES = {
    "JournalArticle": "article",
    "Conference": "inproceedings",
    "BookSection": "incollection",
    "Book": "book",
    "Dataset": "misc",
}
# externalIds name -> PaperRecord.identifiers key.
IDENTIFIERS = {
    "CorpusId": "corpusid",
    "PubMed": "pmid",
    "PubMedCentral": "pmcid",
    "MAG": "mag",
    "DBLP": "dblp",
    "ACL": "acl",
}


class SemanticScholarEngine(BaseSearchEngine):
    id = "semantic_scholar"
    name = "Semantic Scholar"
    description = (
        "Semantic Scholar: ~200M papers across all fields with abstracts, TLDRs, open-access "
        "PDFs and a citation graph. Works without a key; SEMANTIC_SCHOLAR_API_KEY avoids "
        "the shared pool's frequent rate limiting."
    )
    operations = frozenset({SEARCH, AUTHOR, DETAILS, CITING, CATEGORIES, REFERENCES})
    # /paper/search takes no query syntax at all (its docs): keywords.
    query_dialect = "plain"
    # 1 request a second is the keyed limit; keyless callers share a pool and see 429s.
    rate_limit = "1/second"

    def probe_url(self) -> str:
        return str(settings.SEMANTIC_SCHOLAR_API_URL)

    def search(self, request: SearchRequest) -> list[PaperRecord]:
        """Papers matching `request.query` (S2 relevance), filtered by date and field of study.

        Raises EngineError past the first 1,000 results or for unknown categories, and the
        errors of engines.http.
        """
        if request.offset >= MAX_SEARCH_DEPTH:
            raise EngineError(
                f"Semantic Scholar's search serves only its first {MAX_SEARCH_DEPTH:,} results."
            )
        limit = min(request.max_results, MAX_SEARCH_LIMIT, MAX_SEARCH_DEPTH - request.offset)
        params: dict[str, str | int] = {
            "query": request.query,
            "fields": PAPER_FIELDS,
            "limit": max(1, limit),
            "offset": max(0, request.offset),
        }
        if request.date_from or request.date_to:
            params["publicationDateOrYear"] = f"{request.date_from or ''}:{request.date_to or ''}"
        if request.categories:
            params["fieldsOfStudy"] = ",".join(_field_of_study(c) for c in request.categories)
        data = self._get("/paper/search", params)
        # No hits: S2 answers {"total": 0, "offset": 0}, without "data".
        records = _records(data.get("data", []), request.max_results)
        return SearchResults(records, total=reported_total(data.get("total")))

    def search_by_author(self, author: str, request: SearchRequest) -> list[PaperRecord]:
        """Papers of the author S2 ranks first for `author`.

        The matched author is named in each record's metadata["author_match"]. S2 cannot
        filter an author's papers by date, so dates are applied to the page it returns
        (which can leave fewer than max_results).
        """
        found = self._get(
            "/author/search",
            {"query": author, "fields": "name,affiliations,paperCount,hIndex", "limit": 1},
        )
        matches = found.get("data") or []
        if not matches or not matches[0].get("authorId"):
            return []
        match = matches[0]
        author_id = str(match["authorId"])
        data = self._get(
            f"/author/{http.path_segment(author_id, what='author id')}/papers",
            {
                "fields": PAPER_FIELDS,
                "limit": max(1, min(request.max_results, MAX_LIST_LIMIT)),
                "offset": max(0, request.offset),
            },
        )
        author_match = {
            "s2_author_id": author_id,
            "name": match.get("name") or "",
            "affiliations": match.get("affiliations") or [],
            "paper_count": match.get("paperCount") or 0,
        }
        records = [
            r for r in _records(data.get("data", []), request.max_results) if _in_dates(r, request)
        ]
        for record in records:
            record.metadata["author_match"] = author_match
        return records

    def get_paper_details(self, paper_id: str) -> PaperRecord:
        """One paper by S2 paperId, 'CorpusId:…', 'DOI:…' / a bare DOI, 'ARXIV:…' / a bare
        arXiv id, or another Graph API prefix (PMID:, MAG:, ACL:, URL:).

        Raises PaperNotFoundAtSource when S2 does not know it, EngineError for an id of no
        known kind.
        """
        key = paper_key(paper_id)
        data = self._get(
            f"/paper/{http.path_segment(key)}",
            {"fields": DETAIL_FIELDS},
            not_found=f"Semantic Scholar has no paper {paper_id!r}.",
        )
        record = _record(data)
        if record is None:
            raise EngineError(f"Semantic Scholar's record for {paper_id!r} has no title.")
        return record

    def get_citing_papers(self, paper: PaperRef, max_results: int) -> list[PaperRecord]:
        """Papers citing `paper` (by identifiers["s2"], else DOI, else arXiv id); each
        record's metadata["s2_citation"] says whether S2 rates the citation influential.

        Raises PaperNotFoundAtSource when the paper has none of those or S2 does not know it.
        """
        key = _ref_key(paper)
        data = self._get(
            f"/paper/{http.path_segment(key)}/citations",
            {
                "fields": f"contexts,intents,isInfluential,{PAPER_FIELDS}",
                "limit": max(1, min(max_results, MAX_LIST_LIMIT)),
            },
            not_found=f"Semantic Scholar has no paper {key!r}.",
        )
        edges = [e for e in data.get("data") or [] if isinstance(e, dict)]
        records = []
        for edge in edges:
            citing = _records([edge.get("citingPaper")], 1)
            if citing:
                citing[0].metadata["s2_citation"] = {
                    "is_influential": bool(edge.get("isInfluential")),
                    "intents": edge.get("intents") or [],
                }
                records += citing
        return records[:max_results]

    def get_references(self, paper: PaperRef, max_results: int) -> list[PaperRecord]:
        """Papers `paper` cites (`/paper/{id}/references`, S2's order); references S2
        could not match to a paper of its own (no title) are left out. Raises
        PaperNotFoundAtSource as get_citing_papers does."""
        key = _ref_key(paper)
        data = self._get(
            f"/paper/{http.path_segment(key)}/references",
            {
                "fields": f"isInfluential,{PAPER_FIELDS}",
                "limit": max(1, min(max_results, MAX_LIST_LIMIT)),
            },
            not_found=f"Semantic Scholar has no paper {key!r}.",
        )
        edges = [e for e in data.get("data") or [] if isinstance(e, dict)]
        records = []
        for edge in edges:
            cited = _records([edge.get("citedPaper") or {}], 1)
            if cited:
                cited[0].metadata["s2_citation"] = {
                    "is_influential": bool(edge.get("isInfluential"))
                }
                records += cited
        return records[:max_results]

    def categories(self) -> list[Category]:
        """Semantic Scholar's fields of study (filter by name)."""
        return [Category(id=name, name=name) for name in FIELDS_OF_STUDY]

    def _get(self, path: str, params: dict[str, Any], *, not_found: str = "") -> dict[str, Any]:
        base = settings.SEMANTIC_SCHOLAR_API_URL.rstrip("/")
        key = settings.SEMANTIC_SCHOLAR_API_KEY
        data = http.get_json(
            f"{base}/graph/v1{path}",
            params=params,
            headers={"x-api-key": key} if key else {},
            engine_name=self.name,
            timeout=self.timeout,
            connect_timeout=self.connect_timeout,
            not_found=not_found,
        )
        if not isinstance(data, dict):
            raise EngineError("Semantic Scholar answered with JSON that is not an object.")
        return data


def paper_key(paper_id: str) -> str:
    """The Graph API's id for a paper: '10.1/x' -> 'DOI:10.1/x', '2101.00001' ->
    'ARXIV:2101.00001', '14636783' -> 'CorpusId:14636783'; prefixed ids and paperIds as
    they are (prefix spelled as S2 wants)."""
    text = paper_id.strip()
    prefix, sep, rest = text.partition(":")
    if sep and prefix.lower() in ID_PREFIXES and rest.strip():
        prefix, rest = ID_PREFIXES[prefix.lower()], rest.strip()
        # S2 knows arXiv papers without their version ('v5'), DOIs in any case.
        normal = {"DOI": normalize_doi, "ARXIV": normalize_arxiv_id}.get(prefix)
        return f"{prefix}:{(normal(rest) if normal else None) or rest}"
    if _PAPER_ID.match(text.lower()):
        return text.lower()
    doi = normalize_doi(text)
    if doi:
        return f"DOI:{doi}"
    arxiv_id = normalize_arxiv_id(text)
    if arxiv_id:
        return f"ARXIV:{arxiv_id}"
    if text.isdigit():
        return f"CorpusId:{text}"
    raise EngineError(
        f"{paper_id!r} is not a Semantic Scholar paper id, CorpusId, DOI or arXiv id."
    )


def _ref_key(paper: PaperRef) -> str:
    s2_id = (paper.identifiers.get("s2") or "").strip()
    if s2_id:
        return paper_key(s2_id)
    doi = normalize_doi(paper.doi)
    if doi:
        return f"DOI:{doi}"
    arxiv_id = normalize_arxiv_id(paper.arxiv_id)
    if arxiv_id:
        return f"ARXIV:{arxiv_id}"
    raise PaperNotFoundAtSource(
        "Semantic Scholar finds a paper by its S2 id, DOI or arXiv id; this paper has none."
    )


def _field_of_study(category: str) -> str:
    for name in FIELDS_OF_STUDY:
        if category.strip().casefold() == name.casefold():
            return name
    raise EngineError(
        f"Semantic Scholar has no field of study {category!r}; its categories are names "
        "like 'Computer Science' or 'Medicine' (see the engine's categories)."
    )


def _in_dates(record: PaperRecord, request: SearchRequest) -> bool:
    if not (request.date_from or request.date_to):
        return True
    when = record.publication_date or (str(record.year) if record.year else "")
    if not when:
        return False
    # Compare only as precisely as both sides are known: '2020' vs '2020-05-01' is a match.
    if request.date_from and when[: len(request.date_from)] < request.date_from[: len(when)]:
        return False
    return not (request.date_to and when[: len(request.date_to)] > request.date_to[: len(when)])


# --- parsing -------------------------------------------------------------------------------


def _records(items: object, limit: int) -> list[PaperRecord]:
    if not isinstance(items, list):
        raise EngineError("Semantic Scholar answered without a list of papers.")
    return records_of(
        items, lambda i: _record(i) if isinstance(i, dict) else None, source="Semantic Scholar"
    )[:limit]


def _record(paper: dict[str, Any]) -> PaperRecord | None:
    """A PaperRecord from a Graph API paper; None when it has no title."""
    title = paper.get("title")
    if not title:
        return None
    external = paper.get("externalIds") or {}
    journal = paper.get("journal") or {}
    venue = (paper.get("publicationVenue") or {}).get("name") or paper.get("venue") or ""
    paper_id = paper.get("paperId") or ""
    identifiers = {"s2": paper_id}
    identifiers |= {
        key: str(external[name]) for name, key in IDENTIFIERS.items() if external.get(name)
    }
    types = paper.get("publicationTypes") or []
    metadata: dict[str, Any] = {
        "tldr": (paper.get("tldr") or {}).get("text") or "",
        "publication_types": types,
        "influential_citation_count": paper.get("influentialCitationCount") or 0,
    }
    try:
        return PaperRecord.build(
            title=title,
            authors=[_author(a) for a in paper.get("authors") or [] if isinstance(a, dict)],
            year=paper.get("year"),
            publication_date=paper.get("publicationDate") or "",
            abstract=paper.get("abstract") or "",
            venue=venue or journal.get("name") or "",
            volume=journal.get("volume") or "",
            pages=re.sub(r"\s*-\s*", "-", journal.get("pages") or "").strip("-"),
            entry_type=next((ENTRY_TYPES[t] for t in types if t in ENTRY_TYPES), "misc"),
            doi=external.get("DOI"),
            arxiv_id=external.get("ArXiv"),
            source="semantic_scholar",
            source_id=paper_id,
            source_url=paper.get("url") or "",
            # An Anthology paper's PDF address follows from its id.
            pdf_url=(paper.get("openAccessPdf") or {}).get("url")
            or anthology_pdf_url(str(external.get("ACL") or "")),
            citation_count=paper.get("citationCount") or 0,
            categories=_categories(paper),
            identifiers=identifiers,
            metadata={k: v for k, v in metadata.items() if v},
        )
    except InvalidInput as exc:
        raise EngineError(
            f"Semantic Scholar's record {paper_id or title!r} is unusable: {exc.message}"
        ) from None


def _author(author: dict[str, Any]) -> dict[str, str]:
    author_id = author.get("authorId")
    return {
        "name": author.get("name") or "",
        "profile_link": f"https://www.semanticscholar.org/author/{author_id}" if author_id else "",
    }


def _categories(paper: dict[str, Any]) -> list[str]:
    names = list(paper.get("fieldsOfStudy") or [])
    names += [f.get("category") for f in paper.get("s2FieldsOfStudy") or [] if isinstance(f, dict)]
    return list(dict.fromkeys(n for n in names if isinstance(n, str) and n))
