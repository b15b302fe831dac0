"""Zotero's failures as domain errors (core.errors maps the rest: a 404 from Zotero
is NotFound, a 400 is InvalidInput)."""

from __future__ import annotations

from core.errors import DomainError


class ZoteroError(DomainError):
    """Zotero answered, but not with what was asked for: a 500, an unexpected status, a body
    that is not the documented JSON, a JSON-RPC error from Better BibTeX."""

    code = "zotero_error"


class ZoteroUnreachable(ZoteroError):
    """Nothing answers at the configured URL (Zotero closed, wrong port, plugin missing)."""

    code = "zotero_unreachable"


class ZoteroTimeout(ZoteroError):
    """Zotero accepted the connection but did not answer within ZOTERO_TIMEOUT seconds."""

    code = "zotero_timeout"
