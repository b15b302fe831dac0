"""Europe PMC (https://europepmc.org): PubMed/MEDLINE, PubMed Central, preprints (bioRxiv,
medRxiv, Research Square ...) and more, ~45M records, no key needed.

API: https://europepmc.org/RestfulWebService. `/search` (format=json, resultType=core)
answers in relevance order unless asked to sort, and that order is kept: reviewers want
the best matches first, not the newest. Queries are Europe PMC's own syntax (TITLE:,
ABSTRACT:, AUTH:, PUB_YEAR:[a TO b], AND/OR/NOT, "phrases", trunc*) and are sent as
typed; a date range is ANDed on as `FIRST_PDATE:[from TO to]`. Results page by cursor
(`cursorMark`), at most 1,000 a page; an offset past the first page is reached by walking
the cursor with id-only pages.

Europe PMC throttles at 10 requests a second and 500 a minute (its developer forum,
https://groups.google.com/a/ebi.ac.uk/g/epmc-webservices/c/FHexaNdSXJg, 2026-02): 8 a
second keeps under both (ENGINE_RATE_LIMITS=europepmc=... overrides). bioRxiv and medRxiv
searches (engines/biorxiv.py) go through the same index and take the same limit.

One module because it is one provider's client; engines/biorxiv.py and
engines/open_access.py use its search and record mapping.
"""

from __future__ import annotations

import calendar
import html
import logging
import re
import time
from typing import Any

from django.conf import settings

from core.errors import InvalidInput
from engines import http
from engines.base import (
    AUTHOR,
    CITING,
    DETAILS,
    SEARCH,
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
from engines.ratelimit import acquire
from papers.identifiers import (
    normalize_doi,
    normalize_pmcid,
    normalize_pmid,
    parse_person_name,
)
from papers.schemas import MAX_YEAR, MIN_YEAR, PaperRecord

logger = logging.getLogger(__name__)

MAX_PAGE_SIZE = 1000
# Pages of ids walked to reach an offset: 10 pages of 1,000 cover the app's 10,000 offset.
MAX_SKIP_PAGES = 10
# Where Europe PMC shows a record (its own article page).
ARTICLE_PAGE = "https://europepmc.org/article/{source}/{id}"
# A PMC article's PDF as Europe PMC renders it.
PMC_PDF = "https://europepmc.org/articles/{pmcid}?pdf=render"
# fullTextUrlList availability codes of copies anyone may read: "OA" (open access) and
# "F" (free to read). "S" (subscription) and "R" (registration) are left out.
FREE_AVAILABILITY = frozenset({"OA", "F"})
# Europe PMC's `source` of preprint records.
PREPRINT_SOURCE = "PPR"

_H4 = re.compile(r"<h4[^>]*>(.*?)</h4>", re.IGNORECASE | re.DOTALL)
_TAG = re.compile(r"<[^>]+>")
# Tags replaced by spaces leave "word ," and "( word": closed up again.
_SPACE_BEFORE = re.compile(r"\s+([.,;:!?)\]])")
_SPACE_AFTER = re.compile(r"([(\[])\s+")
_DOI_IN_TEXT = re.compile(r"\bdoi:\s*(10\.\d{4,9}/\S+?)\.?(?:\s|$)", re.IGNORECASE)
_EPMC_ID = re.compile(r"^(MED|PMC|PPR|AGR|CBA|CTX|ETH|HIR|NBK|PAT)[/:](\w+)$", re.IGNORECASE)
_PPR_ID = re.compile(r"^PPR\d+$", re.IGNORECASE)
_YEAR_ONLY = re.compile(r"^\d{4}$")
_YEAR_MONTH = re.compile(r"^\d{4}-\d{2}$")
_INITIALS = re.compile(r"^[A-Z]{1,4}$")


class EuropePmcEngine(BaseSearchEngine):
    id = "europepmc"
    name = "Europe PMC"
    description = (
        "Europe PMC: PubMed/MEDLINE, PubMed Central and preprints (life sciences and "
        "medicine), with MeSH terms, PMIDs/PMCIDs, open-access full text. No key needed."
    )
    in_default_search = False  # a field's own source: asked when named (docs/ENGINES.md)
    operations = frozenset({SEARCH, AUTHOR, DETAILS, CITING})
    # Europe PMC's own query syntax (TITLE:, AUTH:, PUB_YEAR:[a TO b] ...), sent as typed.
    query_dialect = "europepmc"
    # Europe PMC throttles at 10 a second and 500 a minute (module docstring): 8 a second
    # (480 a minute) keeps under both.
    rate_limit = "8/second"

    def probe_url(self) -> str:
        return str(settings.EUROPEPMC_API_URL)

    def search(self, request: SearchRequest) -> list[PaperRecord]:
        """Records matching `request.query` in Europe PMC's relevance order, within the
        request's publication dates. Raises UnsupportedOperation for categories, EngineError
        for an empty query, and the errors of engines.http."""
        return search_records(self, query_for(request, request.query), request)

    def search_by_author(self, author: str, request: SearchRequest) -> list[PaperRecord]:
        """Records by `author` (`AUTH:"Family I"`; 'Given Family' and 'Family, Given' are
        turned into Europe PMC's 'Family GI' form)."""
        return search_records(self, query_for(request, author_query(author)), request)

    def get_paper_details(self, paper_id: str) -> PaperRecord:
        """The record of a DOI, PMID, PMCID or Europe PMC id ('MED/31452104',
        'PPR123456'). Raises PaperNotFoundAtSource when Europe PMC has none, EngineError
        when `paper_id` is none of those."""
        query = lookup_query(paper_id)
        records = search_page(self, query, page_size=5)[1]
        exact = [r for r in records if _carries(r, paper_id)]
        if not exact:  # a record that does not carry the id asked for is not its paper
            raise PaperNotFoundAtSource(f"Europe PMC has no record of {paper_id!r}.")
        return exact[0]

    def get_citing_papers(self, paper: PaperRef, max_results: int) -> list[PaperRecord]:
        """Records citing `paper` (Europe PMC's `/{source}/{id}/citations`), by its PMID,
        else its PMCID, else its DOI looked up first. Raises PaperNotFoundAtSource when the
        paper has none of those or Europe PMC does not know it."""
        source, article = self._article_of(paper)
        size = max(1, min(max_results, MAX_PAGE_SIZE))
        data = get(
            self,
            f"/{http.path_segment(source, what='source')}/"
            f"{http.path_segment(article, what='id')}/citations",
            {"format": "json", "page": 1, "pageSize": size},
        )
        citations = (data.get("citationList") or {}).get("citation")
        if citations is None and data.get("hitCount") == 0:
            return []
        if not isinstance(citations, list):
            raise EngineError("Europe PMC answered without a list of citations.")
        return [r for r in map(_citation_record, citations) if r is not None][:max_results]

    def _article_of(self, paper: PaperRef) -> tuple[str, str]:
        pmid = normalize_pmid(paper.identifiers.get("pmid"))
        if pmid:
            return "MED", pmid
        pmcid = normalize_pmcid(paper.identifiers.get("pmcid"))
        if pmcid:
            return "PMC", pmcid
        doi = normalize_doi(paper.doi)
        if not doi:
            raise PaperNotFoundAtSource(
                "Europe PMC has citations by PMID, PMCID or DOI; this paper has none."
            )
        found = search_page(self, f'DOI:"{doi}"', page_size=1, result_type="lite")[1]
        if not found:
            raise PaperNotFoundAtSource(f"Europe PMC has no record with DOI {doi}.")
        source = str(found[0].metadata.get("europepmc_source") or "")
        article = str(found[0].metadata.get("europepmc_id") or "")
        if not (source and article):
            raise EngineError(f"Europe PMC's record of DOI {doi} has no id.")
        return source, article


# Europe PMC's rate limit is kept per engine id: this instance stands for it when another
# engine (bioRxiv, medRxiv) asks Europe PMC.
SHARED = EuropePmcEngine()


# --- queries ------------------------------------------------------------------------------


def query_for(request: SearchRequest, query: str) -> str:
    """`query` with the request's date range ANDed on as FIRST_PDATE:[from TO to]."""
    if request.categories:
        raise UnsupportedOperation("Europe PMC cannot filter by subject category here.")
    text = query.strip()
    if not text:
        raise EngineError("Europe PMC needs a query.")
    if not (request.date_from or request.date_to):
        return text
    start = _full_date(request.date_from or str(MIN_YEAR), end=False)
    end = _full_date(request.date_to or str(MAX_YEAR), end=True)
    return f"({text}) AND FIRST_PDATE:[{start} TO {end}]"


def author_query(author: str) -> str:
    """`AUTH:"Family GI"`: Europe PMC indexes authors as 'Vaswani A'. An author already
    written that way (or one word) is kept; 'Ashish Vaswani' / 'Vaswani, Ashish' become
    'Vaswani A'. Quotes in the name are dropped (they would end the phrase)."""
    name = " ".join(author.replace('"', " ").split())
    if not name:
        raise EngineError("Europe PMC needs an author name.")
    parts = name.split()
    if "," not in name and (len(parts) == 1 or _INITIALS.match(parts[-1])):
        return f'AUTH:"{name}"'
    person = parse_person_name(name)
    initials = "".join(word[0].upper() for word in re.split(r"[\s.\-]+", person.given) if word)
    return f'AUTH:"{person.family} {initials}"' if initials else f'AUTH:"{person.family}"'


def _carries(record: PaperRecord, paper_id: str) -> bool:
    """Whether `record` holds the DOI, PMCID or PMID `paper_id` names (any other id, which
    Europe PMC's own EXT_ID search matches exactly, is taken as found)."""
    text = paper_id.strip()
    if doi := normalize_doi(text):
        return record.doi == doi
    if pmcid := normalize_pmcid(text):
        return record.identifiers.get("pmcid") == pmcid
    if pmid := normalize_pmid(text):
        return record.identifiers.get("pmid") == pmid
    return True


def lookup_query(paper_id: str) -> str:
    """The search that finds one paper by DOI, PMID, PMCID or Europe PMC id."""
    text = paper_id.strip()
    doi = normalize_doi(text)
    if doi:
        return f'DOI:"{doi}"'
    pmcid = normalize_pmcid(text)
    if pmcid:
        return f"PMCID:{pmcid}"
    pmid = normalize_pmid(text)
    if pmid:
        return f"EXT_ID:{pmid} AND SRC:MED"
    if _PPR_ID.match(text):
        return f"EXT_ID:{text.upper()} AND SRC:PPR"
    match = _EPMC_ID.match(text)
    if match:
        return f"EXT_ID:{match.group(2)} AND SRC:{match.group(1).upper()}"
    raise EngineError(
        f"Europe PMC looks papers up by DOI, PMID, PMCID or Europe PMC id; {paper_id!r} is none."
    )


def _full_date(value: str, *, end: bool) -> str:
    """FIRST_PDATE takes whole dates: '2020' -> 2020-01-01 / 2020-12-31."""
    value = value.strip()
    if _YEAR_ONLY.fullmatch(value):
        return f"{value}-12-31" if end else f"{value}-01-01"
    if _YEAR_MONTH.fullmatch(value):
        year, month = (int(part) for part in value.split("-"))
        last = calendar.monthrange(year, month)[1] if 1 <= month <= 12 else 31
        return f"{value}-{last:02d}" if end else f"{value}-01"
    return value


# --- calls --------------------------------------------------------------------------------


def search_records(
    engine: BaseSearchEngine, query: str, request: SearchRequest, *, name: str = ""
) -> list[PaperRecord]:
    """Records `offset`..`offset + max_results - 1` of `query`, in Europe PMC's order.

    The window is read from one page when it fits in the first MAX_PAGE_SIZE results;
    further out, id-only pages walk the cursor to the page that holds it. `engine` gives
    the timeouts; `name` (default the engine's) is who failed in error messages.
    """
    offset, count = max(0, request.offset), max(1, min(request.max_results, MAX_PAGE_SIZE))
    cursor = "*"
    if offset + count > MAX_PAGE_SIZE:
        pages = offset // MAX_PAGE_SIZE
        if pages > MAX_SKIP_PAGES:
            raise EngineError(
                f"Europe PMC pages through at most {MAX_SKIP_PAGES * MAX_PAGE_SIZE:,} results here."
            )
        for _ in range(pages):
            data = _search(engine, query, MAX_PAGE_SIZE, cursor, "idlist", name)
            following = str(data.get("nextCursorMark") or "")
            if not following or following == cursor:
                return []  # fewer results than the offset
            cursor = following
        offset -= pages * MAX_PAGE_SIZE
    data = _search(engine, query, min(MAX_PAGE_SIZE, offset + count), cursor, "core", name)
    records = _records(_results(data, name or engine.name)[offset:])[:count]
    return SearchResults(records, total=reported_total(data.get("hitCount")), sent=query)


def search_page(
    engine: BaseSearchEngine, query: str, *, page_size: int, result_type: str = "core"
) -> tuple[int, list[PaperRecord]]:
    """(hitCount, records) of the first page of `query`."""
    data = _search(engine, query, page_size, "*", result_type)
    hits = data.get("hitCount")
    return (hits if isinstance(hits, int) else 0), _records(_results(data, engine.name))


def _search(
    engine: BaseSearchEngine,
    query: str,
    page_size: int,
    cursor: str,
    result_type: str,
    name: str = "",
) -> dict[str, Any]:
    return get(
        engine,
        "/search",
        {
            "query": query,
            "format": "json",
            "resultType": result_type,
            "pageSize": page_size,
            "cursorMark": cursor,
        },
        name=name,
    )


def _results(data: dict[str, Any], name: str) -> list[Any]:
    results = (data.get("resultList") or {}).get("result")
    if results is None and data.get("hitCount") == 0:
        return []
    if not isinstance(results, list):
        raise EngineError(f"{name} answered without a result list.")
    return results


def get(
    engine: BaseSearchEngine, path: str, params: dict[str, Any], *, name: str = ""
) -> dict[str, Any]:
    """GET `path` of the Europe PMC REST API as JSON (an object, else EngineError);
    `name` (default the engine's) is who failed in error messages."""
    name = name or engine.name
    query = dict(params)
    if settings.CONTACT_EMAIL:
        query["email"] = settings.CONTACT_EMAIL  # Europe PMC's way to say who is asking
    data = http.get_json(
        settings.EUROPEPMC_API_URL.rstrip("/") + path,
        params=query,
        engine_name=name,
        timeout=engine.timeout,
        connect_timeout=engine.connect_timeout,
    )
    if not isinstance(data, dict):
        raise EngineError(f"{name} answered with JSON that is not an object.")
    return data


def take_shared_turn() -> None:
    """A turn under Europe PMC's rate limit for a call another engine makes to it (the
    bioRxiv and medRxiv searches), so every caller of Europe PMC shares one limit. Within
    the call's deadline; RateLimited when no turn comes in time."""
    deadline = http.current_deadline()
    acquire(SHARED, deadline=deadline if deadline is not None else time.monotonic() + 15.0)


# --- parsing ------------------------------------------------------------------------------


def _records(results: list[Any]) -> list[PaperRecord]:
    return records_of(
        results, lambda i: record_of(i) if isinstance(i, dict) else None, source="Europe PMC"
    )


def record_of(item: dict[str, Any], *, source: str = "europepmc") -> PaperRecord | None:
    """A PaperRecord from one Europe PMC result (core or lite); None without a title."""
    title = strip_tags(item.get("title"))
    if not title:
        return None
    epmc_source = str(item.get("source") or "").upper()
    epmc_id = str(item.get("id") or "")
    journal = _dict(item.get("journalInfo"))
    about_journal = _dict(journal.get("journal"))
    book = _dict(item.get("bookOrReportDetails"))
    pub_types = publication_types(item)
    preprint = epmc_source == PREPRINT_SOURCE or any(t.lower() == "preprint" for t in pub_types)
    mesh = _mesh(item)
    keywords = [k for k in _list(item.get("keywordList"), "keyword") if isinstance(k, str)]
    identifiers = {
        "pmid": str(item.get("pmid") or ""),
        "pmcid": str(item.get("pmcid") or ""),
    }
    published = published_version(item) if preprint else {}
    if published.get("doi"):
        identifiers["published_doi"] = published["doi"]
    if published.get("pmid"):
        identifiers["published_pmid"] = published["pmid"]
    full_text = full_text_urls(item)
    metadata: dict[str, Any] = {
        "europepmc_source": epmc_source,
        "europepmc_id": epmc_id,
        "open_access": _yes(item.get("isOpenAccess")),
        "in_pmc": _yes(item.get("inPMC")),
        "in_epmc": _yes(item.get("inEPMC")),
        "has_pdf": _yes(item.get("hasPDF")),
        "full_text_urls": full_text,
        "license": item.get("license") or "",
        "language": item.get("language") or "",
        "mesh_major_topics": [name for name, major in mesh if major],
        "issn": about_journal.get("issn") or item.get("journalIssn") or "",
    }
    if preprint:
        metadata["preprint"] = True
        metadata["preprint_server"] = book.get("publisher") or ""
    if published:
        metadata["published_version"] = published
    venue = (
        about_journal.get("title")
        or item.get("journalTitle")
        or (book.get("publisher") if preprint else book.get("comprisingTitle"))
        or ""
    )
    categories = list(pub_types)
    if preprint and "preprint" not in (c.lower() for c in categories):
        categories.append("preprint")
    try:
        return PaperRecord.build(
            title=title,
            authors=authors_of(item),
            year=item.get("pubYear") or journal.get("yearOfPublication"),
            publication_date=item.get("firstPublicationDate") or "",
            abstract=abstract_text(item.get("abstractText")),
            venue=venue,
            venue_short=about_journal.get("isoabbreviation")
            or about_journal.get("medlineAbbreviation")
            or "",
            volume=journal.get("volume") or item.get("journalVolume") or "",
            number=journal.get("issue") or item.get("issue") or "",
            pages=item.get("pageInfo") or "",
            publisher=book.get("publisher") or "",
            entry_type="misc" if preprint else "article",
            doi=item.get("doi") or None,
            identifiers={k: v for k, v in identifiers.items() if v},
            source=source,
            source_id=f"{epmc_source}/{epmc_id}" if epmc_source and epmc_id else "",
            source_url=ARTICLE_PAGE.format(source=epmc_source, id=epmc_id) if epmc_id else "",
            pdf_url=free_pdf_url(item),
            citation_count=item.get("citedByCount") or 0,
            keywords=[*keywords, *(name for name, _ in mesh)],
            categories=categories,
            metadata={k: v for k, v in metadata.items() if v not in ("", [], {}, None)},
        )
    except InvalidInput as exc:
        raise EngineError(
            f"Europe PMC's record {epmc_source}/{epmc_id} is unusable: {exc.message}"
        ) from None


def strip_tags(value: object) -> str:
    """Text without markup ('<i>E. coli</i>' -> 'E. coli'), entities decoded."""
    if not isinstance(value, str):
        return ""
    text = " ".join(html.unescape(_TAG.sub(" ", value)).split())
    return _SPACE_AFTER.sub(r"\1", _SPACE_BEFORE.sub(r"\1", text))


def abstract_text(value: object) -> str:
    """Plain text of an abstractText: each `<h4>Label</h4>` section heading kept as
    'Label: ', other tags dropped, entities decoded."""
    if not isinstance(value, str):
        return ""
    labelled = _H4.sub(lambda m: f" {strip_tags(m.group(1)).rstrip(':')}: ", value)
    text = strip_tags(labelled)
    return text.removeprefix(": ").strip()


def publication_types(item: dict[str, Any]) -> list[str]:
    """pubTypeList.pubType of a core result, or the lite result's '; '-separated pubType."""
    types = _list(item.get("pubTypeList"), "pubType")
    if not types and isinstance(item.get("pubType"), str):
        types = item["pubType"].split(";")
    return list(dict.fromkeys(t.strip() for t in types if isinstance(t, str) and t.strip()))


def authors_of(item: dict[str, Any]) -> list[dict[str, str]]:
    """Authors of a core result (names split, affiliations, ORCID links), else those of
    the lite result's authorString ('Kwok C, Xu X.')."""
    people = _list(item.get("authorList"), "author")
    if people:
        return [_author(person) for person in people if isinstance(person, dict)]
    text = str(item.get("authorString") or "").strip().rstrip(".")
    return [_author_from_string(part) for part in text.split(", ") if part.strip()]


def _author(person: dict[str, Any]) -> dict[str, str]:
    family = str(person.get("lastName") or "").strip()
    given = str(person.get("firstName") or "").strip()
    name = f"{given} {family}".strip() if family else ""
    name = name or str(person.get("fullName") or person.get("collectiveName") or "")
    affiliations = [
        str(place.get("affiliation") or "")
        for place in _list(person.get("authorAffiliationDetailsList"), "authorAffiliation")
        if isinstance(place, dict)
    ]
    author_id = _dict(person.get("authorId"))
    orcid = str(author_id.get("value") or "") if author_id.get("type") == "ORCID" else ""
    return {
        "name": name,
        "family": family,
        "given": given,
        "affiliation": "; ".join(dict.fromkeys(a for a in affiliations if a)),
        "profile_link": f"https://orcid.org/{orcid}" if orcid else "",
    }


def _author_from_string(part: str) -> dict[str, str]:
    """'Mendez JS' -> family Mendez, given 'J. S.'; a group name stays whole."""
    words = part.split()
    if len(words) >= 2 and _INITIALS.match(words[-1]):
        given = " ".join(f"{letter}." for letter in words[-1])
        family = " ".join(words[:-1])
        return {"name": f"{given} {family}", "family": family, "given": given}
    return {"name": part}


def published_version(item: dict[str, Any]) -> dict[str, str]:
    """The journal version a preprint record links ("Preprint of" in its
    commentCorrectionList): {"source", "id", "pmid" (a MED id), "doi" (when the reference
    string names one), "reference", "note"}; empty when there is none."""
    for link in _list(item.get("commentCorrectionList"), "commentCorrection"):
        if not isinstance(link, dict) or str(link.get("type") or "").lower() != "preprint of":
            continue
        reference = str(link.get("reference") or "")
        found = _DOI_IN_TEXT.search(reference)
        source = str(link.get("source") or "").upper()
        version = {
            "source": source,
            "id": str(link.get("id") or ""),
            "pmid": (normalize_pmid(link.get("id")) or "") if source == "MED" else "",
            "doi": (normalize_doi(found.group(1)) or "") if found else "",
            "reference": reference,
            # Europe PMC says how it made the link ("Link created based on a title-first
            # author match"): kept, so a merge made on it can be judged.
            "note": str(link.get("note") or ""),
        }
        return {key: value for key, value in version.items() if value}
    return {}


def free_pdf_url(item: dict[str, Any]) -> str:
    """The first PDF in fullTextUrlList anyone may read (availability OA or F)."""
    for entry in full_text_urls(item):
        if entry["style"] == "pdf" and entry["availability_code"] in FREE_AVAILABILITY:
            return entry["url"]
    return ""


def full_text_urls(item: dict[str, Any]) -> list[dict[str, str]]:
    urls = []
    for entry in _list(item.get("fullTextUrlList"), "fullTextUrl"):
        if isinstance(entry, dict) and entry.get("url"):
            urls.append(
                {
                    "url": str(entry["url"]),
                    "availability": str(entry.get("availability") or ""),
                    "availability_code": str(entry.get("availabilityCode") or ""),
                    "style": str(entry.get("documentStyle") or ""),
                    "site": str(entry.get("site") or ""),
                }
            )
    return urls


def _mesh(item: dict[str, Any]) -> list[tuple[str, bool]]:
    """(descriptor, major topic) of each MeSH heading."""
    return [
        (str(heading["descriptorName"]), heading.get("majorTopic_YN") == "Y")
        for heading in _list(item.get("meshHeadingList"), "meshHeading")
        if isinstance(heading, dict) and heading.get("descriptorName")
    ]


def _citation_record(entry: object) -> PaperRecord | None:
    """A record of one `/citations` entry (id, source, title, authorString, journal
    abbreviation, pubYear ...); None when unusable."""
    if not isinstance(entry, dict) or not entry.get("title"):
        return None
    source = str(entry.get("source") or "").upper()
    article = str(entry.get("id") or "")
    item = {
        "id": article,
        "source": source,
        "pmid": article if source == "MED" else "",
        "pmcid": article if source == "PMC" else "",
        "title": entry.get("title"),
        "authorString": entry.get("authorString"),
        "journalTitle": entry.get("journalAbbreviation"),
        "journalVolume": entry.get("volume"),
        "issue": entry.get("issue"),
        "pageInfo": entry.get("pageInfo"),
        "pubYear": entry.get("pubYear"),
        "citedByCount": entry.get("citedByCount"),
    }
    try:
        return record_of(item)
    except EngineError as exc:
        logger.warning("Skipping a Europe PMC citation: %s", exc.message)
        return None


def _list(container: object, key: str) -> list[Any]:
    """container[key] when it is a list (Europe PMC wraps lists: {"author": [...]})."""
    values = container.get(key) if isinstance(container, dict) else None
    return values if isinstance(values, list) else []


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _yes(value: object) -> bool:
    return str(value or "").upper() == "Y"
