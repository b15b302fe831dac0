"""The normalised input record every source (JSONL, BibTeX, engines, agents) is turned into."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import asdict, dataclass, field
from functools import cache
from typing import Any

from django.db import models

from core.errors import InvalidInput
from papers.identifiers import (
    PersonName,
    clean_text,
    fold_key,
    normalize_arxiv_id,
    normalize_doi,
    normalize_identifier,
    parse_person_name,
    title_key,
)

KEYWORD_MAX_LENGTH = 100
_YEAR = re.compile(r"^\s*(\d{4})(?:[-/.]\d{1,2}(?:[-/.]\d{1,2})?)?\s*$")
MIN_YEAR, MAX_YEAR = 1000, 2999

# Google Scholar's handles (docs/ENGINES.md), copied onto the paper as they are.
SCHOLAR_FIELDS = (
    "cites_id",
    "result_id",
    "citation_id",
    "bibtex_link",
    "cached_page_link",
    "related_pages_link",
    "versions_link",
)


@dataclass
class AuthorRecord:
    """An author as a source gives it. `family`/`given` are set when the source splits the
    name itself (BibTeX: 'Ramón y Cajal, Santiago'); otherwise the name is parsed."""

    name: str
    affiliation: str = ""
    profile_link: str = ""
    family: str = ""
    given: str = ""

    @property
    def person(self) -> PersonName:
        if self.family:
            return PersonName(self.given, self.family)
        return parse_person_name(self.name)

    @property
    def key(self) -> str:
        return self.person.key


@dataclass
class PaperRecord:
    """One paper as a source describes it, already cleaned and normalised.

    Build it with `PaperRecord.build(...)`, which validates; the upsert service trusts it.
    """

    title: str
    authors: list[AuthorRecord] = field(default_factory=list)
    year: int | None = None
    publication_date: str = ""
    abstract: str = ""
    snippet: str = ""
    venue: str = ""
    venue_short: str = ""
    entry_type: str = "article"
    volume: str = ""
    number: str = ""
    pages: str = ""
    publisher: str = ""
    publication_info: str = ""
    doi: str | None = None
    arxiv_id: str | None = None
    source: str = "local"
    source_id: str = ""
    source_url: str = ""
    pdf_url: str = ""
    citation_count: int = 0
    versions_count: int = 0
    scholar: dict[str, str] = field(default_factory=dict)
    keywords: list[str] = field(default_factory=list)
    categories: list[str] = field(default_factory=list)
    identifiers: dict[str, str] = field(default_factory=dict)
    preferred_citekey: str = ""
    resources: list[Any] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)

    # Derived once in __post_init__: de-duplication reads them several times per record.
    title_key: str = field(init=False, default="")
    first_author_family: str = field(init=False, default="")

    def __post_init__(self) -> None:
        self.title_key = title_key(self.title)
        for author in self.authors:
            family = author.person.family
            if family:
                self.first_author_family = fold_key(family)
                break

    @classmethod
    def build(cls, **values: Any) -> PaperRecord:
        """Clean and validate raw values; raises InvalidInput naming the bad field."""
        title = clean_text(values.pop("title", ""))
        if not title:
            raise InvalidInput("A paper needs a title.", field="title")
        authors = [_author(a) for a in values.pop("authors", None) or []]
        authors = [a for a in authors if a.name]
        year = parse_year(values.pop("year", None))
        metadata = dict(values.pop("metadata", None) or {})
        raw_doi = values.pop("doi", None)
        doi = normalize_doi(raw_doi)
        if raw_doi and not doi:
            metadata["unparsed_doi"] = clean_text(raw_doi)
        raw_arxiv = values.pop("arxiv_id", None)
        arxiv_id = normalize_arxiv_id(raw_arxiv)
        if raw_arxiv and not arxiv_id:
            metadata["unparsed_arxiv_id"] = clean_text(raw_arxiv)
        keywords = keywords_clean(values.pop("keywords", None) or [])
        categories = [c for c in (clean_text(c) for c in values.pop("categories", None) or []) if c]
        identifiers: dict[str, str] = {}
        for raw_scheme, raw_value in (values.pop("identifiers", None) or {}).items():
            scheme = clean_text(raw_scheme).lower()
            value = normalize_identifier(scheme, raw_value) if scheme else None
            if value:
                identifiers[scheme] = value
            elif scheme and clean_text(raw_value):  # kept, never dropped, but not matched on
                metadata.setdefault("unparsed_identifiers", {})[scheme] = clean_text(raw_value)
        scholar = {k: clean_text(values.pop(k, "")) for k in SCHOLAR_FIELDS}
        text_fields = {
            name: clean_text(values.pop(name, ""))
            for name in (
                "publication_date", "abstract", "snippet", "venue", "venue_short", "volume",
                "number", "pages", "publisher", "publication_info", "source_id", "source_url",
                "pdf_url", "preferred_citekey",
            )
        }  # fmt: skip
        entry_type = clean_text(values.pop("entry_type", "")).lower() or "article"
        source = clean_text(values.pop("source", "")).lower() or "local"
        fitted = _fit_to_columns(
            {**text_fields, **scholar, "entry_type": entry_type, "source": source}, metadata
        )
        text_fields = {name: fitted[name] for name in text_fields}
        scholar = {name: fitted[name] for name in scholar}
        entry_type, source = fitted["entry_type"], fitted["source"]
        citation_count = _non_negative_int(values.pop("citation_count", 0), "citation_count")
        versions_count = _non_negative_int(values.pop("versions_count", 0), "versions_count")
        resources = list(values.pop("resources", None) or [])
        if values:
            # Unknown fields are kept, never dropped: merging must not lose information.
            metadata.setdefault("extra", {}).update(values)
        return cls(
            title=title,
            authors=authors,
            year=year,
            doi=doi,
            arxiv_id=arxiv_id,
            keywords=keywords,
            categories=categories,
            identifiers=identifiers,
            scholar={k: v for k, v in scholar.items() if v},
            entry_type=entry_type,
            source=source,
            resources=resources,
            metadata=metadata,
            citation_count=citation_count,
            versions_count=versions_count,
            **text_fields,  # type: ignore[arg-type]
        )


def record_as_dict(record: PaperRecord) -> dict[str, Any]:
    """The record as JSON-safe build arguments (for Celery and caches):
    `PaperRecord.build(**record_as_dict(record))` gives the same record back."""
    values = asdict(record)
    values.pop("title_key")
    values.pop("first_author_family")
    values.update(values.pop("scholar"))
    return values


@cache
def _column_limits() -> dict[str, int]:
    from papers.models import Paper, Venue

    limits = {
        f.name: f.max_length
        for f in Paper._meta.concrete_fields
        if isinstance(f, models.CharField) and f.max_length
    }
    limits["venue_short"] = Venue._meta.get_field("short_name").max_length or 64
    return limits


def _fit_to_columns(values: dict[str, str], metadata: dict[str, Any]) -> dict[str, str]:
    """Cut values that are longer than their column (PostgreSQL refuses them; SQLite does
    not check), keeping each full value under metadata["overflow"] so nothing is lost."""
    limits = _column_limits()
    fitted = {}
    for name, value in values.items():
        limit = limits.get(name)
        if limit and len(value) > limit:
            metadata.setdefault("overflow", {})[name] = value
            value = value[:limit]
        fitted[name] = value
    return fitted


def _author(value: Any) -> AuthorRecord:
    if isinstance(value, AuthorRecord):
        return value
    if isinstance(value, dict):
        return AuthorRecord(
            name=clean_text(value.get("name")),
            affiliation=clean_text(value.get("affiliation")),
            profile_link=clean_text(value.get("profile_link") or value.get("link")),
            family=clean_text(value.get("family")),
            given=clean_text(value.get("given")),
        )
    return AuthorRecord(name=clean_text(value))


def parse_year(value: Any) -> int | None:
    """A year from 2024, '2024', '2024-05-01'; None when absent; InvalidInput when absurd."""
    if value is None or value == "":
        return None
    match = _YEAR.match(str(value))
    if not match:
        raise InvalidInput(f"Year {value!r} is not a year.", field="year")
    year = int(match.group(1))
    if not MIN_YEAR <= year <= MAX_YEAR:
        raise InvalidInput(f"Year {year} is out of range.", field="year")
    return year


def _non_negative_int(value: Any, name: str) -> int:
    if value in (None, ""):
        return 0
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise InvalidInput(f"{name} must be a whole number, not {value!r}.", field=name) from None
    return max(number, 0)


def keyword_clean(raw: Any) -> str:
    """A keyword as stored: trimmed, non-empty, at most 100 characters, no control characters."""
    if not isinstance(raw, str):
        raise InvalidInput(f"Keyword {raw!r} must be a string.", field="keywords")
    if any(unicodedata.category(ch) == "Cc" for ch in raw.strip()):
        raise InvalidInput(f"Keyword {raw!r} contains control characters.", field="keywords")
    name = " ".join(raw.split())
    if not name:
        raise InvalidInput("Keywords cannot be empty.", field="keywords")
    if len(name) > KEYWORD_MAX_LENGTH:
        raise InvalidInput(
            f"Keyword is {len(name)} characters; the limit is {KEYWORD_MAX_LENGTH}.",
            field="keywords",
        )
    return name


def keyword_key(name: str) -> str:
    return name.casefold()


def keywords_clean(values: Any) -> list[str]:
    """Validate a list of keywords, dropping case-insensitive repeats (first spelling wins)."""
    if isinstance(values, str):
        values = [values]
    seen: dict[str, str] = {}
    for value in values:
        name = keyword_clean(value)
        seen.setdefault(keyword_key(name), name)
    return list(seen.values())
