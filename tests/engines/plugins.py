"""Plugin engines written into a knowledge base's `engines/` folder, as a user would.

Each plugin is a real HTTP client of a local ReplayServer (tests/engines/replay.py), so a
test controls what the "source" answers (records, 429, 500, a slow answer) and counts what
it was sent, and the same plugin works in this process and in a Celery worker that
discovers it from the shared directory.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

PLUGIN_TEMPLATE = '''
"""A test engine ({engine_id}): papers from a local HTTP server as JSON."""

import os
import time

import httpx

from engines.base import (
    AUTHOR, CITING, DETAILS, SEARCH, BaseSearchEngine, EngineError, EngineTimeout,
    PaperNotFoundAtSource, RateLimited, SearchResults, TransientEngineError,
)
from papers.schemas import PaperRecord

BASE_URL = {base_url!r}
# One client for the engine's life: building one per request costs tens of ms of CPU.
CLIENT = httpx.Client()


class TestEngine(BaseSearchEngine):
    id = {engine_id!r}
    name = {name!r}
    description = "Test engine answering from a local server."
    operations = frozenset({{SEARCH, AUTHOR, DETAILS, CITING}})
    rate_limit = {rate_limit!r}
    cache_ttl = {cache_ttl!r}
    timeout = {timeout!r}
    query_dialect = {query_dialect!r}

    def _get(self, path, **params):
        try:
            # When the call left this process, so tests can check the rate limit itself.
            headers = {{"X-Sent-At": repr(time.time()), "X-Worker": str(os.getpid())}}
            response = CLIENT.get(
                BASE_URL + path, params=params, headers=headers, timeout=self.timeout
            )
        except httpx.TimeoutException as exc:
            raise EngineTimeout(f"{{self.name}} timed out") from exc
        except httpx.TransportError as exc:
            raise TransientEngineError(f"{{self.name}} unreachable: {{exc}}") from exc
        if response.status_code == 429:
            retry_after = response.headers.get("Retry-After")
            raise RateLimited(
                "too many requests", http_status=429,
                retry_after=float(retry_after) if retry_after else None,
            )
        if response.status_code >= 500:
            raise TransientEngineError(
                f"server error {{response.status_code}}", http_status=response.status_code
            )
        if response.status_code == 404:
            raise PaperNotFoundAtSource("no such paper", http_status=404)
        if response.status_code >= 400:
            status = response.status_code
            raise EngineError(f"bad request {{status}}", http_status=status)
        return response.json()

    def _records(self, items):
        return [PaperRecord.build(source=self.id, **item) for item in items]

    def search(self, request):
        found = self._get(
            "/search", q=request.query, n=request.max_results,
            date_from=request.date_from or "", date_to=request.date_to or "",
        )
        if isinstance(found, dict):  # {{"results": [...], "total": n}}: the source's total
            return SearchResults(self._records(found["results"]), total=found["total"])
        return self._records(found)

    def search_by_author(self, author, request):
        return self._records(self._get("/author", name=author))

    def get_paper_details(self, paper_id):
        return self._records([self._get("/paper", id=paper_id)])[0]

    def get_citing_papers(self, paper, max_results):
        return self._records(self._get("/citing", doi=paper.doi or ""))
'''


def write_plugin(
    directory: Path,
    engine_id: str,
    base_url: str,
    *,
    name: str = "",
    rate_limit: str = "1000/second",
    cache_ttl: int = 0,
    timeout: float = 5.0,
    query_dialect: str = "plain",
) -> Path:
    """Write `<directory>/<engine_id>.py`; returns its path."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{engine_id}.py"
    source = PLUGIN_TEMPLATE.format(
        engine_id=engine_id,
        name=name or engine_id.replace("_", " ").title(),
        base_url=base_url,
        rate_limit=rate_limit,
        cache_ttl=cache_ttl,
        timeout=timeout,
        query_dialect=query_dialect,
    )
    path.write_text(textwrap.dedent(source))
    return path
