"""OpenReview (https://openreview.net): submissions to machine-learning venues, no key needed.

API 2 (https://docs.openreview.net, base `OPENREVIEW_API_URL`, api2.openreview.net): a
search is `/notes/search` (its full-text index over papers, `source=forum`); a search whose
query names a venue id ('ICLR.cc/2024/Conference') or whose request has categories (venue
ids) reads that venue's papers, `/notes?content.venueid=...` when nothing else is asked,
else `/notes/search` restricted with `venueid`. A paper is looked up by its forum id
(`/notes?id=`). Many papers exist only here, rejected and withdrawn ones included, so each
record keeps the decision OpenReview shows (metadata "decision" and a `decision:<word>`
category): accepted, rejected, withdrawn, desk_rejected or under_review.

API 2 wraps every content value as {"value": ...}; API 1 notes (api.openreview.net, venues
before 2023) carry the values bare. Both are read. OpenReview publishes no rate limit;
one request a second is what its own client paces to when it is told to slow down.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from django.conf import settings

from core.errors import InvalidInput
from engines import http
from engines.base import (
    DETAILS,
    SEARCH,
    BadKey,
    BaseSearchEngine,
    EngineError,
    PaperNotFoundAtSource,
    SearchRequest,
    TransientEngineError,
    UnsupportedOperation,
    records_of,
)
from papers.identifiers import normalize_openreview_id
from papers.schemas import PaperRecord

SITE = "https://openreview.net"
# /notes and /notes/search answer at most 1000 notes a request.
MAX_LIMIT = 1000
# A venue id: a domain-like first segment and a year segment ('ICLR.cc/2024/Conference',
# 'NeurIPS.cc/2023/Track/Datasets_and_Benchmarks', 'aclweb.org/ACL/2024/Workshop/NLRSE').
_VENUE_ID = re.compile(
    r"(?<!\S)([A-Za-z0-9][\w-]*(?:\.[\w-]+)+(?:/[\w.-]+)*/(?:19|20)\d\d(?:/[\w.-]+)*)(?!\S)"
)
_YEAR = re.compile(r"\b((?:19|20)\d\d)\b")
# What venueid becomes when a submission is not accepted (API 2 venues).
_STATUS_SUFFIXES = (
    ("/Withdrawn_Submission", "withdrawn"),
    ("/Desk_Rejected_Submission", "desk_rejected"),
    ("/Rejected_Submission", "rejected"),
    ("/Submission", "under_review"),
)
_PRESENTATION = re.compile(r"\b(oral|spotlight|poster|notable[- ]top[- ]\d+%)", re.IGNORECASE)
_ACCEPTED_WORDS = re.compile(r"\b(accept(?:ed)?|oral|spotlight|poster|notable)\b", re.IGNORECASE)


class OpenReviewEngine(BaseSearchEngine):
    id = "openreview"
    name = "OpenReview"
    description = (
        "OpenReview: submissions to ML venues (ICLR, NeurIPS, ICML, TMLR...) with abstracts, "
        "PDFs and the decision (accepted, rejected, withdrawn). Categories are venue ids "
        "such as ICLR.cc/2024/Conference. No key needed."
    )
    in_default_search = False  # a field's own source: asked when named (docs/ENGINES.md)
    operations = frozenset({SEARCH, DETAILS})
    rate_limit = "1/second"
    # Its full-text search takes plain words; no field syntax.
    query_dialect = "plain"

    def probe_url(self) -> str:
        return str(settings.OPENREVIEW_API_URL)

    def search(self, request: SearchRequest) -> list[PaperRecord]:
        """Papers matching `request.query`, or a venue's papers (a venue id in the query,
        or venue ids as categories), filtered by year when the request has dates.

        Raises UnsupportedOperation for a category that is not a venue id, EngineError for
        an answer without notes, TransientEngineError when OpenReview says its search is
        unavailable, and the errors of engines.http.
        """
        venues, text = _venues_and_text(request)
        if not venues and not text:
            return []  # nothing to search for; OpenReview refuses an empty term
        limit = max(1, min(request.max_results, MAX_LIMIT))
        offset = max(0, request.offset)
        records: list[PaperRecord] = []
        for venue in venues or [""]:
            if venue and not text:
                params: dict[str, Any] = {"content.venueid": venue}
                data = self._get("/notes", {**params, "limit": limit, "offset": offset})
            else:
                params = {"term": text, "type": "terms", "content": "all", "source": "forum"}
                if venue:
                    params["venueid"] = venue
                data = self._get("/notes/search", {**params, "limit": limit, "offset": offset})
            records.extend(_records(_notes(data)))
        # No date filter at the source: the answer is filtered by year.
        records = [r for r in records if request.admits_year(r.year)]
        return list({r.source_id: r for r in records}.values())[: request.max_results]

    def get_paper_details(self, paper_id: str) -> PaperRecord:
        """The paper with this forum id ('YicbFdNTTy', 'openreview:YicbFdNTTy' or its
        forum/pdf URL); the id of a review or comment leads to its paper.

        Raises EngineError for an id of another shape, PaperNotFoundAtSource when
        OpenReview has no such public note.
        """
        forum = normalize_openreview_id(paper_id)
        if not forum:
            raise EngineError(
                "OpenReview looks papers up by forum id (e.g. 'YicbFdNTTy'); "
                f"{paper_id!r} is not one."
            )
        note = self._note(forum)
        if note.get("forum") and note.get("forum") != note.get("id"):
            note = self._note(str(note["forum"]))
        record = _record(note)
        if record is None:
            raise PaperNotFoundAtSource(f"OpenReview's note {forum} is not a paper.")
        return record

    # --- calls ---------------------------------------------------------------------------

    def _note(self, note_id: str) -> dict[str, Any]:
        missing = f"OpenReview has no public note {note_id}."
        try:
            data = self._get("/notes", {"id": note_id}, not_found=missing)
        except EngineError as exc:
            if exc.http_status == 403:  # a note guests may not read
                raise PaperNotFoundAtSource(missing, http_status=403) from None
            raise
        notes = _notes(data)
        if not notes:
            raise PaperNotFoundAtSource(missing)
        return notes[0]

    def _get(self, path: str, params: dict[str, Any], *, not_found: str = "") -> dict[str, Any]:
        try:
            data = http.get_json(
                settings.OPENREVIEW_API_URL.rstrip("/") + path,
                params=params,
                engine_name=self.name,
                timeout=self.timeout,
                connect_timeout=self.connect_timeout,
                not_found=not_found,
            )
        except BadKey as exc:
            # We send no credentials, so a 401/403 refuses this request, not a key: the
            # engine must not be reported as holding a bad key (and skipped from then on).
            raise EngineError(exc.message, http_status=exc.http_status) from None
        if not isinstance(data, dict):
            raise EngineError("OpenReview answered with JSON that is not an object.")
        if data.get("searchUnavailable"):
            raise TransientEngineError("OpenReview says its search is unavailable right now.")
        return data


def _venues_and_text(request: SearchRequest) -> tuple[list[str], str]:
    """The venue ids asked for (categories, else one named in the query) and the words."""
    venues = []
    for category in request.categories:
        match = _VENUE_ID.fullmatch(category.strip())
        if not match:
            raise UnsupportedOperation(
                f"OpenReview filters by venue id (e.g. ICLR.cc/2024/Conference); "
                f"{category!r} is not one."
            )
        venues.append(match.group(1))
    text = request.query
    if not venues:
        found = _VENUE_ID.search(text)
        if found:
            venues.append(found.group(1))
            text = text[: found.start()] + text[found.end() :]
    return list(dict.fromkeys(venues)), " ".join(text.split())


def _notes(data: dict[str, Any]) -> list[dict[str, Any]]:
    notes = data.get("notes")
    if not isinstance(notes, list):
        raise EngineError("OpenReview answered without a list of notes.")
    return [note for note in notes if isinstance(note, dict)]


# --- parsing -------------------------------------------------------------------------------


def _records(notes: list[dict[str, Any]]) -> list[PaperRecord]:
    """Records of the papers among `notes` (replies are skipped); one unusable note is
    logged and skipped, not fatal."""
    papers = [  # a review, comment or decision replies to its forum: not a paper
        note
        for note in notes
        if not (note.get("forum") and note.get("id") and note["forum"] != note["id"])
    ]
    return records_of(papers, _record, source="OpenReview")


def _value(content: dict[str, Any], name: str) -> Any:
    """A content field of an API 2 note ({"value": x}) or of an API 1 note (x)."""
    raw = content.get(name)
    if isinstance(raw, dict) and "value" in raw:
        return raw["value"]
    return raw


def _text(content: dict[str, Any], name: str) -> str:
    value = _value(content, name)
    return str(value).strip() if isinstance(value, (str, int, float)) else ""


def _strings(content: dict[str, Any], name: str) -> list[str]:
    value = _value(content, name)
    if isinstance(value, str):
        value = [part for part in re.split(r"[,;]", value)]
    if not isinstance(value, list):
        return []
    return [str(item).strip() for item in value if isinstance(item, str) and item.strip()]


def decision_of(venue: str, venueid: str) -> str:
    """What OpenReview says became of a submission, from its venue id and venue text:
    'withdrawn', 'desk_rejected', 'rejected', 'under_review', 'accepted', or '' when the
    note says nothing (API 1 notes of older venues carry neither field)."""
    for suffix, decision in _STATUS_SUFFIXES:
        if venueid.endswith(suffix):
            return decision
    lowered = venue.lower()
    if "withdrawn" in lowered:
        return "withdrawn"
    if "desk reject" in lowered:
        return "desk_rejected"
    if "reject" in lowered:
        return "rejected"
    if lowered.startswith("submitted to") or "under review" in lowered:
        return "under_review"
    if venueid or _ACCEPTED_WORDS.search(venue):
        # An accepted paper's venueid is the venue itself ('ICLR.cc/2024/Conference').
        return "accepted"
    return ""


def _year(note: dict[str, Any], venue: str, venueid: str) -> tuple[int | None, str]:
    """(year, publication date): the venue's year where the venue names one (an ICLR 2024
    paper was created in 2023), else the publication, online or creation date."""
    date = ""
    for field in ("pdate", "odate", "cdate", "tcdate"):
        stamp = note.get(field)
        if isinstance(stamp, (int, float)) and stamp > 0:
            date = datetime.fromtimestamp(stamp / 1000, tz=UTC).date().isoformat()
            break
    for text in (venueid, venue):
        match = _YEAR.search(text)
        if match:
            return int(match.group(1)), date if date.startswith(match.group(1)) else ""
    return (int(date[:4]) if date else None), date


def _entry_type(decision: str, venueid: str) -> str:
    if decision != "accepted":
        return "misc"
    if "/Conference" in venueid or "/Workshop" in venueid:
        return "inproceedings"
    if venueid and "/" not in venueid:  # a journal such as TMLR
        return "article"
    return "misc"


def _record(note: dict[str, Any]) -> PaperRecord | None:
    """A PaperRecord from a submission note; None when it has no title."""
    content = note.get("content")
    if not isinstance(content, dict):
        return None
    title = _text(content, "title")
    forum = str(note.get("forum") or note.get("id") or "")
    if not title or not forum:
        return None
    venue, venueid = _text(content, "venue"), _text(content, "venueid")
    decision = decision_of(venue, venueid)
    year, date = _year(note, venue, venueid)
    authorids = _strings(content, "authorids")
    authors = []
    for index, name in enumerate(_strings(content, "authors")):
        profile = authorids[index] if index < len(authorids) else ""
        link = f"{SITE}/profile?id={profile}" if profile.startswith("~") else ""
        authors.append({"name": name, "profile_link": link})
    presentation = _PRESENTATION.search(venue) if decision == "accepted" else None
    invitations = note.get("invitations") or [note.get("invitation")]
    metadata = {
        "decision": decision,
        "presentation": presentation.group(1).lower() if presentation else "",
        "venueid": venueid,
        # The venue text of a paper not accepted ('Submitted to ICLR 2024') is no venue.
        "openreview_venue": venue if decision != "accepted" else "",
        "primary_area": _text(content, "primary_area"),
        "invitation": next((str(i) for i in invitations if i), ""),
        "number": note.get("number") if isinstance(note.get("number"), int) else None,
        "license": note.get("license") if isinstance(note.get("license"), str) else "",
    }
    try:
        return PaperRecord.build(
            title=title,
            authors=authors,
            year=year,
            publication_date=date,
            abstract=_text(content, "abstract"),
            venue=venue if decision == "accepted" else "",
            entry_type=_entry_type(decision, venueid),
            keywords=_strings(content, "keywords"),
            categories=[f"decision:{decision}"] if decision else [],
            doi=_text(content, "doi") or None,
            identifiers={"openreview": forum},
            source="openreview",
            source_id=forum,
            source_url=f"{SITE}/forum?id={forum}",
            pdf_url=f"{SITE}/pdf?id={forum}" if _value(content, "pdf") else "",
            metadata={key: value for key, value in metadata.items() if value},
        )
    except InvalidInput as exc:
        raise EngineError(f"OpenReview's note {forum} is unusable: {exc.message}") from None
