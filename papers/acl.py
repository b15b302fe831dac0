"""The ACL Anthology: its identifiers, the addresses they imply, and how a record of the
Anthology corpus (`import_jsonl`'s ACL format) maps onto a paper.

Anthology ids come in two shapes: the current one, `<year>.<venue>-<volume>.<number>`
(`2020.acl-main.1`, `2022.lrec-1.123`, `1952.earlymt-1.1`), and the one used until 2019,
`<letter><yy>-<volume><number>` (`P18-1001`, `W19-5301`). Every paper's page is
`https://aclanthology.org/<id>/` and its PDF `https://aclanthology.org/<id>.pdf`, so the
PDF address of a record that names its Anthology id never has to be asked for.

The corpus gives a journal's volume and issue inside its venue line ("Computational
Linguistics, Volume 50, Issue 1 - March 2024"), page ranges with a hyphen or an en dash,
and author names with footnote marks ("Baosong Yang*", "Yuki Arase†"). `acl_values` splits
the venue into journal, volume, issue and month (the line is kept under
`metadata["acl_venue"]`), stores page ranges one way (`page_range`) and drops the marks.
"""

from __future__ import annotations

import re
from typing import Any

from papers.identifiers import page_range

ANTHOLOGY = "https://aclanthology.org"
ACL_HOST = "aclanthology.org"
_NEW_ID = r"\d{4}\.[a-z][a-z0-9]*(?:-[a-z0-9]+)*\.\d{1,4}"
_OLD_ID = r"[A-Z]\d{2}-\d{4}"
_ID = re.compile(rf"^(?:{_NEW_ID}|{_OLD_ID})$")
_URL = re.compile(
    rf"^(?:https?://)?(?:www\.)?aclanthology\.org/({_NEW_ID}|{_OLD_ID})(?:\.pdf|\.bib|/)?$",
    re.IGNORECASE,
)


def anthology_id(text: str) -> str | None:
    """The Anthology id in `text` (an id, `acl:<id>`, or an aclanthology.org page, PDF or
    BibTeX address); None when it holds none."""
    value = text.strip()
    if value.lower().startswith("acl:"):
        value = value[4:].strip()
    if _ID.match(value):
        return value
    match = _URL.match(value)
    if match:
        found = match.group(1)
        # The host is case-insensitive, the id is not: new ids are lower case, old upper.
        return found.lower() if found[0].isdigit() else found.upper()
    return None


def anthology_pdf_url(paper_id: str) -> str:
    """The PDF address of an Anthology paper ('' for something that is not an id)."""
    return f"{ANTHOLOGY}/{paper_id}.pdf" if _ID.match(paper_id) else ""


def anthology_page_url(paper_id: str) -> str:
    return f"{ANTHOLOGY}/{paper_id}/" if _ID.match(paper_id) else ""


# The Anthology glues some external addresses onto its own
# ("https://aclanthology.org/http://www.lrec-conf.org/proceedings/...pdf"): 4,638 records
# of the 2024-08 dump, LREC's PDFs, doi.org and Springer pages.
_GLUED_URL = re.compile(r"^https?://(?:www\.)?aclanthology\.org/+(https?:/+.+)$", re.IGNORECASE)
# "Computational Linguistics, Volume 50, Issue 1 - March 2024", "Transactions of the
# Association for Computational Linguistics, Volume 11", "..., Volume 7, Number 3-4, ...",
# "Traitement Automatique des Langues, Volume 59, Numéro 1 : Varia".
_JOURNAL = re.compile(
    r"^(?P<name>.+?)[,.]?\s+Volume\s+(?P<volume>\d+)"
    r"(?:\s*,\s*(?:Numbers?|Issue|Numéro)\s*(?P<number>\d+(?:\s*-\s*\d+)?))?(?P<rest>.*)$",
    re.IGNORECASE,
)
# Proceedings name volumes too ("COLING 1980 Volume 1: ... Conference ...").
_NOT_JOURNAL = re.compile(r"\b(?:Proceedings|Conference|Workshop|Meeting|Symposium)\b", re.I)
_FORMERLY = re.compile(r"[,.]?\s+Formerly\b.*$", re.IGNORECASE)
_MONTHS = (
    "january", "february", "march", "april", "may", "june", "july", "august", "september",
    "october", "november", "december",
)  # fmt: skip
_MONTH = re.compile(r"^[\s,\-–]*(?P<month>[A-Za-z]+)\s+(?P<year>\d{4})\b")
# Footnote marks the Anthology leaves on names (equal contribution, corresponding author).
_NAME_MARKS = re.compile(r"[*†‡§¶⁎∗]+|[¹²³⁴⁵⁶⁷⁸⁹⁰]+")


def repaired_url(url: str) -> str | None:
    """The external address glued onto the Anthology's in a malformed corpus URL, with
    its `//` restored; None when `url` is not one of those."""
    match = _GLUED_URL.match(url.strip())
    if not match:
        return None
    return re.sub(r"^(https?):/+", r"\1://", match.group(1), flags=re.IGNORECASE)


def journal_parts(venue: str) -> dict[str, str] | None:
    """A journal venue line split: `venue` (the journal's name), `volume`, `number` (the
    issue, when given) and `month` ('03', when a single month is named); None for a
    venue that is not a journal's volume (proceedings)."""
    match = _JOURNAL.match(venue.strip())
    if not match or _NOT_JOURNAL.search(venue):
        return None
    name = _FORMERLY.sub("", match.group("name")).strip(" ,.")
    parts = {"venue": name, "volume": match.group("volume")}
    if match.group("number"):
        parts["number"] = re.sub(r"\s+", "", match.group("number"))
    month = _MONTH.match(match.group("rest"))
    if month and month.group("month").lower() in _MONTHS:
        parts["month"] = f"{_MONTHS.index(month.group('month').lower()) + 1:02d}"
    return parts


def author_name_clean(name: str) -> str:
    """The name without footnote marks: 'Baosong Yang*' -> 'Baosong Yang'."""
    return " ".join(_NAME_MARKS.sub(" ", name).split())


def acl_values(values: dict[str, Any], *, derive_pdf: bool = True) -> dict[str, Any]:
    """PaperRecord.build arguments from one corpus record (`values`, without its `url`,
    which the caller reads): the Anthology id and bibkey as identifiers, the venue's short
    name, the PDF address (unless `derive_pdf` is false), the type, the journal's volume,
    issue and month split out of the venue line, pages stored as `page_range` gives them,
    names without footnote marks. The corpus's `collection` and `year_source` go to
    metadata."""
    values = dict(values)
    identifiers = dict(values.pop("identifiers", None) or {})
    metadata = dict(values.pop("metadata", None) or {})
    anthology = values.pop("id", None)
    if anthology:
        identifiers["acl"] = str(anthology)
    bibkey = values.pop("bibkey", None)
    if bibkey:
        identifiers["citekey"] = str(bibkey)
    venue_ids = values.pop("venue_ids", None) or []
    values["venue_short"] = venue_ids[0] if venue_ids else ""
    values.setdefault("source_id", str(anthology or ""))
    if anthology and derive_pdf and not values.get("pdf_url"):  # the corpus leaves it out
        values["pdf_url"] = anthology_pdf_url(str(anthology))
    venue = str(values.get("venue") or "")
    values["entry_type"] = "inproceedings" if "proceedings" in venue.lower() else "article"
    journal = journal_parts(venue) if values["entry_type"] == "article" else None
    if journal:
        metadata["acl_venue"] = venue
        values["venue"] = journal["venue"]
        values["volume"] = values.get("volume") or journal["volume"]
        values["number"] = values.get("number") or journal.get("number", "")
        if journal.get("month") and values.get("year") and not values.get("publication_date"):
            values["publication_date"] = f"{values['year']}-{journal['month']}"
    if isinstance(values.get("pages"), str):
        values["pages"] = page_range(values["pages"])
    if isinstance(values.get("authors"), list):
        values["authors"] = [
            author_name_clean(a) if isinstance(a, str) else a for a in values["authors"]
        ]
    for name in ("collection", "year_source"):
        if values.get(name) is not None:
            metadata[name] = values.pop(name)
        else:
            values.pop(name, None)
    values["identifiers"] = identifiers
    values["metadata"] = metadata
    return values
