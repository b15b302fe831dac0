"""Open-access PDFs: where a paper's free copy is, and fetching it into the library.

The places are tried best first, each address once, and each source says what it found:

1. `record`: the paper's own pdf_url (an importer or an engine set it);
2. `arxiv`: https://arxiv.org/pdf/<id> for a paper with an arXiv id;
3. `acl`: https://aclanthology.org/<id>.pdf for an ACL Anthology id (the importer's `acl`
   identifier, or a 10.18653/v1/<id> DOI);
4. `pmc`: https://europepmc.org/articles/<PMCID>?pdf=render for a paper with a PMCID (the
   PubMed Central copy, as Europe PMC renders it);
5. `openalex`: the work's `best_oa_location.pdf_url`, then `locations[].pdf_url` (by DOI);
6. `unpaywall`: `best_oa_location.url_for_pdf`, then `oa_locations[].url_for_pdf` (by DOI,
   only when UNPAYWALL_EMAIL is set: Unpaywall asks every caller for an address);
7. `semantic_scholar`: the paper's `openAccessPdf.url` (by DOI, else arXiv id);
8. `europepmc`: the record's `fullTextUrlList` PDFs anyone may read (availability "Open
   access" or "Free"), then its PMC copy when it has a PMCID and a PDF (by DOI, else PMID).

The first four need no lookup. The others are asked only when nothing before them gave a
PDF, each under its engine's rate limit (engines/ratelimit.py, shared through Redis) and
within LOOKUP_SECONDS; OpenAlex, Semantic Scholar and Europe PMC only when ENGINES_ENABLED
lets them be used. A source that fails (down, slow, refusing) is noted and the next one asked.

Every download is `papers.pdf.services.pdf_download`: the SSRF guard (no loopback, private
or link-local address at any hop unless PDF_ALLOW_PRIVATE_URLS), PDF_MAX_BYTES, the
content-type and %PDF checks. A refused download (a landing page, too big, a blocked
address, a 404) moves on to the next address. Attaching indexes the PDF's passages after
commit (papers/pdf/services.py), so what is found is searchable by `search_passages`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import connections

from core.errors import EngineUnavailable, NotFound
from engines import europepmc, http
from engines.base import BaseSearchEngine, EngineError, PaperNotFoundAtSource
from engines.ratelimit import acquire
from engines.registry import registry
from papers.acl import anthology_id
from papers.identifiers import normalize_doi, normalize_pmcid, normalize_pmid
from papers.models import Paper, PaperIdentifier, PaperPdf
from papers.pdf import fetch
from papers.pdf.errors import DownloadFailed, NotAPdf
from papers.pdf.services import pdf_download

logger = logging.getLogger(__name__)

ATTACHED, FOUND, NONE, FAILED = "attached", "found", "none", "failed"
# Seconds one source lookup may take, its rate-limit wait included.
LOOKUP_SECONDS = 15.0
# Downloads tried for one paper before giving up: each may take PDF_DOWNLOAD_TIMEOUT.
MAX_DOWNLOADS = 5
ACL_DOI_PREFIX = "10.18653/"


class UnpaywallSource(BaseSearchEngine):
    """Unpaywall as a rate-limited source (not a search engine: never registered)."""

    id = "unpaywall"
    name = "Unpaywall"
    operations = frozenset()
    # Unpaywall allows 100,000 calls a day; ENGINE_RATE_LIMITS["unpaywall"] overrides.
    rate_limit = "10/second"
    timeout = 10.0


class _PdfHost(BaseSearchEngine):
    operations = frozenset()


class ArxivPdfHost(_PdfHost):
    id = "arxiv_pdf"
    name = "arXiv PDFs"
    rate_limit = "1/second"  # arXiv asks automated clients for about one a second


class AclPdfHost(_PdfHost):
    id = "acl_pdf"
    name = "ACL Anthology PDFs"
    rate_limit = "2/second"


class EuropePmcPdfHost(_PdfHost):
    id = "europepmc_pdf"
    name = "Europe PMC PDFs"
    rate_limit = "2/second"


class OtherPdfHost(_PdfHost):
    id = "oa_pdf"
    name = "Open-access PDFs"
    rate_limit = "10/second"


UNPAYWALL = UnpaywallSource()
EUROPEPMC_PDFS = EuropePmcPdfHost()
DOWNLOAD_LIMITS: dict[str, BaseSearchEngine] = {
    "arxiv": ArxivPdfHost(),
    "acl": AclPdfHost(),
    "pmc": EUROPEPMC_PDFS,
    "europepmc": EUROPEPMC_PDFS,
}
OTHER_DOWNLOADS = OtherPdfHost()


@dataclass(frozen=True)
class Location:
    url: str
    source: str


@dataclass
class Search:
    """What one paper's search met: the addresses found, and a note per source asked."""

    locations: list[Location] = field(default_factory=list)
    notes: dict[str, str] = field(default_factory=dict)

    def add(self, source: str, urls: Iterable[str]) -> list[Location]:
        known = {location.url for location in self.locations}
        new = [Location(url, source) for url in dict.fromkeys(urls) if url and url not in known]
        self.locations.extend(new)
        self.notes[source] = f"{len(new)} location(s)" if new else "no PDF"
        return new


# --- where: the sources ------------------------------------------------------------------


def _record_urls(paper: Paper) -> list[str]:
    return [paper.pdf_url.strip()] if paper.pdf_url.strip() else []


def _arxiv_urls(paper: Paper) -> list[str]:
    # fetch's constant, read at call time (the attach tests point it at a local server).
    return [fetch.ARXIV_PDF.format(paper.arxiv_id)] if paper.arxiv_id else []


def _identifier(paper: Paper, scheme: str) -> str | None:
    return (
        PaperIdentifier.objects.filter(paper=paper, scheme=scheme)
        .values_list("value", flat=True)
        .first()
    )


def _acl_urls(paper: Paper) -> list[str]:
    found = _identifier(paper, "acl")
    doi = normalize_doi(paper.doi) if paper.doi else None
    if not found and doi and doi.startswith(ACL_DOI_PREFIX):
        # 10.18653/v1/2020.acl-main.1, 10.18653/v1/p18-1001 (DOIs are kept lower case;
        # old-style Anthology ids are upper case).
        last = doi.rsplit("/", 1)[-1]
        found = anthology_id(last.upper() if last[:1].isalpha() else last)
    return [fetch.ACL_ANTHOLOGY_PDF.format(found)] if found else []


def _pmc_urls(paper: Paper) -> list[str]:
    # europepmc's constant, read at call time (the tests point it at a local server).
    pmcid = normalize_pmcid(_identifier(paper, "pmcid"))
    return [europepmc.PMC_PDF.format(pmcid=pmcid)] if pmcid else []


def _lookup(engine: BaseSearchEngine, url: str, params: dict[str, Any], **kwargs: Any) -> Any:
    """One GET of a source's JSON within LOOKUP_SECONDS, after the source's rate limit."""
    deadline = time.monotonic() + LOOKUP_SECONDS
    with http.call_deadline(deadline):
        acquire(engine, deadline=deadline)
        return http.get_json(
            url,
            params=params,
            engine_name=engine.name,
            timeout=engine.timeout,
            connect_timeout=engine.connect_timeout,
            not_found=f"{engine.name} has no record of this paper.",
            **kwargs,
        )


def _openalex_urls(paper: Paper) -> list[str]:
    engine = registry.get("openalex")
    doi = normalize_doi(paper.doi) if paper.doi else None
    if not doi:
        raise _Skip("no DOI")
    params: dict[str, Any] = {"select": "best_oa_location,locations", **http.contact_params()}
    if getattr(settings, "OPENALEX_API_KEY", ""):
        params["api_key"] = settings.OPENALEX_API_KEY
    base = settings.OPENALEX_API_URL.rstrip("/")
    work = _lookup(engine, f"{base}/works/doi:{http.path_segment(doi, what='DOI')}", params)
    if not isinstance(work, dict):
        raise EngineError("OpenAlex answered with JSON that is not an object.")
    best = work.get("best_oa_location") or {}
    urls = [str(best.get("pdf_url") or "")]
    urls += [
        str(place.get("pdf_url") or "")
        for place in work.get("locations") or []
        if isinstance(place, dict) and place.get("is_oa")
    ]
    return urls


def _unpaywall_urls(paper: Paper) -> list[str]:
    email = settings.UNPAYWALL_EMAIL
    if not email:
        raise _Skip("UNPAYWALL_EMAIL not set")
    doi = normalize_doi(paper.doi) if paper.doi else None
    if not doi:
        raise _Skip("no DOI")
    base = settings.UNPAYWALL_API_URL.rstrip("/")
    answer = _lookup(UNPAYWALL, f"{base}/v2/{http.path_segment(doi, what='DOI')}", {"email": email})
    if not isinstance(answer, dict):
        raise EngineError("Unpaywall answered with JSON that is not an object.")
    best = answer.get("best_oa_location") or {}
    urls = [str(best.get("url_for_pdf") or "")]
    urls += [
        str(place.get("url_for_pdf") or "")
        for place in answer.get("oa_locations") or []
        if isinstance(place, dict)
    ]
    return urls


def _semantic_scholar_urls(paper: Paper) -> list[str]:
    engine = registry.get("semantic_scholar")
    doi = normalize_doi(paper.doi) if paper.doi else None
    key = f"DOI:{doi}" if doi else f"ARXIV:{paper.arxiv_id}" if paper.arxiv_id else ""
    if not key:
        raise _Skip("no DOI or arXiv id")
    base = settings.SEMANTIC_SCHOLAR_API_URL.rstrip("/")
    api_key = settings.SEMANTIC_SCHOLAR_API_KEY
    answer = _lookup(
        engine,
        f"{base}/graph/v1/paper/{http.path_segment(key, what='paper id')}",
        {"fields": "openAccessPdf"},
        headers={"x-api-key": api_key} if api_key else {},
    )
    if not isinstance(answer, dict):
        raise EngineError("Semantic Scholar answered with JSON that is not an object.")
    return [str((answer.get("openAccessPdf") or {}).get("url") or "")]


def _europepmc_urls(paper: Paper) -> list[str]:
    engine = registry.get("europepmc")
    doi = normalize_doi(paper.doi) if paper.doi else None
    pmid = normalize_pmid(_identifier(paper, "pmid"))
    query = f'DOI:"{doi}"' if doi else f"EXT_ID:{pmid} AND SRC:MED" if pmid else ""
    if not query:
        raise _Skip("no DOI or PMID")
    base = settings.EUROPEPMC_API_URL.rstrip("/")
    params: dict[str, Any] = {"query": query, "format": "json", "resultType": "core", "pageSize": 1}
    if settings.CONTACT_EMAIL:
        params["email"] = settings.CONTACT_EMAIL
    answer = _lookup(engine, f"{base}/search", params)
    results = (answer.get("resultList") or {}).get("result") if isinstance(answer, dict) else None
    if not isinstance(results, list):
        raise EngineError("Europe PMC answered without a result list.")
    urls: list[str] = []
    for item in results[:1]:
        if not isinstance(item, dict):
            continue
        urls += [
            entry["url"]
            for entry in europepmc.full_text_urls(item)
            if entry["style"] == "pdf" and entry["availability_code"] in europepmc.FREE_AVAILABILITY
        ]
        pmcid = normalize_pmcid(item.get("pmcid"))
        if pmcid and str(item.get("hasPDF") or "").upper() == "Y":
            urls.append(europepmc.PMC_PDF.format(pmcid=pmcid))
    return urls


class _Skip(Exception):
    """A source that does not apply to this paper (no DOI, no e-mail set)."""


SOURCES: tuple[tuple[str, Callable[[Paper], list[str]]], ...] = (
    ("record", _record_urls),
    ("arxiv", _arxiv_urls),
    ("acl", _acl_urls),
    ("pmc", _pmc_urls),
    ("openalex", _openalex_urls),
    ("unpaywall", _unpaywall_urls),
    ("semantic_scholar", _semantic_scholar_urls),
    ("europepmc", _europepmc_urls),
)


def _ask(
    search: Search, source: str, urls_of: Callable[[Paper], list[str]], paper: Paper
) -> list[Location]:
    """The new locations `source` names for `paper`; a failing source is noted, never raised."""
    try:
        return search.add(source, (url.strip() for url in urls_of(paper)))
    except _Skip as skip:
        search.notes[source] = f"skipped: {skip}"
    except EngineUnavailable:
        search.notes[source] = "skipped: engine not enabled"
    except PaperNotFoundAtSource:
        search.notes[source] = "not found"
    except EngineError as error:
        logger.info(
            "paper %s: open-access lookup at %s failed: %s", paper.pk, source, error.message
        )
        search.notes[source] = f"failed: {error.message}"
    return []


def oa_locations(paper: Paper, search: Search | None = None) -> Iterator[Location]:
    """The paper's open-access PDF addresses, best first, each once, as they are found: a
    source is asked only when the caller wants more than the ones before it gave. `search`
    collects the addresses and each asked source's note."""
    search = Search() if search is None else search
    for source, urls_of in SOURCES:
        yield from _ask(search, source, urls_of, paper)


# --- fetching ---------------------------------------------------------------------------


def find_and_attach(paper: Paper | int, *, attach: bool = True) -> dict[str, Any]:
    """Find the paper's open-access PDF and (with `attach`) download and attach it.

    Returns {paper_id, status, source, url, pages, notes, tried}: status `attached` (the
    PDF is in the library; `source` `library` when it already was), `found` (attach
    False: the best address), `none` (no source names one), `failed` (every address
    tried was refused; `tried` lists {url, source, reason}). `notes` says per source
    what it gave or why it was not asked or failed. Never raises for a source or a
    download; NotFound only for a paper id that does not exist.
    """
    if not isinstance(paper, Paper):
        found = Paper.objects.filter(pk=paper).first()
        if found is None:
            raise NotFound(f"No paper {paper!r} in the library.", paper_id=str(paper))
        paper = found
    answer: dict[str, Any] = {"paper_id": paper.pk, "status": NONE, "source": None, "url": None}
    current = fetch.intact_pdf(paper)
    if current is not None:
        return {
            **answer, "status": ATTACHED, "source": "library", "url": current.source_url or None,
            "pages": current.page_count, "notes": {}, "tried": [],
        }  # fmt: skip
    tried: list[dict[str, str]] = []
    search = Search()
    for location in oa_locations(paper, search):
        if not attach:
            return {**answer, "status": FOUND, "source": location.source, "url": location.url,
                    "pages": None, "notes": search.notes, "tried": []}  # fmt: skip
        if len(tried) >= MAX_DOWNLOADS:
            break
        record = _download(paper, location, tried)
        if record is not None:
            return {**answer, "status": ATTACHED, "source": location.source,
                    "url": location.url, "pages": record.page_count, "notes": search.notes,
                    "tried": tried}  # fmt: skip
    status = FAILED if tried else NONE
    return {**answer, "status": status, "pages": None, "notes": search.notes, "tried": tried}


def _download(paper: Paper, location: Location, tried: list[dict[str, str]]) -> PaperPdf | None:
    host = DOWNLOAD_LIMITS.get(location.source, OTHER_DOWNLOADS)
    try:
        acquire(host, deadline=time.monotonic() + LOOKUP_SECONDS)
        return pdf_download(paper_id=paper.pk, url=location.url)
    except (DownloadFailed, NotAPdf) as error:
        reason = str(error.details.get("reason") or error.code)
        tried.append({"url": location.url, "source": location.source, "reason": reason})
        logger.info("paper %s: %s refused (%s)", paper.pk, location.url, reason)
        return None
    except EngineError as error:  # no turn under the host's rate limit in time
        reason = error.reason
        tried.append({"url": location.url, "source": location.source, "reason": reason})
        logger.info("paper %s: %s refused (%s)", paper.pk, location.url, reason)
        return None


@dataclass
class BatchReport:
    """What `papers_find_and_attach` did, counted by outcome and by the source that gave
    each attached PDF."""

    papers: int = 0
    by_status: dict[str, int] = field(default_factory=dict)
    by_source: dict[str, int] = field(default_factory=dict)
    errors: list[tuple[int, str]] = field(default_factory=list)

    def add(self, result: dict[str, Any]) -> None:
        self.papers += 1
        status = str(result["status"])
        self.by_status[status] = self.by_status.get(status, 0) + 1
        if status == ATTACHED and result.get("source"):
            source = str(result["source"])
            self.by_source[source] = self.by_source.get(source, 0) + 1

    def line(self) -> str:
        counts = ", ".join(
            f"{self.by_status.get(status, 0)} {status}" for status in (ATTACHED, NONE, FAILED)
        )
        sources = ", ".join(f"{name} {count}" for name, count in sorted(self.by_source.items()))
        errors = f", {len(self.errors)} errors" if self.errors else ""
        return f"{self.papers} papers: {counts}{errors}" + (f" ({sources})" if sources else "")


def papers_without_pdf(paper_ids: Iterable[int]) -> list[int]:
    """Of these papers, the ones the library holds no PDF for, in the order given."""
    ids = list(dict.fromkeys(paper_ids))
    having: set[int] = set()
    for start in range(0, len(ids), 500):  # IN lists stay small on SQLite and PostgreSQL
        chunk = ids[start : start + 500]
        having.update(
            PaperPdf.objects.filter(paper_id__in=chunk).values_list("paper_id", flat=True)
        )
    return [paper_id for paper_id in ids if paper_id not in having]


def papers_find_and_attach(
    paper_ids: Iterable[int],
    *,
    concurrency: int | None = None,
    on_result: Callable[[dict[str, Any]], None] | None = None,
) -> BatchReport:
    """find_and_attach for each of these papers that has no PDF yet, `concurrency` at
    once (default OPEN_ACCESS_CONCURRENCY; the sources' rate limits hold across them).

    `on_result` is called with each paper's answer, from the caller's thread. A paper
    whose search raises (a bug, the database gone) is counted in `errors`, never raised.
    """
    ids = papers_without_pdf(paper_ids)
    report = BatchReport()
    workers = max(1, min(concurrency or settings.OPEN_ACCESS_CONCURRENCY, len(ids) or 1))

    def one(paper_id: int) -> dict[str, Any]:
        try:
            return find_and_attach(paper_id)
        except Exception as error:  # counted, never fatal to the caller (an import)
            logger.exception("paper %s: open-access search failed", paper_id)
            return {
                "paper_id": paper_id,
                "status": FAILED,
                "error": f"{type(error).__name__}: {error}",
            }
        finally:
            if workers > 1:
                connections.close_all()  # this pool thread's own connections

    def record(result: dict[str, Any]) -> None:
        report.add(result)
        if result.get("error"):
            report.errors.append((int(result["paper_id"]), str(result["error"])))
        if on_result is not None:
            on_result(result)

    if workers == 1:
        for paper_id in ids:
            record(one(paper_id))
        return report
    with ThreadPoolExecutor(workers, thread_name_prefix="open-access") as pool:
        for result in pool.map(one, ids):
            record(result)
    return report
