"""Client for Better BibTeX's JSON-RPC endpoint inside a running Zotero (ZOTERO_BBT_URL,
default http://localhost:23119/better-bibtex/json-rpc), for `import_zotero`.

Methods used: `api.ready()`, `item.search(terms[, library])` (CSL-JSON items with their
`citekey` and `library`; `id` is the item URI ending in the item key) and
`item.attachments(citekey[, library])` (file paths), the latter sent in batches.

Better BibTeX always answers HTTP 200; failures are JSON-RPC errors, sent with `id: null`
even inside a batch, so batch answers are matched by position (they come in request
order). Transport failures are the same domain errors as in `papers.zotero.client`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from core.errors import DomainError, NotFound
from papers.zotero.client import zotero_send
from papers.zotero.errors import ZoteroError, ZoteroUnreachable

BBT_HINT = "is Zotero running with the Better BibTeX plugin?"
INVALID_PARAMS = -32602
METHOD_NOT_FOUND = -32601
ATTACHMENTS_PER_BATCH = 100

# item.search's advanced form: every regular item (no attachments, notes or feed items).
ALL_REGULAR_ITEMS: list[list[Any]] = [
    ["ignore_feeds"],
    ["itemType", "isNot", "attachment"],
    ["itemType", "isNot", "note"],
]


@dataclass(frozen=True)
class BetterBibTeXClient:
    url: str
    timeout: float

    @classmethod
    def from_settings(cls) -> BetterBibTeXClient:
        return cls(url=settings.ZOTERO_BBT_URL, timeout=float(settings.ZOTERO_TIMEOUT))

    def ready(self) -> dict[str, Any]:
        """Zotero's and Better BibTeX's versions; raises when either is not there."""
        result = self._results([("api.ready", [])])[0]
        if isinstance(result, DomainError):
            raise result
        return result if isinstance(result, dict) else {}

    def items_search(
        self, terms: str | None = None, *, library: str | None = None
    ) -> list[dict[str, Any]]:
        """CSL-JSON items matching Zotero's quick search `terms` (title, creators, year,
        citekey), or every regular item when `terms` is empty; only `library` (a name or
        id) when given."""
        query: Any = terms.strip() if terms and terms.strip() else ALL_REGULAR_ITEMS
        params: list[Any] = [query] if library is None else [query, library]
        result = self._results([("item.search", params)])[0]
        if isinstance(result, DomainError):
            raise result
        if not isinstance(result, list):
            raise ZoteroError("Better BibTeX's item.search did not answer with a list.")
        return [item for item in result if isinstance(item, dict)]

    def attachments(
        self, citekeys: Sequence[tuple[str, str | None]]
    ) -> list[list[dict[str, Any]] | DomainError]:
        """For each (citekey, library): its attachments as [{open, path, annotations?}]
        (`path` is false for links), or the NotFound/ZoteroError met for that citekey.
        Asked in batches of ATTACHMENTS_PER_BATCH."""
        answers: list[list[dict[str, Any]] | DomainError] = []
        for start in range(0, len(citekeys), ATTACHMENTS_PER_BATCH):
            calls: list[tuple[str, list[Any]]] = [
                ("item.attachments", [citekey] if library is None else [citekey, library])
                for citekey, library in citekeys[start : start + ATTACHMENTS_PER_BATCH]
            ]
            for result in self._results(calls):
                if isinstance(result, DomainError):
                    answers.append(result)
                elif isinstance(result, list):
                    answers.append([entry for entry in result if isinstance(entry, dict)])
                else:
                    answers.append(ZoteroError("item.attachments did not answer with a list."))
        return answers

    def _results(self, calls: list[tuple[str, list[Any]]]) -> list[Any]:
        """Send the calls (one request, or a batch) and return each result or error."""
        requests = [
            {"jsonrpc": "2.0", "method": method, "params": params, "id": n}
            for n, (method, params) in enumerate(calls, start=1)
        ]
        response = zotero_send(
            "POST",
            self.url,
            body=requests[0] if len(requests) == 1 else requests,
            timeout=self.timeout,
            unreachable=f"Zotero is not reachable at {self.url}: {BBT_HINT}",
            what=calls[0][0],
        )
        if response.status_code == 404:
            raise ZoteroUnreachable(
                f"Zotero answers at {self.url} but not as Better BibTeX's JSON-RPC endpoint: "
                "is Better BibTeX installed (and ZOTERO_BBT_URL right)?",
                url=self.url,
                reason="plugin_missing",
            )
        try:
            data = response.json()
        except ValueError:
            data = None
        if response.status_code != 200 or data is None:
            raise ZoteroError(
                f"Better BibTeX answered HTTP {response.status_code} without JSON-RPC at "
                f"{self.url}.",
                status=response.status_code,
            )
        answers = data if isinstance(data, list) else [data]
        if len(answers) != len(calls):
            raise ZoteroError("Better BibTeX's batch answer does not match the batch sent.")
        return [_result(answer, method) for answer, (method, _) in zip(answers, calls, strict=True)]


def _result(answer: Any, method: str) -> Any:
    if not isinstance(answer, dict):
        return ZoteroError(f"Better BibTeX's answer to {method} is not a JSON-RPC response.")
    error = answer.get("error")
    if error is None:
        return answer.get("result")
    code = error.get("code") if isinstance(error, dict) else None
    message = str(error.get("message") if isinstance(error, dict) else error)
    if code == METHOD_NOT_FOUND:
        return ZoteroError(
            f"Better BibTeX does not know {method}: please update Better BibTeX.", method=method
        )
    if code == INVALID_PARAMS and method == "item.attachments":
        return NotFound(f"Better BibTeX: {message}", method=method)
    return ZoteroError(f"Better BibTeX failed on {method}: {message}", method=method, rpc_code=code)
