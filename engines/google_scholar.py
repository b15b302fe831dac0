"""Google Scholar through SerpApi, with the
`google-search-results` package (module `serpapi`).

The package's client sends the GET to SERPAPI_URL/search and hands back the response; this
module reads SerpApi's answer itself, because SerpApi reports every failure as JSON with an
`error` key (and an HTTP status) that the package does not interpret: account problems make
the engine unavailable, 429/5xx are transient, "no results" is an empty list, and anything
else is a permanent error. Organic results become PaperRecords, with the authors, venue and
year recovered from Scholar's one-line `publication_info.summary` where the structured
fields are missing, and the Scholar handles (cites_id, result_id, ...) kept for citing
papers and BibTeX.

The API key travels only in the request: messages name exception types, never a URL, and
the package's exceptions (whose text can hold the URL) are not chained.
"""

from __future__ import annotations

import hashlib
import logging
import re
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import unquote, urlsplit

import httpx
import requests
from django.conf import settings
from django.core.cache import caches
from serpapi import GoogleScholarSearch

from core.errors import InvalidInput
from engines import http
from engines.base import (
    AUTHOR,
    BIBTEX,
    CITING,
    SEARCH,
    BadKey,
    BaseSearchEngine,
    EngineError,
    EngineNotAvailable,
    PaperNotFoundAtSource,
    PaperRef,
    RateLimited,
    SearchRequest,
    SearchResults,
    TransientEngineError,
    reported_total,
)
from engines.failures import transport_error
from papers.schemas import PaperRecord

logger = logging.getLogger(__name__)

# Google Scholar shows at most 20 results per page; SerpApi's `num` is capped the same.
MAX_PAGE_SIZE = 20
MISSING_KEY = "SERP_API_KEY is not set"
# SerpApi's answer (HTTP 200) when Scholar found nothing: a result, not a failure.
NO_RESULTS = "hasn't returned any results"
# Error texts that mean the key or the account cannot be used until someone acts.
ACCOUNT_PROBLEMS = ("api key", "account has been", "permission")
QUOTA_PROBLEMS = ("run out of searches", "credit")
# SerpApi's Account API answers for free (no search spent); its verdict is kept this long.
ACCOUNT_CHECK_SECONDS = 600
ACCOUNT_CHECK_TIMEOUT = (2.0, 3.0)  # connect, read

_ELLIPSIS = "…"
_YEAR_AT_END = re.compile(r"(?:^|,\s*)(\d{4})$")
# A DOI or arXiv id in a result's link (publisher /doi/ paths, ?doi= landing pages): exact
# handles that let the library recognise the paper when another source brings it too.
_DOI_IN_LINK = re.compile(
    r"(?:/doi/(?:abs/|full/|pdf/|epdf/|book/)?|[?&]doi=)(10\.\d{4,9}/[^?&#\s]+)"
)
_ARXIV_IN_LINK = re.compile(r"arxiv\.org/(?:abs|pdf)/([^?#\s]+?)(?:\.pdf)?$")


class GoogleScholarEngine(BaseSearchEngine):
    id = "google_scholar"
    name = "Google Scholar"
    description = (
        "Comprehensive academic search engine with citation counts, citing papers and "
        "BibTeX (through SerpApi; needs SERP_API_KEY)."
    )
    operations = frozenset({SEARCH, AUTHOR, CITING, BIBTEX})
    # intitle:, author:, OR, -exclusion, quoted phrases; no parentheses or truncation.
    query_dialect = "google_scholar"

    def unavailable_reason(self) -> str:
        return "" if settings.SERP_API_KEY else MISSING_KEY

    def probe_url(self) -> str:
        return str(settings.SERPAPI_URL)

    def key_check(self) -> str:
        """Availability checked by validating the key (docs/ENGINES.md). SerpApi's Account API
        (`/account.json`, free: it spends no search) says whether the key is valid, the
        account active and searches left; the verdict is kept ACCOUNT_CHECK_SECONDS in the
        engines cache (shared through Redis when configured). Empty when the key is
        accepted or the account cannot be asked now (no network is the probe's to say)."""
        key = settings.SERP_API_KEY
        if not key:
            return ""
        base = settings.SERPAPI_URL.rstrip("/")
        digest = hashlib.sha256(f"{base}\n{key}".encode()).hexdigest()[:24]
        cache_key = f"serpapi-account:{digest}"
        cache = caches["engines"]
        known = cache.get(cache_key)
        if known is not None:
            return str(known)
        verdict = _account_verdict(base, key)
        if verdict is None:
            return ""
        cache.set(cache_key, verdict, ACCOUNT_CHECK_SECONDS)
        return verdict

    def search(self, request: SearchRequest) -> list[PaperRecord]:
        """Scholar's results for the query (Scholar syntax: `author:`, `source:`, quotes),
        at most 20 per call; dates filter by year only (`as_ylo`/`as_yhi`), and Scholar has
        no subject categories, so `request.categories` is ignored.

        Raises EngineNotAvailable (no key, account out of searches), TransientEngineError
        (429, 5xx, timeouts) and EngineError (a request SerpApi rejects).
        """
        if not request.query.strip():
            raise EngineError("A Google Scholar search needs a query.")
        return self._organic_results(
            {"q": request.query.strip(), **_years(request)},
            max_results=request.max_results,
            offset=request.offset,
        )

    def search_by_author(self, author: str, request: SearchRequest) -> list[PaperRecord]:
        """Papers Scholar attributes to `author` (an `author:"..."` query)."""
        name = " ".join(author.replace('"', " ").split())
        if not name:
            raise EngineError("An author search needs an author name.")
        return self._organic_results(
            {"q": f'author:"{name}"', **_years(request)},
            max_results=request.max_results,
            offset=request.offset,
        )

    def get_citing_papers(self, paper: PaperRef, max_results: int) -> list[PaperRecord]:
        """Scholar's "Cited by" list of a paper found through Scholar (its cites_id)."""
        cites_id = paper.scholar.get("cites_id")
        if not cites_id:
            raise PaperNotFoundAtSource(
                f"{paper.title or 'This paper'!r} has no Google Scholar cites_id: it was not "
                "found through Google Scholar, or Scholar lists no citations for it. "
                "Search Google Scholar for it first."
            )
        return self._organic_results({"cites": cites_id}, max_results=max_results, offset=0)

    def get_bibtex(self, paper: PaperRef) -> str:
        """Scholar's BibTeX for a paper found through Scholar: the cite dialog's BibTeX link
        (SerpApi's google_scholar_cite, q=result_id), then that link's text."""
        result_id = paper.scholar.get("result_id")
        if not result_id:
            raise PaperNotFoundAtSource(
                f"{paper.title or 'This paper'!r} has no Google Scholar result_id: search "
                "Google Scholar for it first."
            )
        answer = self._call({"engine": "google_scholar_cite", "q": result_id})
        links = [link for link in answer.get("links") or [] if link.get("name") == "BibTeX"]
        if not links or not links[0].get("link"):
            raise EngineError(f"Google Scholar offers no BibTeX for result {result_id}.")
        return self._download_bibtex(links[0]["link"])

    # --- calls -----------------------------------------------------------------------

    def _organic_results(
        self, params: dict[str, Any], *, max_results: int, offset: int
    ) -> list[PaperRecord]:
        num = min(max_results, MAX_PAGE_SIZE)
        if num <= 0:
            return []
        page = {"num": num, "start": offset} if offset > 0 else {"num": num}
        answer = self._call({"engine": "google_scholar", **params, **page})
        results = answer.get("organic_results") or []
        records = [record for record in map(_record, results[:num]) if record is not None]
        # Scholar's own estimate ("About 7,340,000 results"), shown in the search log.
        total = reported_total((answer.get("search_information") or {}).get("total_results"))
        return SearchResults(records, total=total)

    def _call(self, params: dict[str, Any]) -> dict[str, Any]:
        """One SerpApi search; the answer's JSON, {} when Scholar found nothing."""
        key = settings.SERP_API_KEY
        if not key:
            raise EngineNotAvailable(MISSING_KEY)
        client = GoogleScholarSearch({**params, "hl": "en", "output": "json", "api_key": key})
        client.BACKEND = settings.SERPAPI_URL.rstrip("/")
        connect, read = http.request_timeouts(self.connect_timeout, self.timeout)
        client.timeout = (connect, read)  # requests takes (connect, read)
        try:
            response = client.get_response()
        except (
            requests.Timeout,
            requests.ConnectionError,
            requests.exceptions.ChunkedEncodingError,
        ) as exc:
            timeout = connect if isinstance(exc, requests.ConnectTimeout) else read
            raise transport_error("SerpApi", exc, timeout=timeout) from None
        except requests.RequestException as exc:
            raise EngineError(f"The request to SerpApi failed ({type(exc).__name__}).") from None
        return _answer(response, key)

    def _download_bibtex(self, link: str) -> str:
        if urlsplit(link).scheme not in ("http", "https"):
            raise EngineError("Google Scholar's BibTeX link is not a web address.")
        try:
            connect, read = http.request_timeouts(self.connect_timeout, self.timeout)
            response = httpx.get(
                link, timeout=httpx.Timeout(read, connect=connect), follow_redirects=True
            )
        except httpx.TransportError as exc:
            raise transport_error("Google Scholar", exc, timeout=read) from None
        except httpx.HTTPError as exc:
            message = f"Could not download the BibTeX from Google Scholar ({type(exc).__name__})."
            raise TransientEngineError(message) from None
        status = response.status_code
        if status == 429 or status >= 500:
            error = RateLimited if status == 429 else TransientEngineError
            raise error(
                f"Google Scholar answered HTTP {status} to the BibTeX download.",
                http_status=status,
                retry_after=_retry_after(response.headers.get("Retry-After")),
            )
        if status != 200:
            # Scholar's signed BibTeX links expire and are refused to clients it suspects.
            raise EngineError(
                f"Google Scholar refused the BibTeX download (HTTP {status}).", http_status=status
            )
        text = response.text.strip()
        if not text.startswith("@"):
            raise EngineError("Google Scholar's BibTeX link answered with something else.")
        return text


# --- SerpApi's answers -----------------------------------------------------------------


def _account_verdict(base: str, key: str) -> str | None:
    """Why SerpApi's Account API refuses the key or the account ('' when it accepts
    them), or None when it could not be asked or gave no verdict."""
    try:
        response = requests.get(
            f"{base}/account.json", params={"api_key": key}, timeout=ACCOUNT_CHECK_TIMEOUT
        )
    except requests.RequestException:
        return None
    data, message = _json_and_error(response, key)
    status = response.status_code
    if status in (401, 403) or any(problem in message.lower() for problem in ACCOUNT_PROBLEMS):
        return f"SerpApi key rejected: {message or f'HTTP {status}'}"
    if any(problem in message.lower() for problem in QUOTA_PROBLEMS):
        return f"SerpApi quota exhausted: {message}"
    if status != 200 or not isinstance(data, dict) or message:
        return None
    account_status = str(data.get("account_status") or "")
    if account_status and account_status.lower() != "active":
        return f"SerpApi account is {account_status.lower()}"
    left = data.get("total_searches_left")
    if isinstance(left, int) and left <= 0:
        renewal = data.get("plan_renewal_date")
        return "SerpApi quota exhausted: no searches left" + (
            f" until the plan renews on {renewal}" if renewal else ""
        )
    return ""


def _json_and_error(response: requests.Response, key: str) -> tuple[Any, str]:
    """SerpApi's JSON (None when the body is not JSON) and its `error` text, with the key
    masked should SerpApi echo it."""
    try:
        data = response.json()
    except ValueError:
        data = None
    error = data.get("error") if isinstance(data, dict) else None
    return data, str(error).replace(key, "***") if error else ""


def _answer(response: requests.Response, key: str) -> dict[str, Any]:
    """The answer's JSON, or the failure it reports as one of the engine errors."""
    status = response.status_code
    data, message = _json_and_error(response, key)
    if status == 200 and isinstance(data, dict):
        if not message:
            return data
        if NO_RESULTS in message:
            return {}
    if any(problem in message.lower() for problem in QUOTA_PROBLEMS):
        # The plan's searches are spent: nothing to retry until someone tops it up.
        exhausted = EngineNotAvailable(
            f"SerpApi quota exhausted: {message}", http_status=status, reason="quota_exhausted"
        )
        exhausted.outcome = "rate_limited"
        raise exhausted
    if status in (401, 403) or any(problem in message.lower() for problem in ACCOUNT_PROBLEMS):
        raise BadKey(
            f"SerpApi refused the account: {message or f'HTTP {status}'}",
            http_status=status,
            reason=f"http_{status}" if status in (401, 403) else "bad_key",
        )
    if status == 429 or status >= 500:
        # 429 here is the hourly throughput limit (running out of searches is handled above).
        error = RateLimited if status == 429 else TransientEngineError
        raise error(
            f"SerpApi answered HTTP {status}{': ' + message if message else ''}",
            http_status=status,
            retry_after=_retry_after(response.headers.get("Retry-After")),
        )
    if not isinstance(data, dict):
        raise EngineError(f"SerpApi answered HTTP {status} with something other than JSON.")
    raise EngineError(
        f"SerpApi rejected the request (HTTP {status}): {message or 'no reason given'}",
        http_status=status,
    )


def _retry_after(value: str | None) -> float | None:
    """Retry-After as seconds: either delta-seconds or an HTTP date."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        moment = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, (moment - datetime.now(UTC)).total_seconds())


def _years(request: SearchRequest) -> dict[str, str]:
    """Scholar filters by publication year only: the years of the date range."""
    years = {}
    for param, value in (("as_ylo", request.date_from), ("as_yhi", request.date_to)):
        if value:
            if not re.match(r"\d{4}(?:-|$)", value.strip()):
                raise EngineError(f"Date {value!r} does not start with a year (YYYY).")
            years[param] = value.strip()[:4]
    return years


# --- organic results -> records -----------------------------------------------------------


def _record(result: dict[str, Any]) -> PaperRecord | None:
    """One organic result as a PaperRecord; None (logged) for one that cannot be one."""
    info = result.get("publication_info") or {}
    summary = info.get("summary") or ""
    names, venue, year, host = _parse_summary(summary)
    profiles = {a.get("name"): a for a in info.get("authors") or [] if a.get("name")}
    if not names:
        names = list(profiles)
    inline = result.get("inline_links") or {}
    cited_by = inline.get("cited_by") or {}
    versions = inline.get("versions") or {}
    resources = [r for r in result.get("resources") or [] if r.get("link")]
    link = result.get("link") or ""
    pdf_links = [r["link"] for r in resources if str(r.get("file_format")).upper() == "PDF"]
    if not pdf_links and str(result.get("type")).lower() == "pdf" and link:
        pdf_links = [link]
    metadata: dict[str, Any] = {"scholar_position": result.get("position"), "host": host}
    if result.get("type"):
        metadata["scholar_type"] = result["type"]
    if _ELLIPSIS in summary.split(" - ")[0]:
        metadata["authors_truncated"] = True
    if venue and _ELLIPSIS in venue:
        # Scholar cut the venue name short; keep it here rather than as a bogus venue.
        metadata["venue_truncated"] = venue
        venue = ""
    author_ids = {name: a["author_id"] for name, a in profiles.items() if a.get("author_id")}
    if author_ids:
        metadata["scholar_author_ids"] = author_ids
    if versions.get("cluster_id"):
        metadata["scholar_cluster_id"] = versions["cluster_id"]
    doi = _DOI_IN_LINK.search(link)
    arxiv_id = _ARXIV_IN_LINK.search(link)
    try:
        return PaperRecord.build(
            title=result.get("title") or "",
            authors=[
                {"name": name, "profile_link": (profiles.get(name) or {}).get("link") or ""}
                for name in names
            ],
            year=year,
            snippet=result.get("snippet") or "",
            venue=venue,
            publication_info=summary,
            entry_type="book" if str(result.get("type")).lower() == "book" else "article",
            doi=unquote(doi[1]) if doi else None,
            arxiv_id=arxiv_id[1] if arxiv_id else None,
            source=GoogleScholarEngine.id,
            source_id=result.get("result_id") or "",
            source_url=link,
            pdf_url=pdf_links[0] if pdf_links else "",
            citation_count=cited_by.get("total") or 0,
            versions_count=versions.get("total") or 0,
            cites_id=cited_by.get("cites_id") or "",
            result_id=result.get("result_id") or "",
            cached_page_link=inline.get("cached_page_link") or "",
            related_pages_link=inline.get("related_pages_link") or "",
            versions_link=versions.get("link") or "",
            resources=resources,
            metadata=metadata,
        )
    except InvalidInput as exc:
        logger.warning("Skipping Scholar result %s: %s", result.get("result_id"), exc.message)
        return None


def _parse_summary(summary: str) -> tuple[list[str], str, int | None, str]:
    """Scholar's 'authors - venue, year - host' line as (authors, venue, year, host).

    'BA Nosek, MR Banaji… - Journal of personality and …, 2002 - psycnet.apa.org'
    'SC Duncan - 2011 - stacks.stanford.edu'   (no venue)
    A trailing '…' marks names or a venue Scholar cut short.
    """
    parts = [part.strip() for part in summary.split(" - ")]
    if len(parts) == 1:
        authors, middle, host = parts[0], "", ""
    elif len(parts) == 2:
        # 'authors - venue, year' or 'authors - host': only the first ends with a year.
        has_year = _YEAR_AT_END.search(parts[1])
        authors, middle, host = parts[0], parts[1] if has_year else "", "" if has_year else parts[1]
    else:
        authors, middle, host = parts[0], " - ".join(parts[1:-1]), parts[-1]
    names = [name.strip(f" {_ELLIPSIS}") for name in authors.split(",")]
    year_match = _YEAR_AT_END.search(middle)
    year = int(year_match[1]) if year_match else None
    venue = middle[: year_match.start()].strip() if year_match else middle
    return [name for name in names if name], venue, year, host
