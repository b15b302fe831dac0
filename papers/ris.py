"""Writing papers as RIS, the tagged format EndNote, Zotero, Mendeley and most reference
managers import (one `TAG  - value` line per field, `ER  - ` closing each record).
"""

from __future__ import annotations

from collections.abc import Iterable

from papers.models import Paper
from papers.retractions import retraction_note

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
    url = paper.source_url or (f"https://arxiv.org/abs/{paper.arxiv_id}" if paper.arxiv_id else "")
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
