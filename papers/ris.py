"""RIS, the tagged format EndNote, Zotero, Mendeley, PubMed's citation managers, Scopus and
most databases export (one `TAG  - value` line per field, `ER  - ` closing each record):
writing papers as RIS, and reading RIS files into records (`manage.py import_ris`).

Identifiers (the rule, for reading and writing):
- `DO` is the DOI; an arxiv.org `UR` gives the arXiv id.
- `AN` (accession number) is a PMID only when the record says its database is PubMed or
  MEDLINE (`DB` or `DP` naming PubMed, MEDLINE or the NLM), or when it is written
  'PMID: 123'. A bare number alone is not enough: CINAHL, ProQuest, Embase and Web of
  Science put their own accession numbers there, digits too. Otherwise AN is kept as it
  was (metadata.ris.AN).
- `C2` is a PMCID when it is one ('PMC6739224'); Scopus puts the PMID in C2, so a number
  there is a PMID when `DB`/`DP` names Scopus.
- a PubMed, PMC or OpenReview URL in `UR`, and a note `N1`/`C1` reading 'PMID: 123', give
  those ids too.
Written: `AN` with the PMID and `DB  - PubMed` (so the accession number says whose it is),
`C2` with the PMCID, and an OpenReview forum URL as `UR` when the paper has no other.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from papers.identifiers import (
    clean_text,
    is_valid_citekey,
    normalize_arxiv_id,
    normalize_doi,
    normalize_openreview_id,
    normalize_pmcid,
    normalize_pmid,
    page_range,
)
from papers.imports import RawItem
from papers.models import Paper
from papers.retractions import retraction_note
from papers.schemas import PaperRecord
from papers.selectors import paper_identifiers

# BibTeX entry types (as stored on Paper.entry_type) -> RIS reference types.
RIS_TYPES = {
    "article": "JOUR",
    "inproceedings": "CPAPER",
    "conference": "CPAPER",
    "proceedings": "CONF",
    "book": "BOOK",
    "inbook": "CHAP",
    "incollection": "CHAP",
    "phdthesis": "THES",
    "mastersthesis": "THES",
    "thesis": "THES",
    "techreport": "RPRT",
    "report": "RPRT",
    "unpublished": "UNPB",
    "online": "ELEC",
}
LINE_END = "\r\n"  # the RIS specification's line ending; importers accept it everywhere


def _line(tag: str, value: object) -> str:
    # A value is one line: newlines inside it would start a bogus tag.
    return f"{tag}  - {' '.join(str(value).split())}{LINE_END}"


def _pages(pages: str) -> tuple[str, str]:
    start, _, end = pages.replace("--", "-").replace("–", "-").partition("-")
    return start.strip(), end.strip()


def _record(paper: Paper) -> str:
    lines = [_line("TY", RIS_TYPES.get((paper.entry_type or "").lower(), "GEN"))]
    for link in paper.author_links.all():
        author = link.author
        name = f"{author.family_name}, {author.given_name}" if author.family_name else author.name
        lines.append(_line("AU", name.strip(", ")))
    lines.append(_line("TI", paper.title))
    if paper.year:
        lines.append(_line("PY", paper.year))
    if paper.publication_date:
        lines.append(_line("DA", paper.publication_date.replace("-", "/")))
    if paper.venue:
        lines.append(_line("T2", paper.venue.name))
    optional = {"VL": paper.volume, "IS": paper.number, "PB": paper.publisher}
    lines += [_line(tag, value) for tag, value in optional.items() if value]
    if paper.pages:
        start, end = _pages(paper.pages)
        lines += [_line("SP", start)] + ([_line("EP", end)] if end else [])
    if paper.doi:
        lines.append(_line("DO", paper.doi))
    ids = paper_identifiers(paper)
    if "pmid" in ids:
        lines += [_line("AN", ids["pmid"]), _line("DB", "PubMed")]
    if "pmcid" in ids:
        lines.append(_line("C2", ids["pmcid"]))
    url = paper.source_url or (f"https://arxiv.org/abs/{paper.arxiv_id}" if paper.arxiv_id else "")
    if not url and "openreview" in ids:
        url = f"https://openreview.net/forum?id={ids['openreview']}"
    if url:
        lines.append(_line("UR", url))
    if paper.pdf_url:
        lines.append(_line("L1", paper.pdf_url))
    if paper.abstract:
        lines.append(_line("AB", paper.abstract))
    lines += [_line("KW", k.name) for k in sorted(paper.keywords.all(), key=lambda k: k.name)]
    note = retraction_note(paper)
    if note:
        lines.append(_line("N1", note))
    lines.append(_line("ID", paper.citekey))
    lines.append(f"ER  - {LINE_END}")
    return "".join(lines)


def render_ris(papers: Iterable[Paper]) -> str:
    """The papers (relations prefetched, e.g. from `selectors.papers_filter`) as RIS
    records, separated by a blank line."""
    return LINE_END.join(_record(paper) for paper in papers)


# --- reading ----------------------------------------------------------------------------

_TAG_LINE = re.compile(r"^([A-Z][A-Z0-9])\s{1,2}-(?: (.*)|\s*)$")
# RIS reference types -> the BibTeX entry types papers are stored with.
ENTRY_TYPES = {
    **{ris: entry for entry, ris in reversed(RIS_TYPES.items())},
    "EJOUR": "article", "MGZN": "article", "NEWS": "article", "ABST": "article",
    "INPR": "article", "JFULL": "article", "CHAP": "incollection", "ECHAP": "incollection",
    "EBOOK": "book", "EDBOOK": "book", "GEN": "misc",
}  # fmt: skip
_PUBMED_DATABASES = re.compile(r"pubmed|medline|\bnlm\b", re.IGNORECASE)
_PMID_NOTE = re.compile(r"^\s*PMID:?\s*(\d{1,9})\s*$", re.IGNORECASE)
_DATE = re.compile(r"^(\d{4})(?:[/-](\d{1,2})(?:[/-](\d{1,2}))?)?")
# Tags mapped to paper fields; every other tag is kept under metadata["ris"].
_MAPPED = {
    "TY", "TI", "T1", "AU", "A1", "PY", "Y1", "DA", "T2", "JF", "JO", "JA", "J2", "VL", "IS",
    "SP", "EP", "PB", "DO", "UR", "L1", "AB", "N2", "KW", "ID", "ER",
}  # fmt: skip


def read_ris(source: Path | str) -> Iterator[RawItem]:
    """The records of a RIS file (a Path) or RIS text (a str), as RawItems whose data maps
    each tag to its values in order ("record N (line L)"). A line without a tag continues
    the value before it; text outside a record is skipped; a record the file ends inside
    is kept. Raises OSError / UnicodeDecodeError for an unreadable file."""
    text = source.read_text(encoding="utf-8-sig") if isinstance(source, Path) else source
    return iter(_ris_items(text.lstrip("\ufeff")))


def _ris_items(text: str) -> list[RawItem]:
    items: list[RawItem] = []
    current: dict[str, list[str]] | None = None
    start = 0
    last_tag = ""
    for number, line in enumerate(text.splitlines(), start=1):
        match = _TAG_LINE.match(line)
        if match is None:
            if current is not None and last_tag and line.strip():
                current[last_tag][-1] = f"{current[last_tag][-1]} {line.strip()}".strip()
            continue
        tag, value = match.group(1), (match.group(2) or "").strip()
        if tag == "TY":
            if current is not None:  # no ER before the next TY: the record still counts
                items.append(RawItem(f"record {len(items) + 1} (line {start})", data=current))
            current, start = {}, number
        if current is None:
            continue
        if tag == "ER":
            items.append(RawItem(f"record {len(items) + 1} (line {start})", data=current))
            current, last_tag = None, ""
            continue
        current.setdefault(tag, []).append(value)
        last_tag = tag
    if current is not None:
        items.append(RawItem(f"record {len(items) + 1} (line {start})", data=current))
    return items


def record_from_ris(data: dict[str, list[str]]) -> PaperRecord:
    """One RIS record (tag -> values, as `read_ris` yields) as a PaperRecord; the
    identifier rule is in the module docstring. Raises InvalidInput (no title)."""

    def first(*tags: str) -> str:
        return next((clean_text(v) for t in tags for v in data.get(t, []) if clean_text(v)), "")

    def every(*tags: str) -> list[str]:
        return [clean_text(v) for t in tags for v in data.get(t, []) if clean_text(v)]

    year_text = first("PY", "Y1", "DA")
    date = _DATE.match(first("DA", "PY", "Y1"))
    publication_date = ""
    if date and date.group(1) == year_text[:4]:
        parts = [date.group(1), *(f"{int(p):02d}" for p in date.groups()[1:] if p)]
        publication_date = "-".join(parts)
    start, end = first("SP"), first("EP")
    pages = page_range(start if "-" in start or not end else f"{start}--{end}")
    urls = every("UR")
    database = " ".join(every("DB", "DP"))
    identifiers = _ris_identifiers(data, urls, database)
    key = first("ID")
    if key and is_valid_citekey(key) and not key.isdigit():
        identifiers["citekey"] = key
    arxiv_id = next((normalize_arxiv_id(u) for u in urls if normalize_arxiv_id(u)), None)
    extras: dict[str, Any] = {
        tag: values[0] if len(values) == 1 else values
        for tag, values in data.items()
        if tag not in _MAPPED and any(values)
    }
    return PaperRecord.build(
        title=first("TI", "T1"),
        authors=list(dict.fromkeys(every("AU", "A1"))),
        year=year_text[:4] if re.match(r"^\d{4}", year_text) else None,
        publication_date=publication_date,
        entry_type=ENTRY_TYPES.get(first("TY").upper(), "misc"),
        venue=first("T2", "JF", "JO", "JA", "J2"),
        volume=first("VL"),
        number=first("IS"),
        pages=pages,
        publisher=first("PB"),
        doi=first("DO") or next((u for u in urls if normalize_doi(u)), None),
        arxiv_id=arxiv_id,
        source_url=urls[0] if urls else "",
        pdf_url=first("L1") if first("L1").startswith(("http://", "https://")) else "",
        abstract=first("AB", "N2"),
        keywords=[k for value in every("KW") for k in re.split(r"\s*;\s*", value) if k],
        identifiers=identifiers,
        source="ris",
        metadata={"ris": extras} if extras else {},
    )


def _ris_identifiers(data: dict[str, list[str]], urls: list[str], database: str) -> dict[str, str]:
    found: dict[str, str] = {}
    pubmed = bool(_PUBMED_DATABASES.search(database))
    scopus = "scopus" in database.lower()
    for value in data.get("AN", []):
        text = clean_text(value)
        note = _PMID_NOTE.match(text)
        pmid = normalize_pmid(note.group(1) if note else text) if (pubmed or note) else None
        if pmid:
            found.setdefault("pmid", pmid)
    for value in data.get("C2", []):
        text = clean_text(value)
        if pmcid := normalize_pmcid(text):
            found.setdefault("pmcid", pmcid)
        elif scopus and (pmid := normalize_pmid(text)):
            found.setdefault("pmid", pmid)
    for value in [*data.get("N1", []), *data.get("C1", [])]:
        if note := _PMID_NOTE.match(clean_text(value)):
            found.setdefault("pmid", note.group(1))
    for url in urls:
        for scheme, named in (
            ("pmid", None if url.isdigit() else normalize_pmid(url)),
            ("pmcid", normalize_pmcid(url)),
            ("openreview", normalize_openreview_id(url, bare=False)),
        ):
            if named:
                found.setdefault(scheme, named)
    return found
