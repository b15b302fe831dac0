"""DBLP (https://dblp.org): the computer-science bibliography, no key needed.

API (https://dblp.org/faq/13501473, base `DBLP_API_URL`): publications are searched with
`/search/publ/api?q=...&format=json&h=&f=`; an author is found with `/search/author/api`
and their publications read from their person page `/pid/<pid>.xml`; one record is
`/rec/<key>.xml`. DBLP has no abstracts (records carry none), uses no date or subject
filter (dates are applied to its answer by year), writes titles with a closing '.' (taken
off) and tells apart people of one name with a number ('Wei Wang 0001': the number is
dropped from the name, the person id kept as the author's profile link).

Rate limit (https://dblp.org/faq/1474706.html): "You should always be fine when waiting
for at least one or two second between two consecutive requests"; past its limit DBLP
answers 429 with a Retry-After, which the runner honours (RateLimited).
"""

from __future__ import annotations

import html
import re
import xml.etree.ElementTree as ElementTree
from typing import Any

from django.conf import settings

from core.errors import InvalidInput
from engines import http
from engines.base import (
    AUTHOR,
    DETAILS,
    SEARCH,
    BadKey,
    BaseSearchEngine,
    EngineError,
    SearchRequest,
    UnsupportedOperation,
    records_of,
)
from papers.identifiers import normalize_arxiv_id, normalize_doi
from papers.schemas import PaperRecord

# The publication search answers at most 1000 hits a request.
MAX_HITS = 1000
SITE = "https://dblp.org"
# DBLP publication type (search API) -> BibTeX entry type.
ENTRY_TYPES = {
    "Journal Articles": "article",
    "Conference and Workshop Papers": "inproceedings",
    "Parts in Books or Collections": "incollection",
    "Books and Theses": "book",
    "Editorship": "proceedings",
    "Informal Publications": "misc",
    "Informal and Other Publications": "misc",
    "Reference Works": "misc",
    "Data and Artifacts": "misc",
}
# Person and record XML element -> BibTeX entry type.
XML_ENTRY_TYPES = {
    "article": "article",
    "inproceedings": "inproceedings",
    "incollection": "incollection",
    "book": "book",
    "proceedings": "proceedings",
    "phdthesis": "phdthesis",
    "mastersthesis": "mastersthesis",
}
_DISAMBIGUATION = re.compile(r"\s+\d{4}$")
# A person id: 'm/MarvinMinsky', '95/7448-1', '10/3248'.
_PID = re.compile(r"^[A-Za-z0-9]+(?:/[A-Za-z0-9_-]+){1,3}$")
# A record key: 'conf/dac/ZhangYY21', 'journals/corr/abs-1905-10841'.
_KEY = re.compile(r"^[a-z]+(?:/[\w-]+){1,3}$", re.IGNORECASE)
_PID_URL = re.compile(r"^https?://(?:www\.)?dblp\.(?:org|uni-trier\.de)/pid/(.+?)(?:\.html)?$")
_CORR_VOLUME = re.compile(r"^abs/(.+)$")


class DblpEngine(BaseSearchEngine):
    id = "dblp"
    name = "DBLP"
    description = (
        "DBLP: the computer-science bibliography (~7M journal, conference and arXiv "
        "records) with venues, DOIs and disambiguated authors; no abstracts. No key needed."
    )
    in_default_search = False  # a field's own source: asked when named (docs/ENGINES.md)
    operations = frozenset({SEARCH, AUTHOR, DETAILS})
    rate_limit = "1/second"
    # Words (prefix-matched, AND-ed) and `a|b` for OR; no fields (engines/query_dialects.py).
    query_dialect = "dblp"

    def probe_url(self) -> str:
        return str(settings.DBLP_API_URL)

    def search(self, request: SearchRequest) -> list[PaperRecord]:
        """Publications matching `request.query` (DBLP's order), those outside the
        request's years dropped. Raises UnsupportedOperation for categories, EngineError
        for an answer without hits, and the errors of engines.http."""
        if request.categories:
            raise UnsupportedOperation("DBLP cannot filter by subject category.")
        data = self._json(
            "/search/publ/api",
            {
                "q": request.query,
                "format": "json",
                "h": max(1, min(request.max_results, MAX_HITS)),
                "f": max(0, request.offset),
                "c": 0,  # no completions of the last word
            },
        )
        records = _records(_hits(data), _hit_record)
        return [r for r in records if request.admits_year(r.year)][: request.max_results]

    def search_by_author(self, author: str, request: SearchRequest) -> list[PaperRecord]:
        """The publications of the person DBLP ranks first for `author`, newest first,
        from their person page. The person matched is named in each record's
        metadata["author_match"] (a common name may pick someone else). No match: none."""
        if request.categories:
            raise UnsupportedOperation("DBLP cannot filter by subject category.")
        found = self._json("/search/author/api", {"q": author, "format": "json", "h": 1})
        match = next(iter(_hits(found)), None)
        info = (match or {}).get("info") or {}
        pid_match = _PID_URL.match(str(info.get("url") or ""))
        if not pid_match or not _PID.match(pid_match.group(1)):
            return []
        pid = pid_match.group(1)
        root = self._xml(f"/pid/{_path(pid)}.xml", not_found=f"DBLP has no person {pid}.")
        if root.tag != "dblpperson":
            raise EngineError(f"DBLP's page for person {pid} is not a person page.")
        author_match = {
            "dblp_pid": pid,
            "name": _display_name(str(info.get("author") or root.get("name") or "")),
            "url": f"{SITE}/pid/{pid}",
        }
        entries = [child for r in root.findall("r") for child in r]
        records = [r for r in _records(entries, _xml_record) if request.admits_year(r.year)]
        start = max(0, request.offset)
        records = records[start : start + request.max_results]
        for record in records:
            record.metadata["author_match"] = author_match
        return records

    def get_paper_details(self, paper_id: str) -> PaperRecord:
        """The record with this DBLP key ('conf/dac/ZhangYY21', 'dblp:…' or its
        dblp.org/rec URL). Raises EngineError for anything else, PaperNotFoundAtSource
        when DBLP has no such record."""
        key = _record_key(paper_id)
        root = self._xml(f"/rec/{_path(key)}.xml", not_found=f"DBLP has no record {key}.")
        entries = list(root) if root.tag == "dblp" else [root]
        record = next(iter(_records(entries, _xml_record)), None)
        if record is None:
            raise EngineError(f"DBLP's answer for {key} holds no publication.")
        return record

    # --- calls ---------------------------------------------------------------------------

    def _json(self, path: str, params: dict[str, Any]) -> dict[str, Any]:
        try:
            data = http.get_json(
                _base() + path,
                params=params,
                engine_name=self.name,
                timeout=self.timeout,
                connect_timeout=self.connect_timeout,
            )
        except BadKey as exc:
            raise _refused(exc) from None
        if not isinstance(data, dict) or not isinstance(data.get("result"), dict):
            raise EngineError("DBLP answered without a result.")
        return data

    def _xml(self, path: str, *, not_found: str) -> ElementTree.Element:
        try:
            text = http.get_text(
                _base() + path,
                accept="application/xml",
                engine_name=self.name,
                timeout=self.timeout,
                connect_timeout=self.connect_timeout,
                not_found=not_found,
            )
        except BadKey as exc:
            raise _refused(exc) from None
        # DBLP's pages declare no DTD: one that does is not DBLP's (and could define
        # entities that expand without bound).
        if "<!DOCTYPE" in text or "<!ENTITY" in text:
            raise EngineError("DBLP answered with XML that declares a DTD; not read.")
        try:
            # No DTD, so no entities to expand and none to fetch: what defusedxml guards.
            return ElementTree.fromstring(text.encode("utf-8"))  # noqa: S314
        except ElementTree.ParseError as exc:
            raise EngineError(f"DBLP answered with XML that cannot be read: {exc}.") from None


def _base() -> str:
    return settings.DBLP_API_URL.rstrip("/")


def _refused(error: BadKey) -> EngineError:
    """DBLP takes no credentials: a 401/403 refuses the request (a blocked client), and
    must not report the engine as holding a bad key (skipped from then on)."""
    return EngineError(error.message, http_status=error.http_status)


def _path(value: str) -> str:
    """A person id or record key as URL path segments, each one encoded."""
    return "/".join(http.path_segment(part, what="DBLP id") for part in value.split("/"))


def _record_key(paper_id: str) -> str:
    text = paper_id.strip()
    text = re.sub(r"^dblp:\s*", "", text, flags=re.IGNORECASE)
    text = re.sub(r"^https?://(?:www\.)?dblp\.(?:org|uni-trier\.de)/rec/", "", text)
    text = re.sub(r"\.(?:html|xml|bib)$", "", text)
    if not _KEY.match(text):
        raise EngineError(
            "DBLP looks papers up by record key (e.g. 'conf/dac/ZhangYY21'); "
            f"{paper_id!r} is not one."
        )
    return text


def _hits(data: dict[str, Any]) -> list[dict[str, Any]]:
    hits = data["result"].get("hits")
    if not isinstance(hits, dict):
        raise EngineError("DBLP answered without a list of hits.")
    found = hits.get("hit") or []  # absent when nothing matched
    found = found if isinstance(found, list) else [found]
    return [hit for hit in found if isinstance(hit, dict)]


# --- parsing -------------------------------------------------------------------------------


def _records(items: list[Any], parse: Any) -> list[PaperRecord]:
    return records_of(items, parse, source="DBLP")


def _display_name(name: str) -> str:
    """'Kun Huang 0004' -> 'Kun Huang' (DBLP's number tells namesakes apart)."""
    return _DISAMBIGUATION.sub("", html.unescape(name).strip())


def _title(value: object) -> str:
    """DBLP's title without the '.' it closes every title with."""
    if isinstance(value, dict):  # the API's older form: {"@ee": ..., "text": ...}
        value = value.get("text")
    text = " ".join(html.unescape(str(value or "")).split())
    return text[:-1] if text.endswith(".") and not text.endswith("..") else text


def _doi_and_arxiv(doi: str, ees: list[str], venue: str, volume: str) -> tuple[str, str]:
    """The DOI (DBLP's `doi`, else a doi.org link) and the arXiv id (a CoRR volume
    'abs/2106.01234', else an arxiv.org link)."""
    found_doi = normalize_doi(doi) or ""
    found_arxiv = ""
    corr = _CORR_VOLUME.match(volume) if venue == "CoRR" else None
    if corr:
        found_arxiv = normalize_arxiv_id(corr.group(1)) or ""
    for link in ees:
        if not found_doi and "doi.org/" in link:
            found_doi = normalize_doi(link) or ""
        if not found_arxiv and "arxiv.org/" in link:
            found_arxiv = normalize_arxiv_id(link) or ""
    return found_doi, found_arxiv


def _build(values: dict[str, Any], key: str) -> PaperRecord:
    try:
        return PaperRecord.build(**values)
    except InvalidInput as exc:
        raise EngineError(f"DBLP's record {key} is unusable: {exc.message}") from None


def _hit_record(hit: dict[str, Any]) -> PaperRecord | None:
    """A PaperRecord from a publication-search hit; None without a title or key."""
    info = hit.get("info")
    if not isinstance(info, dict):
        return None
    title, key = _title(info.get("title")), str(info.get("key") or "")
    if not title or not key:
        return None
    raw_authors = (info.get("authors") or {}).get("author") or []
    raw_authors = raw_authors if isinstance(raw_authors, list) else [raw_authors]
    authors, pids = [], []
    for raw in raw_authors:
        name = raw.get("text") if isinstance(raw, dict) else raw
        pid = str(raw.get("@pid") or "") if isinstance(raw, dict) else ""
        if not isinstance(name, str) or not name.strip():
            continue
        authors.append({"name": _display_name(name), "profile_link": _pid_link(pid)})
        pids.append(pid)
    venues = info.get("venue") or []
    venues = [html.unescape(str(v)) for v in (venues if isinstance(venues, list) else [venues])]
    venue = venues[0] if venues else ""
    ees = info.get("ee") or []
    ees = [str(e) for e in (ees if isinstance(ees, list) else [ees])]
    volume = str(info.get("volume") or "")
    doi, arxiv_id = _doi_and_arxiv(str(info.get("doi") or ""), ees, venue, volume)
    dblp_type = str(info.get("type") or "")
    entry_type = ENTRY_TYPES.get(dblp_type, "misc")
    if entry_type == "book" and key.startswith("phd/"):
        entry_type = "phdthesis"
    metadata = {
        "dblp_type": dblp_type,
        "dblp_author_pids": pids if any(pids) else [],
        "venues": venues if len(venues) > 1 else [],
        "access": str(info.get("access") or ""),
        "links": ees,
    }
    return _build(
        {
            "title": title,
            "authors": authors,
            "year": info.get("year"),
            "venue": "" if venue == "CoRR" else venue,
            "volume": "" if venue == "CoRR" else volume,
            "number": str(info.get("number") or ""),
            "pages": str(info.get("pages") or ""),
            "publisher": html.unescape(str(info.get("publisher") or "")),
            "entry_type": entry_type,
            "doi": doi or None,
            "arxiv_id": arxiv_id or None,
            "identifiers": {"dblp": key},
            "source": "dblp",
            "source_id": key,
            "source_url": str(info.get("url") or f"{SITE}/rec/{key}"),
            "metadata": {name: value for name, value in metadata.items() if value},
        },
        key,
    )


def _xml_record(element: ElementTree.Element) -> PaperRecord | None:
    """A PaperRecord from a person page's or record page's publication element."""
    entry_type = XML_ENTRY_TYPES.get(element.tag)
    key = element.get("key") or ""
    title_element = element.find("title")
    title = _title("".join(title_element.itertext()) if title_element is not None else "")
    if entry_type is None or not title or not key:
        return None
    authors, pids = [], []
    for author in element.findall("author"):
        pid = author.get("pid") or ""
        authors.append({"name": _display_name(author.text or ""), "profile_link": _pid_link(pid)})
        pids.append(pid)

    def text(tag: str) -> str:
        found = element.find(tag)
        return " ".join("".join(found.itertext()).split()) if found is not None else ""

    venue = text("journal") or text("booktitle")
    ees = [" ".join((ee.text or "").split()) for ee in element.findall("ee")]
    doi, arxiv_id = _doi_and_arxiv("", ees, venue, text("volume"))
    metadata = {
        "dblp_type": element.tag,
        "dblp_author_pids": pids if any(pids) else [],
        "dblp_crossref": text("crossref"),
        "links": ees,
    }
    return _build(
        {
            "title": title,
            "authors": authors,
            "year": text("year") or None,
            "venue": "" if venue == "CoRR" else venue,
            "volume": "" if venue == "CoRR" else text("volume"),
            "number": text("number"),
            "pages": text("pages"),
            "publisher": text("publisher"),
            "entry_type": entry_type,
            "doi": doi or None,
            "arxiv_id": arxiv_id or None,
            "identifiers": {"dblp": key},
            "source": "dblp",
            "source_id": key,
            "source_url": f"{SITE}/rec/{key}",
            "metadata": {name: value for name, value in metadata.items() if value},
        },
        key,
    )


def _pid_link(pid: str) -> str:
    return f"{SITE}/pid/{pid}" if pid and _PID.match(pid) else ""
