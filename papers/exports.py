"""Exporting papers as BibTeX, CSV, JSON, JSON Lines, Markdown, RIS, CSL-JSON or a formatted
bibliography (any CSL style, papers/citations), inline or to a file.

Files are written only into `settings.EXPORTS_DIR` (read at call time), under a name the
caller may choose from a safe alphabet, and atomically: a temporary file in the same
folder, fsync, then `os.replace`, so a reader never sees half a file and a failure leaves
no file behind. An existing file is never replaced unless the caller says `overwrite`: the
export takes the next free numbered name (`refs-2.bib`).

`export_search_results` is what interfaces call (MCP `export_search_results`, REST): a
list of papers, a whole project, or both, returned inline up to EXPORT_INLINE_MAX_BYTES
and written to a file beyond that (or when a file name is given).
"""

from __future__ import annotations

import copy
import csv
import io
import json
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

from django.conf import settings

from core.atomic import write_atomic
from core.errors import InvalidInput
from papers.bibtex import render_bibtex
from papers.citations.csl import render_bibliography, render_csl_json
from papers.models import Paper
from papers.ris import render_ris
from papers.selectors import EXPORTED_SCHEMES, paper_identifiers, paper_record, papers_filter

EXTENSIONS = {
    "bibtex": "bib", "csv": "csv", "json": "json", "jsonl": "jsonl", "markdown": "md", "ris": "ris",
    "csl-json": "json", "bibliography": "txt",
}  # fmt: skip
# Formats that take a citation style (and locale): the others refuse one.
STYLED_FORMATS = ("bibliography",)
FORMATS = tuple(EXTENSIONS)
MAX_FILENAME_LENGTH = 100
# Names Windows refuses whatever the extension; refused everywhere so exports can be shared.
RESERVED_NAMES = {
    "con", "prn", "aux", "nul",
    *(f"com{n}" for n in range(1, 10)),
    *(f"lpt{n}" for n in range(1, 10)),
}  # fmt: skip
CSV_COLUMNS = (
    "paper_id", "id", "citekey", "title", "authors", "year", "venue", "entry_type", "volume",
    "number", "pages", "publisher", "doi", "arxiv_id", "pmid", "pmcid", "openreview", "url",
    "pdf_url", "keywords",
    "citation_count", "abstract",
)  # fmt: skip


@dataclass(frozen=True)
class ExportResult:
    path: Path
    filename: str
    count: int
    format: str


def export_papers(
    *,
    papers: Iterable[Paper],
    fmt: str,
    filename: str | None = None,
    overwrite: bool = False,
    content: str | None = None,
    style: str | None = None,
    locale: str | None = None,
    progress: Callable[[int], None] | None = None,
    abstracts: bool = True,
) -> ExportResult:
    """Write papers (relations prefetched, e.g. from `selectors.papers_filter`) to a file
    in EXPORTS_DIR and say where. `content`: the export already rendered (render_export);
    `style`/`locale`: the CSL style and locale of a bibliography (render_export);
    `progress` is told of each paper rendered and `abstracts=False` leaves abstracts out
    (render_export).

    `filename` is a name without folders, of letters, digits, '-', '_', '.' and spaces;
    the extension of the format is added (a name that already ends in it is kept as is).
    An existing file is never replaced: the export takes '<name>-2', '-3', ... unless
    `overwrite` is true, which replaces a file of that name atomically. Without a name,
    `export-<UTC time>` is used, numbered the same way.

    Raises InvalidInput for an unknown format, an unsafe file name or no papers; StorageFull
    when the disk is full, OSError if the folder cannot be written (nothing is left behind).
    """
    fmt = _check_format(fmt)
    papers = list(papers)
    if content is None:
        text = render_export(
            papers, fmt, style=style, locale=locale, progress=progress, abstracts=abstracts
        )
    else:
        text = content
    folder = Path(settings.EXPORTS_DIR)
    folder.mkdir(parents=True, exist_ok=True)
    extension = EXTENSIONS[fmt]
    if filename is None:
        path = _unused_path(folder, f"export-{datetime.now(UTC):%Y%m%d-%H%M%S}", extension)
    else:
        name = safe_filename(filename)
        if name.lower().endswith(f".{extension}"):
            name = name[: -len(extension) - 1]
        path = (
            folder / f"{name}.{extension}" if overwrite else _unused_path(folder, name, extension)
        )
    if path.resolve().parent != folder.resolve():  # defence in depth; names have no folders
        raise InvalidInput("The export must stay in the exports folder.", field="filename")
    write_atomic(path, text.encode("utf-8"))
    return ExportResult(path=path, filename=path.name, count=len(papers), format=fmt)


def export_search_results(
    *,
    fmt: str,
    refs: Sequence[str | int] | None = None,
    project: str | None = None,
    filename: str | None = None,
    overwrite: bool = False,
    inline_max_bytes: int | None = None,
    scope: Sequence[str] | None = None,
    write: bool = True,
    style: str | None = None,
    locale: str | None = None,
    abstracts: bool = True,
) -> dict[str, Any]:
    """Export papers named by reference (any paper id form), a whole project (id or name;
    no need to list its papers), or the listed papers that are in the project.

    Without `filename`, an export of at most `inline_max_bytes` (UTF-8; default the
    EXPORT_INLINE_MAX_BYTES setting, 0: always a file) is returned inline (`content`) and
    no file is written; a larger one is written to EXPORTS_DIR under a dated default name.
    With `filename` the file is always written (never over an existing one unless
    `overwrite`: `refs-2.bib` instead), and its content is inline too when small.
    With `write=False` (a read-only server) nothing is ever written: the export comes back
    inline or not at all, and `filename` is refused. `abstracts=False` leaves abstracts out.

    Returns {success, format, count, size (bytes), content (inline only), path (written
    only: relative to the knowledge base), filename (written only)}. Raises InvalidInput
    (neither refs nor project, bad format or file name, empty selection), NotFound
    (unknown papers or project, or outside the scope), StorageFull.
    """
    fmt = _check_format(fmt)
    if not refs and not project:
        raise InvalidInput(
            "Give paper_ids, a project_id (to export the whole project), or both.",
            field="paper_ids",
        )
    if not write and filename is not None:
        raise InvalidInput(
            "This server is read-only: exports come back inline only; omit filename.",
            field="filename",
        )
    papers = list(papers_filter(refs=refs or None, project=project or None, scope=scope))
    content = render_export(papers, fmt, style=style, locale=locale, abstracts=abstracts)
    size = len(content.encode("utf-8"))
    limit = settings.EXPORT_INLINE_MAX_BYTES if inline_max_bytes is None else inline_max_bytes
    inline = size <= limit
    if not write and not inline:
        raise InvalidInput(
            f"This server is read-only: exports come back inline only, up to {limit} bytes "
            f"(this one has {size}); export fewer papers.",
            field="paper_ids",
        )
    result: dict[str, Any] = {"success": True, "format": fmt, "count": len(papers), "size": size}
    if inline:
        result["content"] = content
    if filename is not None or not inline:
        written = export_papers(
            papers=papers, fmt=fmt, filename=filename, overwrite=overwrite, content=content
        )
        result["path"] = _shown_path(written.path)
        result["filename"] = written.filename
    return result


def _shown_path(path: Path) -> str:
    """A written file's path relative to the knowledge base (clients never see the server's
    own folders)."""
    try:
        return str(path.relative_to(settings.RESEARCH_DIRECTORY))
    except ValueError:
        return str(Path(path.parent.name) / path.name)


def render_export(
    papers: Iterable[Paper],
    fmt: str,
    *,
    style: str | None = None,
    locale: str | None = None,
    progress: Callable[[int], None] | None = None,
    abstracts: bool = True,
) -> str:
    """The export as text, for interfaces that return it inline (MCP, REST, --stdout).
    `style` (a CSL style id, default apa) and `locale` (default: the style's) apply to the
    `bibliography` format only. `progress(1)` is called as each paper is rendered (a
    command's progress bar). `abstracts=False` leaves abstracts out, in every format (they
    are most of a BibTeX export: 66 % of its bytes for 500 ACL papers with abstracts).

    Raises InvalidInput for an unknown format, an empty selection, a style or locale given
    for another format, or an unknown style or locale.
    """
    fmt = _check_format(fmt)
    if (style or locale) and fmt not in STYLED_FORMATS:
        raise InvalidInput(
            f"A citation style or locale applies to the {', '.join(STYLED_FORMATS)} format "
            f"only, not {fmt}.",
            field="style",
        )
    papers = list(papers)
    if not papers:
        raise InvalidInput("No papers to export: the selection is empty.", field="papers")
    if not abstracts:
        papers = [_without_abstract(paper) for paper in papers]
    if progress is not None:
        papers = _Counting(papers, progress)
    if fmt == "bibliography":
        return render_bibliography(papers, style=style, locale=locale)
    return RENDERERS[fmt](papers)


def _without_abstract(paper: Paper) -> Paper:
    """A copy of the paper, for rendering only, with no abstract (nor abstract alternates)."""
    shown = copy.copy(paper)
    shown.abstract = ""
    alternates = paper.metadata.get("alternates")
    if isinstance(alternates, dict) and "abstract" in alternates:
        others = {k: v for k, v in alternates.items() if k != "abstract"}
        shown.metadata = {**paper.metadata, "alternates": others}
    return shown


class _Counting(list[Paper]):
    """The papers, telling `progress` of each one a renderer has taken and done with (at
    most once each, should a renderer read the list twice)."""

    def __init__(self, papers: list[Paper], progress: Callable[[int], None]) -> None:
        super().__init__(papers)
        self.progress = progress
        self.left = len(papers)

    def __iter__(self) -> Iterator[Paper]:
        for paper in super().__iter__():
            yield paper
            if self.left:
                self.left -= 1
                self.progress(1)


def _check_format(fmt: str) -> str:
    name = (fmt or "").strip().lower()
    if name not in EXTENSIONS:
        raise InvalidInput(
            f"Unknown export format {fmt!r}; use one of {', '.join(FORMATS)}.", field="format"
        )
    return name


def safe_filename(raw: str) -> str:
    """The name as given if it is a plain, portable file name; InvalidInput otherwise."""
    name = unicodedata.normalize("NFC", raw or "")
    problem = None
    if not name.strip():
        problem = "is empty"
    elif len(name) > MAX_FILENAME_LENGTH:
        problem = f"is longer than {MAX_FILENAME_LENGTH} characters"
    elif any(unicodedata.category(c)[0] == "C" for c in name):
        problem = "contains control characters"
    elif "/" in name or "\\" in name or ".." in name:
        problem = "must be a plain name, without folders or '..'"
    elif name.startswith(".") or name.startswith(" ") or name.endswith((".", " ")):
        problem = "cannot start with a dot or start or end with a dot or a space"
    elif not all(c.isalnum() or c in "-_. " for c in name):
        problem = "may only hold letters, digits, '-', '_', '.' and spaces"
    elif name.split(".")[0].strip().lower() in RESERVED_NAMES:
        problem = "is a name reserved by Windows"
    if problem:
        raise InvalidInput(f"File name {raw!r} {problem}.", field="filename")
    return name


def _unused_path(folder: Path, stem: str, extension: str) -> Path:
    """`<stem>.<ext>`, or the first of `<stem>-2.<ext>`, `-3`, ... that does not exist."""
    path, number = folder / f"{stem}.{extension}", 1
    while path.exists():
        number += 1
        path = folder / f"{stem}-{number}.{extension}"
    return path


# --- formats ----------------------------------------------------------------------------


def _authors(paper: Paper) -> list[str]:
    return [link.author.name for link in paper.author_links.all()]


def _keywords(paper: Paper) -> list[str]:
    return sorted(k.name for k in paper.keywords.all())


def _render_json(papers: list[Paper]) -> str:
    return json.dumps([paper_record(p) for p in papers], ensure_ascii=False, indent=2) + "\n"


def _render_jsonl(papers: list[Paper]) -> str:
    # One paper_record per line: `import_jsonl` reads this back (citekeys are kept).
    return "".join(json.dumps(paper_record(p), ensure_ascii=False) + "\n" for p in papers)


def spreadsheet_safe(value: str) -> str:
    """`value` as a CSV cell no spreadsheet runs as a formula. A cell starting with = + - @
    (or a tab or carriage return) is run as a formula by Excel/LibreOffice (CSV injection);
    titles, abstracts and quotes come from outside sources, so such cells get a leading
    quote, as OWASP advises."""
    return f"'{value}" if value[:1] in ("=", "+", "-", "@", "\t", "\r") else value


def _render_csv(papers: list[Paper]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(CSV_COLUMNS)
    for paper in papers:
        ids = paper_identifiers(paper)
        row = {
            "paper_id": paper.pk,
            "id": paper.human_id,
            "citekey": paper.citekey,
            "title": paper.title,
            "authors": "; ".join(_authors(paper)),
            "year": paper.year or "",
            "venue": paper.venue.name if paper.venue else "",
            "entry_type": paper.entry_type,
            "volume": paper.volume,
            "number": paper.number,
            "pages": paper.pages,
            "publisher": paper.publisher,
            "doi": paper.doi or "",
            "arxiv_id": paper.arxiv_id or "",
            **{scheme: ids.get(scheme, "") for scheme in EXPORTED_SCHEMES},
            "url": paper.source_url,
            "pdf_url": paper.pdf_url,
            "keywords": "; ".join(_keywords(paper)),
            "citation_count": paper.citation_count,
            "abstract": paper.abstract,
        }
        writer.writerow([spreadsheet_safe(v) if isinstance(v, str) else v for v in row.values()])
    return buffer.getvalue()


_MARKDOWN_SPECIAL = str.maketrans({c: f"\\{c}" for c in "\\`*_[]<>|#"})


def _md(text: str) -> str:
    # One line (a newline in a title could start a heading or a list), markup escaped.
    return " ".join(text.split()).translate(_MARKDOWN_SPECIAL)


def _web_url(url: str) -> str | None:
    """The URL if it is an http(s) address fit for an autolink, else None: a
    `javascript:` or `data:` source_url from an import must not become a link."""
    text = (url or "").strip()
    if not text or any(c in text for c in ' <>"\n\r\t') or len(text) > 2000:
        return None
    try:
        parts = urlsplit(text)
    except ValueError:
        return None
    return text if parts.scheme.lower() in ("http", "https") and parts.netloc else None


def _render_markdown(papers: list[Paper]) -> str:
    lines = [f"# Papers ({len(papers)})", ""]
    for number, paper in enumerate(papers, start=1):
        authors = _authors(paper)
        if len(authors) > 10:
            authors = [*authors[:10], "et al."]
        line = f"{number}. **{_md(paper.title)}**"
        if authors:
            line += f"  \n   {_md(', '.join(authors))}"
        details = [str(paper.year) if paper.year else "", paper.venue.name if paper.venue else ""]
        details = [_md(d) for d in details if d]
        if details:
            line += f" ({', '.join(details)})" if authors else f"  \n   {', '.join(details)}"
        links = [f"`{paper.citekey.replace('`', '')}`"]
        if paper.doi:
            links.append(f"[doi:{_md(paper.doi)}](https://doi.org/{quote(paper.doi, safe='/:;.')})")
        if paper.arxiv_id:
            links.append(f"[arXiv:{paper.arxiv_id}](https://arxiv.org/abs/{paper.arxiv_id})")
        ids = paper_identifiers(paper)
        if "pmid" in ids:
            links.append(f"[PMID:{ids['pmid']}](https://pubmed.ncbi.nlm.nih.gov/{ids['pmid']}/)")
        if "pmcid" in ids:
            links.append(f"[{ids['pmcid']}](https://pmc.ncbi.nlm.nih.gov/articles/{ids['pmcid']}/)")
        if not paper.arxiv_id and (url := _web_url(paper.source_url)):
            links.append(f"<{url}>")
        keywords = _keywords(paper)
        if keywords:
            links.append("keywords: " + _md(", ".join(keywords)))
        line += "  \n   " + " · ".join(links)
        lines.extend([line, ""])
    return "\n".join(lines)


RENDERERS: dict[str, Callable[[list[Paper]], str]] = {
    "bibtex": render_bibtex,
    "csv": _render_csv,
    "json": _render_json,
    "jsonl": _render_jsonl,
    "markdown": _render_markdown,
    "ris": render_ris,
    "csl-json": render_csl_json,
}
