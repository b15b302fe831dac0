"""The search-engine interface and its errors (docs/ENGINES.md).

An engine is a small client of one external source. It turns the source's answers into
`PaperRecord`s (papers/schemas.py, the record every importer produces, so results merge
into the library through the same de-duplication) and the source's failures into the
errors below. It does no caching, rate limiting, retrying or database work: the runner
(engines/runner.py) does those the same way for every engine.

Writing a plugin engine: put a module in `<directory>/engines/`, subclass
`BaseSearchEngine`, set `id`, `name` and `description`, implement `search` and whichever
optional operations the source supports (listing them in `operations`). See
docs/ENGINES.md.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar

from papers.schemas import PaperRecord

# Operations an engine may support; `search` is required.
SEARCH = "search"
AUTHOR = "search_by_author"
DETAILS = "get_paper_details"
CITING = "get_citing_papers"
CATEGORIES = "categories"
BIBTEX = "get_bibtex"
# Retraction watch (engines/retractions.py): update notices for a batch of DOIs.
UPDATES = "get_update_notices"
# Snowballing (engines/snowball.py): the works a paper cites.
REFERENCES = "get_references"
OPERATIONS = (SEARCH, AUTHOR, DETAILS, CITING, CATEGORIES, BIBTEX, UPDATES, REFERENCES)


# --- errors ----------------------------------------------------------------------------
# Engines raise these (and only these) for the source's failures; the runner turns them
# into a per-engine status. Messages must never contain API keys.


# Every engine answer has an `outcome`, what happened (ok | no_results | unreachable |
# rate_limited | bad_key | timeout | unavailable | unsupported | not_found | cancelled |
# error), a `reason` naming the exact failure (dns, refused, tls, connect_timeout,
# read_timeout, server_error, quota, circuit_open, ...), and a `status`, the coarser word
# clients have always had. The status is derived from the outcome by this one table, so one
# condition has one status everywhere: an engine that cannot be reached is `unavailable`
# whether the network said so or its open breaker did (docs/ENGINES.md, "Statuses").
STATUS_OF_OUTCOME: dict[str, str] = {
    "ok": "ok",
    "no_results": "ok",
    "unreachable": "unavailable",
    "unavailable": "unavailable",
    "bad_key": "unavailable",
    "rate_limited": "rate_limited",
    "timeout": "timeout",
    "unsupported": "unsupported",
    "not_found": "not_found",
    "cancelled": "cancelled",
    "error": "error",
}
# The outcome a status stands for when nothing more precise is known.
OUTCOME_OF_STATUS: dict[str, str] = {
    "ok": "ok",
    "unavailable": "unavailable",
    "rate_limited": "rate_limited",
    "timeout": "timeout",
    "unsupported": "unsupported",
    "not_found": "not_found",
    "cancelled": "cancelled",
    "error": "error",
}
STATUSES = tuple(OUTCOME_OF_STATUS)


def status_of(outcome: str) -> str:
    """The status of an outcome (the table above); `error` for one it does not know."""
    return STATUS_OF_OUTCOME.get(outcome, "error")


class EngineError(Exception):
    """A permanent failure of one call (bad request, unparseable answer): not retried."""

    outcome = "error"
    default_reason = "error"

    @property
    def status(self) -> str:
        return status_of(self.outcome)

    def __init__(
        self, message: str, *, http_status: int | None = None, reason: str | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.http_status = http_status
        self.reason = reason or self.default_reason


class TransientEngineError(EngineError):
    """A failure worth retrying: 429, 5xx, timeouts, dropped connections.

    `retry_after` (seconds) is the source's Retry-After when it sent one.
    """

    outcome = "unreachable"
    default_reason = "server_error"
    # Retried by the runner (within the call's deadline) and counted by the engine's
    # circuit breaker.
    retryable = True

    def __init__(
        self,
        message: str,
        *,
        http_status: int | None = None,
        retry_after: float | None = None,
        reason: str | None = None,
    ) -> None:
        super().__init__(message, http_status=http_status, reason=reason)
        self.retry_after = retry_after


class EngineUnreachable(TransientEngineError):
    """No answer at all, for a reason a retry within seconds will not change: the name
    did not resolve (no network), the connection was refused, TLS failed, no route.

    Not retried; it opens the engine's circuit breaker at once (engines/breaker.py).
    """

    retryable = False
    default_reason = "network"


class EngineTimeout(TransientEngineError):
    """The source did not answer in time (an HTTP timeout)."""

    outcome = "timeout"
    default_reason = "read_timeout"


class RateLimited(TransientEngineError):
    """The source answered 429, or no rate-limit slot came free before the deadline."""

    outcome = "rate_limited"
    default_reason = "quota"


class EngineNotAvailable(EngineError):
    """The engine cannot be used at all right now: no API key, account out of credit."""

    outcome = "unavailable"
    default_reason = "not_configured"


class BadKey(EngineNotAvailable):
    """The source refused our credentials (HTTP 401/403, an account SerpAPI refuses)."""

    outcome = "bad_key"
    default_reason = "bad_key"


class UnsupportedOperation(EngineError):
    """The source has no such operation (e.g. arXiv has no citation data)."""

    outcome = "unsupported"
    default_reason = "unsupported"


class PaperNotFoundAtSource(EngineError):
    """get_paper_details / get_citing_papers: the source does not know this paper."""

    outcome = "not_found"
    default_reason = "not_found"


# --- what engines are given -------------------------------------------------------------


@dataclass(frozen=True)
class SearchRequest:
    """A search as the engine sees it. Dates are 'YYYY-MM-DD' (or 'YYYY'); None = open."""

    query: str
    max_results: int = 10
    offset: int = 0
    date_from: str | None = None
    date_to: str | None = None
    categories: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "categories": list(self.categories)}

    def admits_year(self, year: int | None) -> bool:
        """Whether a paper of `year` falls within the request's dates, compared by year
        (for sources without a date filter, whose answers are filtered instead); a paper
        without a year is kept."""
        if year is None:
            return True
        if self.date_from and year < int(self.date_from[:4]):
            return False
        return not (self.date_to and year > int(self.date_to[:4]))

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> SearchRequest:
        return cls(**{**values, "categories": tuple(values.get("categories") or ())})


class SearchResults(list[PaperRecord]):
    """What `search` may return instead of a plain list: the records, the number of
    matches the source reported in all (`total`, None when it does not say), which the
    search log shows beside the count returned, and `sent`, the query exactly as the source
    received it when the engine added to it (a date clause, a source restriction), so the
    log records what was searched, not what was asked."""

    def __init__(
        self,
        records: Iterable[PaperRecord] = (),
        *,
        total: int | None = None,
        sent: str | None = None,
    ) -> None:
        super().__init__(records)
        self.total = total
        self.sent = sent


def records_of(
    items: Iterable[Any], parse: Callable[[Any], PaperRecord | None], *, source: str
) -> list[PaperRecord]:
    """The records of a source's result list, `parse` turning each item into one (None: not
    a paper). One unusable item is logged and skipped, not fatal: a page of twenty is not
    lost to one malformed entry."""
    records = []
    for item in items:
        try:
            record = parse(item)
        except EngineError as exc:
            logging.getLogger(__name__).warning("Skipping a %s result: %s", source, exc.message)
            continue
        if record is not None:
            records.append(record)
    return records


def reported_total(value: Any) -> int | None:
    """A source's total as an int, or None when it is missing or not a number."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        return None
    try:
        return max(0, int(value))
    except ValueError:
        return None


@dataclass(frozen=True)
class PaperRef:
    """A paper handed to an engine: whatever handles the library knows for it.

    Each engine takes the handle it understands (arXiv: arxiv_id; OpenAlex: doi or an
    `openalex` identifier; Scholar: scholar["cites_id"]) and raises UnsupportedOperation /
    PaperNotFoundAtSource when it has none.
    """

    title: str = ""
    doi: str | None = None
    arxiv_id: str | None = None
    identifiers: dict[str, str] = field(default_factory=dict)
    scholar: dict[str, str] = field(default_factory=dict)
    year: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> PaperRef:
        return cls(**values)


@dataclass(frozen=True)
class Category:
    """A subject category an engine can filter by (arXiv 'cs.CL')."""

    id: str
    name: str
    group: str = ""


# --- the interface ------------------------------------------------------------------------


class BaseSearchEngine:
    """One external source of papers. Subclasses set the class attributes and implement
    `search` plus the operations they list in `operations`.

    Instances are created once per process and must be safe to share between threads.
    """

    id: ClassVar[str]
    name: ClassVar[str]
    description: ClassVar[str] = ""
    type: ClassVar[str] = "external"
    operations: ClassVar[frozenset[str]] = frozenset({SEARCH})
    # Asked by a search that names no engines. Sources of one field (PubMed, OpenReview, ...)
    # say False: they are asked when named, or when ENGINES_DEFAULT lists them.
    in_default_search: ClassVar[bool] = True
    # The query syntax `search` understands, for search strings written in the reviewers'
    # language (engines/query_dialects.py DIALECTS; docs/SEARCH-STRINGS.md): "plain" is
    # keywords only, so a plugin that sets nothing gets words, never syntax it misreads.
    query_dialect: ClassVar[str] = "plain"
    # Default rate limit in the `limits` notation ("1/3 seconds", "10/second"); the
    # setting ENGINE_RATE_LIMITS overrides it per engine.
    rate_limit: ClassVar[str] = "1/second"
    # Seconds a cached answer stays fresh; ENGINE_CACHE_TTLS overrides it per engine.
    cache_ttl: ClassVar[int] = 24 * 3600
    # Seconds one HTTP request may take to connect (name resolution included), and to
    # answer once connected; both are cut to what is left of the call's deadline.
    connect_timeout: ClassVar[float] = 3.0
    timeout: ClassVar[float] = 20.0

    def current_rate_limit(self) -> str:
        """The rate limit the engine asks for now: `rate_limit`, unless it depends on the
        configuration (PubMed's is higher with an API key). No network."""
        return self.rate_limit

    def unavailable_reason(self) -> str:
        """Why the engine cannot be used (missing key, ...); empty when it can. No network."""
        return ""

    def is_available(self) -> bool:
        return not self.unavailable_reason()

    def probe_url(self) -> str:
        """An address of the source whose host and port a connectivity probe may try (no
        request is sent); empty for an engine with nothing to probe."""
        return ""

    def key_check(self) -> str:
        """Why the source refuses the configured key or account, asked of the source without
        spending a search where it offers that; empty when it accepts them, when there is
        nothing to check, or when it cannot be asked now (connectivity is the probe's)."""
        return ""

    def search(self, request: SearchRequest) -> list[PaperRecord]:
        """Papers matching `request.query`, best first, at most `request.max_results`."""
        raise NotImplementedError

    def search_by_author(self, author: str, request: SearchRequest) -> list[PaperRecord]:
        """Papers by `author` (request.query is the author too), newest or best first."""
        raise UnsupportedOperation(f"{self.name} cannot search by author.")

    def get_paper_details(self, paper_id: str) -> PaperRecord:
        """The full record for the source's own id (arXiv id, DOI, OpenAlex W-id, ...)."""
        raise UnsupportedOperation(f"{self.name} cannot look up a single paper.")

    def get_citing_papers(self, paper: PaperRef, max_results: int) -> list[PaperRecord]:
        """Papers that cite `paper`, at most `max_results`."""
        raise UnsupportedOperation(f"{self.name} has no citation data.")

    def get_references(self, paper: PaperRef, max_results: int) -> list[PaperRecord]:
        """Papers `paper` cites (its reference list, in the source's order), at most
        `max_results`."""
        raise UnsupportedOperation(f"{self.name} has no reference lists.")

    def categories(self) -> list[Category]:
        """The subject categories `SearchRequest.categories` accepts."""
        raise UnsupportedOperation(f"{self.name} has no subject categories.")

    def get_bibtex(self, paper: PaperRef) -> str:
        """The source's own BibTeX for `paper`."""
        raise UnsupportedOperation(f"{self.name} does not provide BibTeX.")

    def get_update_notices(self, dois: list[str]) -> list[dict[str, Any]]:
        """Retractions, corrections and expressions of concern of these DOIs, one entry
        {"doi", "notices": [{"type", "doi" (of the notice), "date", "reported_by"}]} per
        DOI the source could tell about (no notices: it knows of none). A DOI left out
        was not checked; a failure raises, never answers "no notices"."""
        raise UnsupportedOperation(f"{self.name} has no update notices.")

    def describe(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "description": self.description,
            "type": self.type,
            "operations": sorted(self.operations),
        }
