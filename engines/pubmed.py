"""PubMed (https://pubmed.ncbi.nlm.nih.gov), through NCBI's E-utilities.

API: https://www.ncbi.nlm.nih.gov/books/NBK25499/. A search is two kinds of request: ESearch
(`sort=relevance`, `usehistory=y`) gives a page of PMIDs in PubMed's relevance order and
leaves the result on NCBI's history server, and EFetch (`retmode=xml`) gives the records of
that page, read from the history server (`WebEnv`/`query_key`) or, when ESearch kept none,
by PMID, at most EFETCH_BATCH a request. The query goes to ESearch exactly as typed, so
PubMed's own syntax works: field tags (`[tiab]`, `[mh]`, `[au]`, `[dp]`), AND/OR/NOT,
parentheses, truncation (`random*`), quoted phrases.

NCBI counts requests, the runner one rate-limit slot per call, so each request after a
call's first takes a slot of its own (3 a second, 10 with NCBI_API_KEY). Every request
carries `tool` and `email` (NCBI_EMAIL, else CONTACT_EMAIL), and `api_key` when set; the
key is masked in every message by engines/http.py.

The XML is read with the standard library's ElementTree (expat: no DTD or other external
fetch, entity expansion bounded); a document declaring entities is refused. Biopython's
`Bio.Entrez` is not used: it makes its own HTTP requests, sleeping between them, outside
the runner's deadlines and shared rate limits, and may download DTDs.
"""

from __future__ import annotations

import json
import logging
import re
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from typing import Any

from django.conf import settings

from core.errors import InvalidInput
from engines import http, ratelimit
from engines.base import (
    AUTHOR,
    DETAILS,
    SEARCH,
    BadKey,
    BaseSearchEngine,
    EngineError,
    PaperNotFoundAtSource,
    RateLimited,
    SearchRequest,
    SearchResults,
    TransientEngineError,
    UnsupportedOperation,
)
from papers.identifiers import clean_text, normalize_doi, normalize_pmcid, normalize_pmid
from papers.schemas import KEYWORD_MAX_LENGTH, PaperRecord

logger = logging.getLogger(__name__)

TOOL = "research-mcp"
# PMIDs per EFetch request: NCBI asks for POST above ~200; GET stays well under URL limits.
EFETCH_BATCH = 200
# ESearch serves only the first 10,000 PMIDs of a PubMed search (retstart + retmax).
MAX_DEPTH = 10_000
# mindate and maxdate go together: an open end of a range is one of these.
OPEN_START, OPEN_END = "1000/01/01", "3000/12/31"
PUBMED_URL = "https://pubmed.ncbi.nlm.nih.gov/{}/"
RETRACTED = "Retracted Publication"

# CommentsCorrections on an article -> the update type papers/retractions.py knows.
UPDATED_BY = {
    "RetractionIn": "retraction",
    "RetractedandRepublishedIn": "retraction",
    "PartialRetractionIn": "partial_retraction",
    "ExpressionOfConcernIn": "expression_of_concern",
    "ErratumIn": "correction",
    "CorrectedandRepublishedIn": "correction",
}
# ... and on a notice, naming the article it updates.
UPDATE_TO = {
    "RetractionOf": "retraction",
    "RetractedandRepublishedFrom": "retraction",
    "PartialRetractionOf": "partial_retraction",
    "ExpressionOfConcernFor": "expression_of_concern",
    "ErratumFor": "correction",
    "CorrectedandRepublishedFrom": "correction",
}
MONTHS = {
    name: number
    for number, name in enumerate(
        ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"),
        start=1,
    )
}
# NCBI's own words for failures that a later request may not meet (a search backend down).
_TRANSIENT_WORDS = ("backend failed", "temporarily unavailable", "try again", "timed out")
_YEAR = re.compile(r"\b(\d{4})\b")
_MONTH_WORD = re.compile(r"\b([A-Za-z]{3})[a-z]*\b")
_SHORT_RANGE = re.compile(r"^([A-Za-z]*)(\d+)\s*-\s*([A-Za-z]*)(\d+)$")


class PubMedEngine(BaseSearchEngine):
    id = "pubmed"
    name = "PubMed"
    description = (
        "PubMed/MEDLINE (NCBI): biomedical and life-science citations in relevance order, with "
        "MeSH headings, publication types, labelled abstracts, PMIDs, PMCIDs and DOIs. "
        "Takes PubMed's own syntax ([tiab], [mh], [au], AND/OR/NOT, truncation*). No key "
        "needed; NCBI_API_KEY raises its limit."
    )
    operations = frozenset({SEARCH, AUTHOR, DETAILS})
    in_default_search = False  # a field's own source: asked when named (docs/ENGINES.md)
    # Queries in PubMed's syntax are sent as typed (field tags, booleans, truncation).
    query_dialect = "pubmed"
    # NCBI's published limits: 3 requests a second, 10 with an API key (current_rate_limit).
    rate_limit = "3/second"

    def current_rate_limit(self) -> str:
        return "10/second" if settings.NCBI_API_KEY else "3/second"

    def probe_url(self) -> str:
        return str(settings.NCBI_EUTILS_URL)

    def search(self, request: SearchRequest) -> list[PaperRecord]:
        """Citations matching `request.query` (PubMed's syntax, sent as typed), in PubMed's
        relevance order, within the publication-date range.

        Raises UnsupportedOperation for categories (publication types go in the query:
        `"Review"[pt]`), EngineError past PubMed's first 10,000 results or when ESearch
        refuses the query, and the errors of engines.http.
        """
        if request.categories:
            raise UnsupportedOperation(
                "PubMed has no category filter; put publication types in the query "
                '(e.g. "Randomized Controlled Trial"[pt]).'
            )
        return _Call(self).search(request.query, request)

    def search_by_author(self, author: str, request: SearchRequest) -> list[PaperRecord]:
        """Citations by `author`, searched as `"<author>"[au]` (a name already carrying a
        field tag goes as typed), in relevance order within the date range."""
        name = clean_text(author)
        if not name:
            raise EngineError("An author name is needed.")
        term = name if "[" in name else f'"{name.replace(chr(34), "")}"[au]'
        return _Call(self).search(term, request)

    def get_paper_details(self, paper_id: str) -> PaperRecord:
        """The citation with this PMID (also 'PMID: 123', a pubmed.ncbi.nlm.nih.gov URL),
        PMCID ('PMC123') or DOI. Raises PaperNotFoundAtSource when PubMed has none,
        EngineError for anything else."""
        call = _Call(self)
        pmcid = normalize_pmcid(paper_id)
        doi = None if pmcid else normalize_doi(paper_id)
        pmid = None if (pmcid or doi) else normalize_pmid(paper_id)
        if pmid:
            found = call.fetch([pmid])
        elif doi:
            # Quoted: a DOI may hold parentheses, which would otherwise group.
            found = call.fetch(call.esearch(f'"{doi}"[doi]', retmax=5).ids[:5])
        elif pmcid:
            # PubMed recognises a PMCID typed as it is.
            found = call.fetch(call.esearch(pmcid, retmax=5).ids[:5])
        else:
            raise EngineError(
                f"PubMed looks papers up by PMID, PMCID or DOI; {paper_id!r} is none of them."
            )
        for record in found:
            ids = record.identifiers
            if (
                (pmid and ids.get("pmid") == pmid)
                or (doi and record.doi == doi)
                or (pmcid and ids.get("pmcid") == pmcid)
            ):
                return record
        raise PaperNotFoundAtSource(f"PubMed has no citation for {paper_id!r}.")


class _Search:
    """What ESearch answered: the page of PMIDs, the total and the history-server handles."""

    def __init__(self, root: ET.Element) -> None:
        self.ids = [clean_text(e.text) for e in root.findall("IdList/Id") if clean_text(e.text)]
        self.count = _int(root.findtext("Count"))
        self.web_env = clean_text(root.findtext("WebEnv"))
        self.query_key = clean_text(root.findtext("QueryKey"))


class _Call:
    """The requests of one engine call. NCBI counts requests while the runner takes one
    rate-limit slot per call (before the first request), so every later request takes a
    slot of its own, within the call's deadline."""

    def __init__(self, engine: PubMedEngine) -> None:
        self.engine = engine
        self.sent = 0

    def search(self, term: str, request: SearchRequest) -> list[PaperRecord]:
        offset = max(0, request.offset)
        if offset >= MAX_DEPTH:
            raise EngineError(f"PubMed serves only the first {MAX_DEPTH:,} results of a search.")
        wanted = max(1, min(request.max_results, MAX_DEPTH - offset))
        found = self.esearch(
            term, retmax=wanted, retstart=offset, date_from=request.date_from,
            date_to=request.date_to,
        )  # fmt: skip
        ids = found.ids[:wanted]
        if not ids:
            return SearchResults([], total=found.count, sent=term)
        if found.web_env and found.query_key:
            records = []
            for start in range(0, len(ids), EFETCH_BATCH):
                size = min(EFETCH_BATCH, len(ids) - start)
                records += self._efetch(
                    {"WebEnv": found.web_env, "query_key": found.query_key,
                     "retstart": offset + start, "retmax": size}
                )  # fmt: skip
        else:
            records = self.fetch(ids)
        # The history server keeps ESearch's order; sorting by the page's PMIDs makes sure.
        order = {pmid: index for index, pmid in enumerate(ids)}
        records.sort(key=lambda r: order.get(r.identifiers.get("pmid", ""), len(order)))
        return SearchResults(records[: request.max_results], total=found.count, sent=term)

    def esearch(
        self,
        term: str,
        *,
        retmax: int,
        retstart: int = 0,
        date_from: str | None = None,
        date_to: str | None = None,
    ) -> _Search:
        params: dict[str, str | int] = {
            "term": term, "sort": "relevance", "usehistory": "y", "retstart": retstart,
            "retmax": retmax, "retmode": "xml",
        }  # fmt: skip
        if date_from or date_to:
            params["datetype"] = "pdat"
            params["mindate"] = _ncbi_date(date_from) or OPEN_START
            params["maxdate"] = _ncbi_date(date_to) or OPEN_END
        root = self._get("esearch.fcgi", params)
        if root.tag != "eSearchResult" or root.find("Count") is None:
            raise EngineError(f"PubMed answered the search with <{root.tag}>, not a result.")
        return _Search(root)

    def fetch(self, pmids: list[str]) -> list[PaperRecord]:
        """The records of these PMIDs, EFETCH_BATCH a request."""
        records: list[PaperRecord] = []
        for start in range(0, len(pmids), EFETCH_BATCH):
            records += self._efetch({"id": ",".join(pmids[start : start + EFETCH_BATCH])})
        return records

    def _efetch(self, params: dict[str, str | int]) -> list[PaperRecord]:
        root = self._get("efetch.fcgi", {**params, "retmode": "xml"})
        if root.tag not in ("PubmedArticleSet", "empty"):
            raise EngineError(f"PubMed answered the fetch with <{root.tag}>, not citations.")
        return records_from(root)

    def _get(self, utility: str, params: dict[str, str | int]) -> ET.Element:
        """One E-utility's XML answer (an empty one as <empty/>), NCBI's error answers
        raised as our errors."""
        if self.sent:
            deadline = http.current_deadline() or time.monotonic() + self.engine.timeout
            ratelimit.acquire(self.engine, deadline=deadline)
        self.sent += 1
        query: dict[str, str | int] = {"db": "pubmed", **params, "tool": TOOL}
        email = settings.NCBI_EMAIL or settings.CONTACT_EMAIL
        if email:
            query["email"] = email
        if settings.NCBI_API_KEY:
            query["api_key"] = settings.NCBI_API_KEY
        try:
            text = http.get_text(
                f"{settings.NCBI_EUTILS_URL.rstrip('/')}/{utility}",
                accept="application/xml, text/xml",
                params=query,
                engine_name=self.engine.name,
                timeout=self.engine.timeout,
                connect_timeout=self.engine.connect_timeout,
            )
        except EngineError as exc:
            # NCBI refuses a bad key with 400 {"error": "API key invalid"}.
            if exc.http_status == 400 and "api key" in exc.message.lower():
                raise BadKey(exc.message, http_status=400, reason="bad_key") from None
            raise
        return parse_answer(text)


# --- parsing ---------------------------------------------------------------------------------


def parse_answer(text: str) -> ET.Element:
    """The root of an E-utilities XML answer; `<empty/>` for an empty body. Raises our
    errors for NCBI's error answers, which may come with HTTP 200: a JSON `{"error": ...}`
    or an XML `<ERROR>` (ESearch's refusals, a search backend down)."""
    body = text.strip()
    if not body:
        return ET.Element("empty")
    if body.startswith("{"):
        try:
            data = json.loads(body)
        except ValueError:
            data = None
        message = data.get("error") if isinstance(data, dict) else None
        raise _ncbi_error(str(message or "an unreadable JSON answer"))
    if "<!ENTITY" in body:
        raise EngineError("PubMed's answer declares XML entities; refused.")
    try:
        # Entities were refused above; expat fetches nothing external.
        root = ET.fromstring(body)  # noqa: S314 - no defusedxml; see the module docstring
    except ET.ParseError as exc:
        raise EngineError(f"PubMed's answer is not well-formed XML ({exc}).") from None
    errors = [clean_text("".join(e.itertext())) for e in root.findall("ERROR")]
    if root.tag == "ERROR":
        errors.append(clean_text("".join(root.itertext())))
    errors = [error for error in errors if error]
    if errors:
        raise _ncbi_error("; ".join(errors))
    return root


def _ncbi_error(message: str) -> EngineError:
    lowered = message.lower()
    text = f"PubMed: {message}"
    if "rate limit" in lowered:
        return RateLimited(text, reason="quota")
    if "api key" in lowered:
        return BadKey(text, reason="bad_key")
    if any(word in lowered for word in _TRANSIENT_WORDS):
        return TransientEngineError(text, reason="server_error")
    return EngineError(text)


def records_from(root: ET.Element) -> list[PaperRecord]:
    """Records of an EFetch answer (PubmedArticle and PubmedBookArticle entries); one
    unusable entry is logged and skipped, not fatal."""
    records = []
    for entry in root:
        try:
            if entry.tag == "PubmedArticle":
                record = article_record(entry)
            elif entry.tag == "PubmedBookArticle":
                record = book_record(entry)
            else:
                continue  # DeleteCitation and the like
        except InvalidInput as exc:
            pmid = clean_text(entry.findtext(".//PMID"))
            logger.warning("Skipping PubMed citation %s: %s", pmid, exc.message)
            continue
        if record is not None:
            records.append(record)
    return records


def article_record(entry: ET.Element) -> PaperRecord | None:
    """A PaperRecord from a PubmedArticle; None when it has no title."""
    citation = entry.find("MedlineCitation")
    article = citation.find("Article") if citation is not None else None
    if citation is None or article is None:
        return None
    title = _title(article.find("ArticleTitle")) or _title(article.find("VernacularTitle"))
    if not title:
        return None
    pmid = normalize_pmid(citation.findtext("PMID")) or ""
    journal = article.find("Journal")
    issue = journal.find("JournalIssue") if journal is not None else None
    year, date = _pub_date(issue.find("PubDate") if issue is not None else None)
    if year is None:
        year, date = _pub_date(article.find("ArticleDate"))
    article_ids = {
        (e.get("IdType") or "").lower(): clean_text(e.text)
        for e in entry.findall("PubmedData/ArticleIdList/ArticleId")
    }
    doi = article_ids.get("doi") or next(
        (
            clean_text(e.text)
            for e in article.findall("ELocationID")
            if e.get("EIdType") == "doi" and e.get("ValidYN") != "N"
        ),
        "",
    )
    pmcid = article_ids.get("pmc") or next(
        (
            clean_text(e.text)
            for e in citation.findall("OtherID")
            if clean_text(e.text).upper().startswith("PMC")
        ),
        "",
    )
    publication_types = _texts(article.findall("PublicationTypeList/PublicationType"))
    mesh = citation.findall("MeshHeadingList/MeshHeading")
    metadata: dict[str, Any] = {
        "mesh_major": [
            clean_text(heading.findtext("DescriptorName"))
            for heading in mesh
            if any(e.get("MajorTopicYN") == "Y" for e in heading)
        ],
        "medline_status": citation.get("Status") or "",
        "publication_status": clean_text(entry.findtext("PubmedData/PublicationStatus")),
        "language": _texts(article.findall("Language")),
        "issn": _texts(journal.findall("ISSN")) if journal is not None else [],
        **_updates(citation, publication_types),
    }
    return PaperRecord.build(
        title=title,
        authors=_authors(article.findall("AuthorList/Author")),
        year=year,
        publication_date=date,
        abstract=_abstract(article.find("Abstract")),
        venue=clean_text(journal.findtext("Title")) if journal is not None else "",
        venue_short=clean_text(journal.findtext("ISOAbbreviation")) if journal is not None else "",
        volume=clean_text(issue.findtext("Volume")) if issue is not None else "",
        number=clean_text(issue.findtext("Issue")) if issue is not None else "",
        pages=_pages(article.find("Pagination")),
        entry_type="article",
        doi=doi or None,
        identifiers={k: v for k, v in (("pmid", pmid), ("pmcid", pmcid)) if v},
        keywords=_keywords(
            [heading.findtext("DescriptorName") for heading in mesh],
            [e.text for e in citation.findall("KeywordList/Keyword")],
        ),
        categories=publication_types,
        source="pubmed",
        source_id=pmid,
        source_url=PUBMED_URL.format(pmid) if pmid else "",
        metadata={k: v for k, v in metadata.items() if v},
    )


def book_record(entry: ET.Element) -> PaperRecord | None:
    """A PaperRecord from a PubmedBookArticle (NCBI Bookshelf: a book or one chapter)."""
    document = entry.find("BookDocument")
    if document is None:
        return None
    book = document.find("Book")
    book_title = _title(book.find("BookTitle")) if book is not None else ""
    chapter = _title(document.find("ArticleTitle"))
    title = chapter or book_title
    if not title:
        return None
    pmid = normalize_pmid(document.findtext("PMID")) or ""
    year, date = _pub_date(book.find("PubDate") if book is not None else None)
    # Author lists of the chapter, then of the book; editors are named apart, not as authors.
    lists = [
        *document.findall("AuthorList"),
        *(book.findall("AuthorList") if book is not None else []),
    ]
    written = [a for a in lists if a.get("Type") != "editors"]
    edited = [a for a in lists if a.get("Type") == "editors"]
    ids = {
        (e.get("IdType") or "").lower(): clean_text(e.text)
        for e in document.findall("ArticleIdList/ArticleId")
    }
    metadata = {
        "language": _texts(document.findall("Language")),
        "editors": [a["name"] for a in _authors(edited[0] if edited else [])],
        "bookaccession": ids.get("bookaccession", ""),
    }
    return PaperRecord.build(
        title=title,
        authors=_authors(written[0] if written else []),
        year=year,
        publication_date=date,
        abstract=_abstract(document.find("Abstract")),
        venue=book_title if chapter else "",
        publisher=clean_text(book.findtext("Publisher/PublisherName")) if book is not None else "",
        entry_type="incollection" if chapter else "book",
        doi=ids.get("doi") or None,
        identifiers={"pmid": pmid} if pmid else {},
        keywords=_keywords([], [e.text for e in document.findall("KeywordList/Keyword")]),
        categories=_texts(document.findall("PublicationType")),
        source="pubmed",
        source_id=pmid,
        source_url=PUBMED_URL.format(pmid) if pmid else "",
        metadata={k: v for k, v in metadata.items() if v},
    )


def _title(element: ET.Element | None) -> str:
    """The text of a title with its inline markup (<i>, <sup>) flattened, without the
    closing period MEDLINE adds."""
    if element is None:
        return ""
    text = clean_text("".join(element.itertext()))
    return text[:-1] if text.endswith(".") and not text.endswith("..") else text


def _abstract(element: ET.Element | None) -> str:
    """The abstract with its labelled sections kept: 'BACKGROUND: … METHODS: …'."""
    if element is None:
        return ""
    parts = []
    for section in element.findall("AbstractText"):
        text = clean_text("".join(section.itertext()))
        label = clean_text(section.get("Label"))
        if text:
            parts.append(f"{label}: {text}" if label else text)
    return " ".join(parts)


def _authors(elements: Iterable[ET.Element]) -> list[dict[str, str]]:
    authors = []
    for author in elements:
        if author.get("ValidYN") == "N":  # an erroneous name MEDLINE keeps, marked invalid
            continue
        affiliation = "; ".join(_texts(author.findall("AffiliationInfo/Affiliation")))
        group = author.find("CollectiveName")
        collective = clean_text("".join(group.itertext())) if group is not None else ""
        if collective:
            authors.append({"name": collective, "family": collective, "affiliation": affiliation})
            continue
        family = clean_text(author.findtext("LastName"))
        given = clean_text(author.findtext("ForeName")) or clean_text(author.findtext("Initials"))
        suffix = clean_text(author.findtext("Suffix"))
        if not family:
            continue
        orcid = next(
            (
                clean_text(e.text)
                for e in author.findall("Identifier")
                if (e.get("Source") or "").upper() == "ORCID" and clean_text(e.text)
            ),
            "",
        )
        if orcid and not orcid.startswith("http"):
            orcid = f"https://orcid.org/{orcid}"
        authors.append({
            "name": " ".join(p for p in (given, family, suffix) if p),
            "given": given,
            "family": family,
            "affiliation": affiliation,
            "profile_link": orcid,
        })  # fmt: skip
    return authors


def _pub_date(element: ET.Element | None) -> tuple[int | None, str]:
    """(year, 'YYYY[-MM[-DD]]') from a PubDate (Year/Month/Day, a Season, or a free-text
    MedlineDate such as '1998 Dec-1999 Jan' or '2018 Winter': its first year and month)."""
    if element is None:
        return None, ""
    year_text = clean_text(element.findtext("Year"))
    month_text = clean_text(element.findtext("Month"))
    day_text = clean_text(element.findtext("Day"))
    if not year_text:
        medline = clean_text(element.findtext("MedlineDate"))
        year_match = _YEAR.search(medline)
        if not year_match:
            return None, ""
        year_text = year_match.group(1)
        month_match = _MONTH_WORD.search(medline[year_match.end() :])
        month_text, day_text = (month_match.group(1) if month_match else ""), ""
    year = int(year_text) if year_text.isdigit() else None
    if year is None:
        return None, ""
    month = int(month_text) if month_text.isdigit() else MONTHS.get(month_text[:3].lower(), 0)
    if not 1 <= month <= 12:
        return year, f"{year:04d}"
    day = int(day_text) if day_text.isdigit() else 0
    if not 1 <= day <= 31:
        return year, f"{year:04d}-{month:02d}"
    return year, f"{year:04d}-{month:02d}-{day:02d}"


def _pages(element: ET.Element | None) -> str:
    """'244-255' from StartPage/EndPage, else MEDLINE's abbreviated range ('244-55')
    written out."""
    if element is None:
        return ""
    start, end = clean_text(element.findtext("StartPage")), clean_text(element.findtext("EndPage"))
    if start:
        return f"{start}-{end}" if end and end != start else start
    pages = clean_text(element.findtext("MedlinePgn"))
    match = _SHORT_RANGE.match(pages)
    if match:
        prefix, first, end_prefix, last = match.groups()
        if end_prefix in ("", prefix) and len(last) < len(first):
            return f"{prefix}{first}-{prefix}{first[: len(first) - len(last)]}{last}"
    return pages


def _keywords(mesh: list[str | None], own: list[str | None]) -> list[str]:
    """MeSH descriptors first, then the authors' keywords; any longer than a keyword may
    be are left out (MeSH headings never are)."""
    words = [clean_text(word) for word in [*mesh, *own]]
    return [word for word in words if word and len(word) <= KEYWORD_MAX_LENGTH]


def _updates(citation: ET.Element, publication_types: list[str]) -> dict[str, Any]:
    """Retractions, errata and expressions of concern as the Crossref engine carries them
    (metadata `updated_by` on the article, `update_to` on a notice; read by the citation
    check through papers/retractions.py's update types): from CommentsCorrections, and a
    'Retracted Publication' publication type without its notice linked."""
    updated_by: list[dict[str, str]] = []
    update_to: list[dict[str, str]] = []
    for link in citation.findall("CommentsCorrectionsList/CommentsCorrections"):
        kind = link.get("RefType") or ""
        found = UPDATED_BY.get(kind) or UPDATE_TO.get(kind)
        if not found:
            continue
        entry = {
            "type": found,
            "pmid": normalize_pmid(link.findtext("PMID")) or "",
            "citation": clean_text(link.findtext("RefSource")),
            "source": "pubmed",
        }
        (updated_by if kind in UPDATED_BY else update_to).append(
            {k: v for k, v in entry.items() if v}
        )
    if RETRACTED in publication_types and not any(u["type"] == "retraction" for u in updated_by):
        updated_by.append({"type": "retraction", "source": "pubmed"})
    return {"updated_by": updated_by, "update_to": update_to}


def _texts(elements: Iterable[ET.Element]) -> list[str]:
    return [text for text in (clean_text("".join(e.itertext())) for e in elements) if text]


def _ncbi_date(value: str | None) -> str:
    """'2020-05-01' / '2020-05' / '2020' in E-utilities' spelling ('2020/05/01')."""
    return clean_text(value).replace("-", "/") if value else ""


def _int(value: str | None) -> int:
    text = clean_text(value)
    return int(text) if text.isdigit() else 0
