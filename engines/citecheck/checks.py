"""What is said about a resolved citation besides its existence: does the reference
entry describe the paper it resolved to, and do the sources say it was retracted or
corrected."""

from __future__ import annotations

from typing import Any

from engines.citecheck.parse import AUTHOR_YEAR, Cite, Reference
from engines.citecheck.resolve import Work, titles_match
from papers.identifiers import fold_key
from papers.retractions import RETRACTED, WITHDRAWN, update_status

# A withdrawal flags a cited work as retracted (papers/retractions.py keeps it apart).
CITE_FLAGS = {WITHDRAWN: RETRACTED}
RETRACTED_TITLE_PREFIXES = ("retracted", "retraction:", "withdrawn:")
# At least this share of the entry's authors must be the paper's authors.
AUTHOR_OVERLAP = 0.5


def metadata_mismatches(cite: Cite, reference: Reference | None, work: Work) -> list[str]:
    """The fields ('authors', 'year', 'title') in which the reference entry, or an
    author-year marker, disagrees with the paper it resolved to; [] when they agree."""
    mismatches: list[str] = []
    families = [family for family in work.families if family]
    if reference is not None:
        cited = [fold_key(name) for name in reference.authors if fold_key(name)]
        if cited and families:
            first_ok = cited[0] in families[:1] or _close_name(cited[0], families[0])
            overlap = sum(1 for name in cited if name in families) / len(cited)
            if not first_ok or (len(cited) > 1 and overlap < AUTHOR_OVERLAP):
                mismatches.append("authors")
        if reference.year[:4].isdigit() and work.year and int(reference.year[:4]) != work.year:
            mismatches.append("year")
        if reference.title and work.title and not titles_match(reference.title, work.title):
            mismatches.append("title")
    if cite.kind == AUTHOR_YEAR:
        family = fold_key(cite.author.split()[-1]) if cite.author else ""
        if families and family and not _close_name(family, families[0]):
            if "authors" not in mismatches:
                mismatches.append("authors")
        if cite.year[:4].isdigit() and work.year and int(cite.year[:4]) != work.year:
            if "year" not in mismatches:
                mismatches.append("year")
    return mismatches


def _close_name(a: str, b: str) -> bool:
    """'vaswani' and 'vaswani' or 'de vries' and 'vries': one ends with the other."""
    return bool(a and b) and (a == b or a.endswith(" " + b) or b.endswith(" " + a))


def update_flags(work: Work) -> list[dict[str, Any]]:
    """Retractions, corrections and expressions of concern the sources record: Crossref's
    `updated-by` (engines/crossref.py keeps it as `updated_by`; for a library paper cited
    by DOI, asked again in the check's fan-out), the notices the library's retraction watch
    stored on the paper (`Paper.retraction_notices` / `retraction_status`, so a retraction
    found by the watch is reported offline too), an OpenAlex `is_retracted`, or a title that
    says so. A notice known to several of them is given once."""
    flags: list[dict[str, Any]] = []

    def add(status: str, notice_doi: object, date: object, source: object) -> None:
        flag = CITE_FLAGS.get(status, status)
        if not flag:
            return
        for known in flags:
            # The same notice (or, without a DOI, the same kind of notice) is there already.
            if known["flag"] == flag and (not notice_doi or known.get("notice_doi") == notice_doi):
                return
        entry = {"flag": flag, "notice_doi": notice_doi, "date": date, "source": source}
        flags.append({key: value for key, value in entry.items() if value})

    for update in work.metadata.get("updated_by") or []:
        add(update_status(update.get("type")), update.get("doi"), update.get("date"),
            update.get("source"))  # fmt: skip
    for notice in work.retraction_notices:
        add(update_status(notice.get("type")), notice.get("doi"), notice.get("date"),
            notice.get("reported_by") or notice.get("source"))  # fmt: skip
    if work.retraction_status:
        add(work.retraction_status, None, None, "library")
    if work.metadata.get("is_retracted") is True:
        add(RETRACTED, None, None, "openalex")
    if work.title.lower().startswith(RETRACTED_TITLE_PREFIXES) and not flags:
        flags.append({"flag": "retracted", "source": "title"})
    return flags
