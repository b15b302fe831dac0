"""Writing papers as BibTeX that compiles and reads back the same."""

from __future__ import annotations

import re
from collections.abc import Iterable

import bibtexparser
from bibtexparser.library import Library
from bibtexparser.model import (
    Entry,
    Field,
)
from bibtexparser.writer import BibtexFormat

from papers.bibtex.fields import (
    BOOKTITLE_TYPES,
    DEFAULT_PUBLISHER_FIELDS,
    ISO_DATE,
    PUBLISHER_FIELDS,
    VERBATIM_FIELDS,
)
from papers.bibtex.latex import (
    _balanced,
    latex_escape,
    protect_title,
)
from papers.identifiers import NAME_SUFFIXES, clean_text, page_range
from papers.models import Paper
from papers.retractions import retraction_note
from papers.selectors import paper_identifiers


def bibtex_name(family: str, given: str) -> str:
    """'Abadi, Martín'; 'Smith, Jr., John'; a part that BibTeX would misread is braced."""

    def part(text: str) -> str:
        escaped = latex_escape(text)
        risky = "," in text or re.search(r"\band\b", text, re.IGNORECASE)
        return f"{{{escaped}}}" if risky else escaped

    family, given = clean_text(family), clean_text(given)
    words = family.split()
    if not given:
        # One word is a family name as it is; several with no given name (a corporate
        # author) must stay together.
        return part(family) if len(words) == 1 else f"{{{latex_escape(family)}}}"
    if len(words) > 1 and words[-1].lower() in NAME_SUFFIXES:
        return f"{part(' '.join(words[:-1]))}, {words[-1]}, {part(given)}"
    return f"{part(family)}, {part(given)}"


def _verbatim_value(value: str) -> str:
    # URLs and DOIs are verbatim in biblatex: written as they are, braces only if balanced.
    value = clean_text(value)
    return value if _balanced(value) else value.replace("{", "").replace("}", "")


def _venue_field(entry_type: str) -> str:
    return "booktitle" if entry_type in BOOKTITLE_TYPES else "journal"


# Crossref/CSL work types that engines may store, as the BibTeX type a style understands.
WORK_TYPES = {
    "journal-article": "article",
    "proceedings-article": "inproceedings",
    "paper-conference": "inproceedings",
    "book-chapter": "incollection",
    "chapter": "incollection",
    "edited-book": "book",
    "monograph": "book",
    "dissertation": "phdthesis",
    "posted-content": "misc",
    "preprint": "misc",
}


def bibtex_type(entry_type: str) -> str:
    """The entry type as written: BibTeX/biblatex types as they are, work types mapped."""
    name = (entry_type or "").lower()
    name = WORK_TYPES.get(name, name)
    return name if re.fullmatch(r"[a-z]+", name) else "misc"


def bibtex_entry(paper: Paper) -> Entry:
    """One paper as a bibtexparser Entry (values escaped, not yet enclosed in braces)."""
    fields: dict[str, str] = {}
    links = list(paper.author_links.all())
    if links:
        names = [bibtex_name(link.author.family_name, link.author.given_name) for link in links]
        if paper.metadata.get("authors_truncated"):
            names.append("others")
        fields["author"] = " and ".join(names)
    fields["title"] = protect_title(paper.title)
    extras = paper.metadata.get("bibtex")
    extras = extras if isinstance(extras, dict) else {}
    if paper.venue:
        fields[_venue_field(paper.entry_type)] = latex_escape(paper.venue.name)
    if paper.year:
        fields["year"] = str(paper.year)
        if str(extras.get("year", "")).startswith(fields["year"]):
            fields["year"] = _verbatim_value(str(extras["year"]))  # '2023a', as the file had it
    date = ISO_DATE.match(paper.publication_date or "")
    if date and date.group(2) and paper.year and int(date.group(1)) == paper.year:
        fields["month"] = str(int(date.group(2)))
        if date.group(3):
            fields["date"] = date.group(0)
    for name in ("volume", "number"):
        if getattr(paper, name):
            fields[name] = latex_escape(getattr(paper, name))
    if paper.pages:
        # A range is '--' in BibTeX, whichever dash the source used.
        fields["pages"] = latex_escape(page_range(paper.pages)).replace("-{}-", "--")
    if paper.publisher:
        candidates = PUBLISHER_FIELDS.get(paper.entry_type, DEFAULT_PUBLISHER_FIELDS)
        name = next((n for n in candidates if n not in extras), "publisher")
        fields[name] = latex_escape(paper.publisher)
    if paper.doi:
        fields["doi"] = _verbatim_value(paper.doi)
    ids = paper_identifiers(paper)
    if paper.source_url:
        fields["url"] = _verbatim_value(paper.source_url)
    elif "openreview" in ids:
        fields["url"] = f"https://openreview.net/forum?id={ids['openreview']}"
    if paper.arxiv_id:
        fields["eprint"] = paper.arxiv_id
        fields["archiveprefix"] = "arXiv"
    for name in ("pmid", "pmcid"):  # JabRef's and PubMed's fields; read back by the reader
        if name in ids:
            fields[name] = ids[name]
    if paper.abstract:
        fields["abstract"] = latex_escape(paper.abstract)
    keywords = sorted(k.name for k in paper.keywords.all())
    if keywords:
        fields["keywords"] = ", ".join(latex_escape(k) for k in keywords)
    note = retraction_note(paper)
    if note:  # 'Retracted: <notice DOI>' first, before any note the paper came with
        kept = str(extras.get("note") or extras.get("NOTE") or "")
        fields["note"] = latex_escape(f"{note}. {kept}" if kept else note)
    for name, value in extras.items():
        name = str(name).lower()
        if name in fields or not re.fullmatch(r"[a-z][a-z0-9_\-]*", name) or value in ("", None):
            continue
        text = str(value)
        fields[name] = _verbatim_value(text) if name in VERBATIM_FIELDS else latex_escape(text)
    return Entry(
        entry_type=bibtex_type(paper.entry_type),
        key=paper.citekey,
        fields=[Field(name, value) for name, value in fields.items()],
    )


def render_bibtex(papers: Iterable[Paper]) -> str:
    """BibTeX for papers whose relations are prefetched (`selectors.with_relations`)."""
    library = Library([bibtex_entry(paper) for paper in papers])
    style = BibtexFormat()
    style.indent = "  "
    style.block_separator = "\n"
    return bibtexparser.write_string(library, bibtex_format=style)
