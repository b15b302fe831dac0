"""Reading BibTeX into PaperRecords (see the package docstring)."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import bibtexparser
from bibtexparser.library import Library
from bibtexparser.middlewares.names import (
    InvalidNameError,
    parse_single_name_into_parts,
    split_multiple_persons_names,
)
from bibtexparser.model import (
    DuplicateBlockKeyBlock,
    DuplicateFieldKeyBlock,
    Entry,
    ParsingFailedBlock,
    String,
)

from core.errors import DomainError, InvalidInput
from papers.bibtex.fields import (
    BOOKTITLE_TYPES,
    DEFAULT_PUBLISHER_FIELDS,
    DUPLICATE_KEY,
    ISO_DATE,
    KEY_KEY,
    MONTHS,
    PREDEFINED_MACROS,
    PUBLISHER_FIELDS,
    TRUNCATION_MARKERS,
    TYPE_KEY,
    VERBATIM_FIELDS,
    Warn,
)
from papers.bibtex.latex import (
    latex_to_text,
)
from papers.identifiers import (
    citekey_base,
    clean_text,
    normalize_arxiv_id,
    normalize_doi,
    normalize_openreview_id,
    normalize_pmcid,
    normalize_pmid,
    page_range,
    title_key,
)
from papers.imports import RawItem
from papers.schemas import PaperRecord, keyword_clean, parse_year

# --- reading ----------------------------------------------------------------------------


def read_bibtex(source: Path | str, *, on_warning: Warn | None = None) -> Iterator[RawItem]:
    """The entries of a BibTeX file (a Path) or of BibTeX text (a str), as RawItems.

    Each location is "entry <key> (line N)". Blocks that do not parse are errors. A key used
    twice: if the second entry is the same paper (same DOI, or same title and year) it is
    passed on and merges into the first; otherwise it is passed on flagged, so it becomes a
    separate paper with a generated citekey (the key stays with the first entry, as in
    BibTeX). Both cases, repeated fields and undefined macros are reported to `on_warning`.
    Raises OSError / UnicodeDecodeError for an unreadable file.
    """
    text = source.read_text(encoding="utf-8-sig") if isinstance(source, Path) else source
    return iter(_items(text, on_warning or (lambda location, message: None)))


def _items(text: str, warn: Warn) -> list[RawItem]:
    try:
        library = bibtexparser.parse_string(text, parse_stack=[])  # split only; we evaluate
    except Exception as error:  # a splitter bug must not take the import down with it
        return [RawItem("the file", error=f"bibtexparser could not split it: {error}")]
    macros = _macros(library, warn)
    items: list[RawItem] = []
    first_by_key: dict[str, dict[str, Any]] = {}
    for block in library.blocks:
        if isinstance(block, Entry):
            entry, flagged = block, False
        elif isinstance(block, DuplicateBlockKeyBlock) and isinstance(
            block.ignore_error_block, Entry
        ):
            entry, flagged = block.ignore_error_block, True
        elif isinstance(block, DuplicateFieldKeyBlock) and isinstance(
            block.ignore_error_block, Entry
        ):
            entry, flagged = block.ignore_error_block, False
        elif isinstance(block, ParsingFailedBlock) and not isinstance(
            block, DuplicateBlockKeyBlock
        ):
            items.append(RawItem(_failed_location(block), error=_failure_reason(block)))
            continue
        else:
            continue  # @string (done above), @preamble, @comment, text between entries
        location = _location(entry.key, entry.start_line)
        try:
            data = _entry_data(entry, macros, location, warn)
        except BadValue as error:
            items.append(RawItem(location, error=f"not valid BibTeX: {error}"))
            continue
        if flagged:
            first = first_by_key.get(entry.key)
            if first is not None and _same_paper(first, data):
                warn(location, f"key {entry.key!r} repeats an earlier entry; merged into it")
            else:
                data[DUPLICATE_KEY] = True
                warn(
                    location,
                    f"key {entry.key!r} is already used by an earlier entry; imported as a "
                    "separate paper with a generated citekey",
                )
        else:
            first_by_key.setdefault(entry.key, data)
        items.append(RawItem(location, data=data))
    return items


def _location(key: str, start_line: int | None) -> str:
    # bibtexparser counts lines from 0.
    return f"entry {key} (line {(start_line or 0) + 1})"


def _failed_location(block: ParsingFailedBlock) -> str:
    # Only to name the entry in the message: the text between '{' and the first ','.
    head = (block.raw or "").split(",", 1)[0]
    key = "".join((head.partition("{")[2] or head.partition("(")[2]).split()[:1])
    line = (block.start_line or 0) + 1
    return f"entry {key} (line {line})" if key and len(key) < 100 else f"entry at line {line}"


def _failure_reason(block: ParsingFailedBlock) -> str:
    reason = getattr(block.error, "abort_reason", None) or str(block.error)
    return f"not valid BibTeX: {clean_text(reason)}"


def _macros(library: Library, warn: Warn) -> dict[str, str]:
    """@string macros by lower-case name, evaluated in file order (later ones may use
    earlier ones); a redefinition replaces the earlier value."""
    macros = dict(PREDEFINED_MACROS)
    for block in library.blocks:
        string = block.ignore_error_block if isinstance(block, DuplicateBlockKeyBlock) else block
        if not isinstance(string, String):
            continue
        location = f"@string {string.key} (line {(string.start_line or 0) + 1})"
        if string.key.lower() in macros and string.key.lower() not in PREDEFINED_MACROS:
            warn(location, "redefines an earlier @string; the new value is used")
        try:
            macros[string.key.lower()] = _evaluate(string.value, macros, location, warn)
        except BadValue as error:
            warn(location, f"ignored: {error}")
    return macros


def _entry_data(
    entry: Entry, macros: Mapping[str, str], location: str, warn: Warn
) -> dict[str, Any]:
    """Field values evaluated, names in lower case; BadValue for a value that is not closed."""
    data: dict[str, Any] = {TYPE_KEY: entry.entry_type.lower(), KEY_KEY: entry.key}
    for field in entry.fields:
        name = field.key.lower()
        if name in data:
            warn(location, f"field {name!r} appears twice; the first value is kept")
            continue
        data[name] = _evaluate(str(field.value), macros, location, warn, name)
    return data


class BadValue(ValueError):
    pass


_MACRO_NAME = re.compile(r"[A-Za-z_][\w\-:.+/]*")


def _evaluate(
    raw: str, macros: Mapping[str, str], location: str, warn: Warn, name: str = "value"
) -> str:
    """A field value with its delimiters removed, `#` pieces joined and macros expanded."""
    parts = []
    for piece in _concatenated_pieces(raw):
        if piece[:1] in ("{", '"'):
            if not _closed_at_end(piece):
                raise BadValue(f"field {name!r} is not closed where it should be "
                               "(a missing comma, brace or quote?)")  # fmt: skip
            parts.append(piece[1:-1])
        elif piece.isdigit():
            parts.append(piece)
        elif piece.lower() in macros:
            parts.append(macros[piece.lower()])
        elif _MACRO_NAME.fullmatch(piece):
            warn(location, f"undefined macro {piece!r} in field {name!r} kept as text")
            parts.append(piece)
        elif piece or raw.strip():
            raise BadValue(f"field {name!r} has an unreadable value {piece[:40]!r}")
    return "".join(parts)


def _closed_at_end(piece: str) -> bool:
    """Whether the brace or quote opening `piece` is closed by its last character."""
    depth = 0
    for index, char in enumerate(piece):
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0 and piece[0] == "{":
                return index == len(piece) - 1
        elif char == '"' and index > 0 and depth == 0 and piece[0] == '"':
            return index == len(piece) - 1
    return False


def _concatenated_pieces(raw: str) -> list[str]:
    """Split `"a" # name # {b}` at the `#` signs outside braces and quotes."""
    pieces, start, depth, quoted = [], 0, 0, False
    for index, char in enumerate(raw):
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
        elif char == '"' and depth == 0:
            quoted = not quoted
        elif char == "#" and depth == 0 and not quoted:
            pieces.append(raw[start:index].strip())
            start = index + 1
    pieces.append(raw[start:].strip())
    return pieces


def _same_paper(first: Mapping[str, Any], second: Mapping[str, Any]) -> bool:
    doi_a, doi_b = normalize_doi(first.get("doi")), normalize_doi(second.get("doi"))
    if doi_a and doi_b:
        return doi_a == doi_b
    try:
        titles = [title_key(latex_to_text(d.get("title", ""))) for d in (first, second)]
    except InvalidInput:
        return False
    return titles[0] == titles[1] and first.get("year") == second.get("year")


# --- one entry to a PaperRecord ---------------------------------------------------------


def record_from_bibtex(entry: Mapping[str, Any]) -> PaperRecord:
    """Map one entry (a mapping of lower-case field names to evaluated values, plus
    "ENTRYTYPE" and "ID", as `read_bibtex` yields) to a PaperRecord.

    Raises InvalidInput for an entry that cannot be a paper (no title, a name BibTeX
    cannot parse, undecodable LaTeX).
    """
    fields = {
        k: str(v).strip() for k, v in entry.items() if k not in (TYPE_KEY, KEY_KEY, DUPLICATE_KEY)
    }
    key = str(entry.get(KEY_KEY) or "").strip()
    entry_type = str(entry.get(TYPE_KEY) or "misc").lower()
    take = fields.pop
    metadata: dict[str, Any] = {}

    authors, truncated = _author_names(take("author", ""))
    if truncated:
        metadata["authors_truncated"] = True
    year, publication_date, leftovers = _dates(
        take("year", ""), take("date", ""), take("month", "")
    )
    fields.update(leftovers)

    # biblatex calls the journal `journaltitle`; the field the entry type expects comes first.
    venue_fields: tuple[str, ...] = ("journal", "journaltitle", "booktitle")
    if entry_type in BOOKTITLE_TYPES:
        venue_fields = ("booktitle", *venue_fields)
    venue = next((latex_to_text(take(name)) for name in venue_fields if fields.get(name)), "")
    publisher_fields = PUBLISHER_FIELDS.get(entry_type, DEFAULT_PUBLISHER_FIELDS)
    publisher = next(
        (latex_to_text(take(name)) for name in publisher_fields if fields.get(name)), ""
    )

    url = take("url", "")
    doi = _verbatim(take("doi", "")).replace("\\_", "_") or (url if normalize_doi(url) else "")
    arxiv_id = _arxiv_id(fields, venue, url)
    identifiers = _external_ids(fields, url)
    keywords, rejected = _keywords(take("keywords", ""))
    if rejected:
        fields["keywords"] = rejected

    values: dict[str, Any] = {
        "title": latex_to_text(take("title", "")),
        "authors": authors,
        "year": year,
        "publication_date": publication_date,
        "entry_type": entry_type,
        "venue": venue,
        "volume": latex_to_text(take("volume", "")),
        "number": latex_to_text(take("number", "")),
        # '265--283' is kept as written; decoding made it '265–283' on the way.
        "pages": page_range(latex_to_text(take("pages", "")).replace("–", "--").replace("—", "--")),
        "publisher": publisher,
        "doi": doi or None,
        "arxiv_id": arxiv_id,
        "source_url": _verbatim(url),
        "abstract": latex_to_text(take("abstract", "")),
        "keywords": keywords,
        "identifiers": identifiers,
        "source": "bibtex",
    }
    extras = {
        name: _verbatim(value) if name in VERBATIM_FIELDS else latex_to_text(value)
        for name, value in fields.items()
        if value
    }
    if extras:
        metadata["bibtex"] = extras
    if key and entry.get(DUPLICATE_KEY):
        # The key belongs to the first entry that used it; this paper keeps it only as a note.
        metadata["bibtex_duplicate_key"] = key
    elif key:
        # The paper gets a Better-BibTeX citekey like every other paper (the library's
        # keys follow one scheme); the file's own key stays a citekey alias, so every
        # tool and a second import of the same file still find the paper by it. A key
        # that already is this paper's Better-BibTeX key is kept as its citekey.
        values["identifiers"] = {**identifiers, "citekey": key}
        record = PaperRecord.build(**values, metadata=metadata)
        people = [author.person for author in record.authors]
        if key == citekey_base(people, record.year, record.title):
            return PaperRecord.build(**values, preferred_citekey=key, metadata=metadata)
        return record
    return PaperRecord.build(**values, metadata=metadata)


def _verbatim(value: str) -> str:
    return clean_text(value.replace("{", "").replace("}", ""))


def _author_names(raw: str) -> tuple[list[dict[str, str]], bool]:
    """Authors in order as {name ('Martín Abadi'), family, given}, with BibTeX's own split
    of the name (so 'Ramón y Cajal, Santiago' keeps its family name), and whether the list
    ended in 'others'."""
    names: list[dict[str, str]] = []
    truncated = False
    if not raw.strip():
        return names, truncated
    for person in split_multiple_persons_names(raw):
        if clean_text(person).lower() in TRUNCATION_MARKERS:
            truncated = True
            continue
        person = clean_text(person)
        try:
            parts = parse_single_name_into_parts(person)
        except InvalidNameError:
            # BibTeX itself reads 'Cajal, Santiago,' (a stray comma) leniently; so do we.
            try:
                parts = parse_single_name_into_parts(person, strict=False)
            except InvalidNameError as error:
                raise InvalidInput(f"Author {person!r}: {error.reason}", field="author") from None
        words = [*parts.first, *parts.von, *parts.last, *parts.jr]
        name = latex_to_text(" ".join(words))
        if name:
            family = latex_to_text(" ".join([*parts.von, *parts.last, *parts.jr]))
            given = latex_to_text(" ".join(parts.first))
            names.append({"name": name, "family": family, "given": given})
    return names, truncated


def _month_number(value: str) -> int | None:
    text = clean_text(value).lower().rstrip(".")
    if text.isdigit():
        return int(text) if 1 <= int(text) <= 12 else None
    return MONTHS.index(text[:3]) + 1 if text[:3] in MONTHS else None


_YEAR_WITH_LETTER = re.compile(r"^\d{4}[a-z]$")


def _dates(year_raw: str, date_raw: str, month_raw: str) -> tuple[int | None, str, dict[str, str]]:
    """(year, 'YYYY[-MM[-DD]]', fields kept as they were because they did not parse)."""
    leftovers: dict[str, str] = {}
    # biblatex dates may be ranges ('2020-05/2020-06'); the start is the publication date.
    date_match = ISO_DATE.match(_verbatim(date_raw).split("/")[0]) if date_raw else None
    if date_raw and not date_match:
        leftovers["date"] = date_raw
    year_text = _verbatim(year_raw)
    if _YEAR_WITH_LETTER.match(year_text):
        # '2023a': the letter tells apart two papers of one author and year.
        year_text, leftovers["year"] = year_text[:4], year_text
    try:
        year = parse_year(year_text or (date_match.group(1) if date_match else None))
    except InvalidInput:
        year, leftovers["year"] = None, year_raw  # 'in press', 'forthcoming'
    month = _month_number(month_raw) if month_raw else None
    if month_raw and month is None:
        leftovers["month"] = month_raw
    if date_match and (year is None or int(date_match.group(1)) == year):
        return year, date_match.group(0), leftovers
    if year is None:
        return None, "", leftovers
    return year, f"{year}-{month:02d}" if month else str(year), leftovers


_ARXIV_IN_TEXT = re.compile(
    r"arxiv(?:\s+preprint)?\s*(?:arxiv)?\s*[:\s]\s*(\d{4}\.\d{4,5}|[a-z\-]+(?:\.[A-Z]{2})?/\d{7})",
    re.IGNORECASE,
)


def _arxiv_id(fields: dict[str, str], venue: str, url: str) -> str | None:
    """The arXiv id from eprint (eprinttype/archiveprefix arXiv), an arxiv.org URL, or
    the 'arXiv preprint arXiv:1607.06450' that Google Scholar puts in `journal`."""
    eprint_type = (fields.get("eprinttype") or fields.get("archiveprefix") or "").lower()
    eprint = _verbatim(fields.get("eprint", ""))
    if eprint and eprint_type in ("arxiv", "") and normalize_arxiv_id(eprint):
        for name in ("eprint", "eprinttype", "archiveprefix"):
            fields.pop(name, None)
        return normalize_arxiv_id(eprint)
    if normalize_arxiv_id(url):
        return normalize_arxiv_id(url)
    for text in (venue, fields.get("note", ""), fields.get("howpublished", "")):
        match = _ARXIV_IN_TEXT.search(text)
        if match and normalize_arxiv_id(match.group(1)):
            return normalize_arxiv_id(match.group(1))
    return None


def _external_ids(fields: dict[str, str], url: str) -> dict[str, str]:
    """PubMed, PubMed Central and OpenReview ids: the `pmid` and `pmcid` fields (JabRef,
    PubMed's own exports), biblatex's `eprint` with `eprinttype = {pubmed}`, and a PubMed,
    PMC or OpenReview URL in `url`. A field read is taken out of the extras; one that is
    not an id stays there as written."""
    found: dict[str, str] = {}
    for scheme, name, normalize in (
        ("pmid", "pmid", normalize_pmid),
        ("pmcid", "pmcid", normalize_pmcid),
        ("openreview", "openreview", normalize_openreview_id),
    ):
        value = normalize(_verbatim(fields.get(name, "")))
        if value:
            found[scheme] = value
            fields.pop(name)
    eprint_type = (fields.get("eprinttype") or fields.get("archiveprefix") or "").lower()
    if eprint_type == "pubmed" and "pmid" not in found:
        value = normalize_pmid(_verbatim(fields.get("eprint", "")))
        if value:
            found["pmid"] = value
            for name in ("eprint", "eprinttype", "archiveprefix"):
                fields.pop(name, None)
    link = _verbatim(url)
    for scheme, value in (
        ("pmid", normalize_pmid(link) if link and not link.isdigit() else None),
        ("pmcid", normalize_pmcid(link)),
        ("openreview", normalize_openreview_id(link, bare=False)),
    ):
        if value:
            found.setdefault(scheme, value)
    return found


def _keywords(raw: str) -> tuple[list[str], str]:
    """Keywords split on ',' or ';', and the raw field if some could not be kept."""
    keywords, rejected = [], False
    for part in re.split(r"[,;]", latex_to_text(raw)):
        if not part.strip():
            continue
        try:
            keywords.append(keyword_clean(part))
        except DomainError:
            rejected = True
    return keywords, raw if rejected else ""
