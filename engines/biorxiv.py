"""bioRxiv and medRxiv (https://www.biorxiv.org, https://www.medrxiv.org): preprints in
biology and in medicine, no key needed.

Their API (https://api.biorxiv.org) gives a preprint's details by DOI
(`/details/{server}/{DOI}/na/json`: every version, its category, abstract and, once it
appears in a journal, the journal version's DOI in `published`) but has no text search.
Searches therefore go through Europe PMC's preprint index restricted to the server
(`(<query>) AND SRC:PPR AND PUBLISHER:"bioRxiv"`), in Europe PMC's relevance order and
under Europe PMC's rate limit (engines/europepmc.py), so the query is Europe PMC syntax.

We found no published request limit for the API; we ask at most 2 a second
(ENGINE_RATE_LIMITS=biorxiv=... / medrxiv=... override).
"""

from __future__ import annotations

import dataclasses
import logging
import re
from typing import Any, ClassVar

from django.conf import settings

from core.errors import InvalidInput
from engines import europepmc, http
from engines.base import (
    AUTHOR,
    DETAILS,
    SEARCH,
    BaseSearchEngine,
    EngineError,
    PaperNotFoundAtSource,
    SearchRequest,
    SearchResults,
)
from papers.identifiers import normalize_doi
from papers.schemas import PaperRecord

logger = logging.getLogger(__name__)

# A bioRxiv/medRxiv DOI: 10.1101/<suffix>, or 10.64898/<suffix> (openRxiv's prefix for
# preprints posted since late 2025); the suffix has no '/', so the DOI is two path
# segments of the details URL.
_PREPRINT_DOI = re.compile(r"^(10\.1101|10\.64898)/([^/\s]+)$")
_DOI_SHAPE = re.compile(r"^10\.\d{4,9}/\S+$")
# `published` when the preprint has no journal version yet.
NOT_PUBLISHED = "NA"


class BiorxivEngine(BaseSearchEngine):
    id = "biorxiv"
    name = "bioRxiv"
    description = (
        "bioRxiv: preprints in biology (search through Europe PMC's preprint index; "
        "details, versions and the published version's DOI from bioRxiv). No key needed."
    )
    in_default_search = False  # a field's own source: asked when named (docs/ENGINES.md)
    operations = frozenset({SEARCH, AUTHOR, DETAILS})
    # Searches are Europe PMC queries restricted to the server.
    query_dialect = "europepmc_preprints"
    rate_limit = "2/second"
    # The API's name of the server, and Europe PMC's publisher name for it.
    server: ClassVar[str] = "biorxiv"
    publisher: ClassVar[str] = "bioRxiv"
    site: ClassVar[str] = "https://www.biorxiv.org"

    def probe_url(self) -> str:
        return str(settings.BIORXIV_API_URL)

    def search(self, request: SearchRequest) -> list[PaperRecord]:
        """Preprints of this server matching `request.query` (Europe PMC relevance), within
        the request's dates. Errors as for EuropePmcEngine.search."""
        return self._through_europepmc(request, request.query)

    def search_by_author(self, author: str, request: SearchRequest) -> list[PaperRecord]:
        """Preprints of this server by `author` (Europe PMC's AUTH: field)."""
        return self._through_europepmc(request, europepmc.author_query(author))

    def get_paper_details(self, paper_id: str) -> PaperRecord:
        """The latest version of the preprint with this DOI, from the server's details API.

        Raises PaperNotFoundAtSource when the server has no such preprint (a DOI of another
        registrant without asking), EngineError when `paper_id` is not a DOI."""
        doi = normalize_doi(paper_id)
        if not doi or not _DOI_SHAPE.match(doi):
            raise EngineError(f"{self.name} looks preprints up by DOI; {paper_id!r} is not one.")
        match = _PREPRINT_DOI.match(doi)
        if not match:  # another registrant's DOI: not a bioRxiv/medRxiv preprint, no request
            raise PaperNotFoundAtSource(
                f"{doi} is not a {self.name} DOI (10.1101/..., 10.64898/...)."
            )
        prefix, suffix = match.groups()
        path = "/".join(
            (
                "details",
                self.server,
                http.path_segment(prefix, what="DOI"),
                http.path_segment(suffix, what="DOI"),
                "na",
                "json",
            )
        )
        data = http.get_json(
            f"{settings.BIORXIV_API_URL.rstrip('/')}/{path}",
            engine_name=self.name,
            timeout=self.timeout,
            connect_timeout=self.connect_timeout,
            not_found=f"{self.name} has no preprint with DOI {doi}.",
        )
        if not isinstance(data, dict):
            raise EngineError(f"{self.name} answered with JSON that is not an object.")
        collection = data.get("collection")
        if not collection:
            # {"messages":[{"status":"no posts found"}],"collection":[]}
            raise PaperNotFoundAtSource(f"{self.name} has no preprint with DOI {doi}.")
        if not isinstance(collection, list):
            raise EngineError(f"{self.name} answered without a list of versions.")
        versions = [v for v in collection if isinstance(v, dict)]
        if not versions:
            raise EngineError(f"{self.name} answered without a usable version.")
        latest = max(versions, key=lambda v: _int(v.get("version")))
        record = self._record(latest, doi)
        if record is None:
            raise EngineError(f"{self.name}'s record of DOI {doi} has no title.")
        return record

    # --- search through Europe PMC ---------------------------------------------------------

    def _through_europepmc(self, request: SearchRequest, query: str) -> list[PaperRecord]:
        if not query.strip():
            raise EngineError(f"{self.name} needs a query.")
        restricted = f'({query.strip()}) AND SRC:PPR AND PUBLISHER:"{self.publisher}"'
        europepmc.take_shared_turn()
        records = europepmc.search_records(
            self,
            europepmc.query_for(request, restricted),
            request,
            name=f"Europe PMC (searching {self.name})",
        )
        return SearchResults(
            [dataclasses.replace(record, source=self.id) for record in records],
            total=getattr(records, "total", None),
            sent=getattr(records, "sent", None),
        )

    # --- parsing -----------------------------------------------------------------------------

    def _record(self, item: dict[str, Any], doi: str) -> PaperRecord | None:
        title = europepmc.strip_tags(item.get("title"))
        if not title:
            return None
        version = str(item.get("version") or "").strip()
        published = str(item.get("published") or "").strip()
        published_doi = normalize_doi(published) if published != NOT_PUBLISHED else None
        server = str(item.get("server") or self.publisher)
        page = f"{self.site}/content/{doi}v{version}" if version else f"{self.site}/content/{doi}"
        metadata = {
            "preprint": True,
            "preprint_server": self.publisher,
            "version": version,
            "preprint_type": item.get("type") or "",
            "license": item.get("license") or "",
            "jats_xml_url": item.get("jatsxml") or "",
            "author_corresponding": item.get("author_corresponding") or "",
            "author_corresponding_institution": item.get("author_corresponding_institution") or "",
        }
        if published and published != NOT_PUBLISHED and not published_doi:
            metadata["unparsed_published"] = published
        category = str(item.get("category") or "").strip()
        try:
            return PaperRecord.build(
                title=title,
                authors=_authors(item),
                year=item.get("date") or None,
                publication_date=item.get("date") or "",
                abstract=europepmc.strip_tags(item.get("abstract")),
                venue=self.publisher if server.lower() == self.server else server,
                publisher=self.publisher,
                entry_type="misc",
                doi=doi,
                identifiers={"published_doi": published_doi} if published_doi else {},
                source=self.id,
                source_id=f"{doi}v{version}" if version else doi,
                source_url=page,
                pdf_url=f"{page}.full.pdf",
                categories=[c for c in (category, "preprint") if c],
                metadata={k: v for k, v in metadata.items() if v not in ("", None)},
            )
        except InvalidInput as exc:
            raise EngineError(f"{self.name}'s record {doi} is unusable: {exc.message}") from None


class MedrxivEngine(BiorxivEngine):
    id = "medrxiv"
    name = "medRxiv"
    description = (
        "medRxiv: preprints in medicine and health sciences (search through Europe PMC's "
        "preprint index; details, versions and the published version's DOI from medRxiv)."
    )
    server = "medrxiv"
    publisher = "medRxiv"
    site = "https://www.medrxiv.org"


def _authors(item: dict[str, Any]) -> list[dict[str, str]]:
    """'Naka, A.; Shababo, B.' -> family/given pairs; the corresponding author gets the
    corresponding institution as affiliation."""
    corresponding = str(item.get("author_corresponding") or "").split()
    institution = str(item.get("author_corresponding_institution") or "")
    authors = []
    for part in str(item.get("authors") or "").split(";"):
        family, _, given = (piece.strip() for piece in part.partition(","))
        if not family:
            continue
        author = {"name": f"{given} {family}".strip(), "family": family, "given": given}
        if institution and corresponding and corresponding[-1].lower() == family.lower():
            author["affiliation"] = institution
            institution = ""  # once
        authors.append(author)
    return authors


def _int(value: object) -> int:
    try:
        return int(str(value))
    except ValueError:
        return 0
