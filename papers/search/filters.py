"""Payload (metadata) filters and keyword search over the local library (docs/SEARCH.md).

A payload is a flat JSON object such as `{"venue": "Findings*", "year": "2021-2023"}`.
`filters_from_payload` checks it and turns it into `SearchFilters`; `apply_filters`
narrows a paper queryset with it, so full-text, semantic, payload search and facets all
filter the same way.

Text values are matched case-insensitively: exactly when they hold no wildcard, as glob
patterns when they do (`*` any run of characters, `?` one character, `\\*` / `\\?` a
literal star or question mark). Patterns become SQL `LIKE` (SQLite, ASCII
case-insensitive) or `ILIKE` (PostgreSQL) with the literal `%`, `_` and `\\` escaped.
Values that live in link tables (authors, institutions, keywords, categories, projects)
are matched with semi-join subqueries (`paper_id IN (SELECT ...)`), so a paper with two
matching authors is still one row.

The listings that rank by no text (payload, keyword, author) are in `papers.search.listings`;
`check_page` and `lead_snippet` here are shared with the ranked searches.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from typing import Any

from django.conf import settings
from django.db.models import F, Lookup, Q, QuerySet
from django.db.models.functions import Lower
from django.db.models.lookups import Exact

from core.errors import InvalidInput
from core.markdown import escape_markdown
from core.sql import prefix_end
from papers import scoping
from papers.identifiers import fold_key, normalize_doi, parse_person_name
from papers.models import (
    Author,
    Category,
    Institution,
    Keyword,
    Paper,
    PaperAuthor,
    PaperCategory,
    PaperKeyword,
    PaperPdf,
    Venue,
)
from papers.search.types import SearchFilters

MIN_YEAR, MAX_YEAR = 1000, 2999
MAX_FILTER_CHARS = 500
SNIPPET_CHARS = 240

TEXT_KEYS = (
    "venue", "author", "institution", "source", "keyword", "category", "project", "doi", "url",
)  # fmt: skip
YEAR_KEYS = ("year", "year_from", "year_to")
ALLOWED_KEYS = (*YEAR_KEYS, *TEXT_KEYS, "has_pdf", "has_pdf_url")

FILTER_HELP = (
    "year (2020, '2019-2021' or [2019, 2021]), year_from, year_to, venue, author, institution, "
    "source, keyword, category, project, doi, has_pdf (a stored PDF: true/false), has_pdf_url "
    "(a known PDF link: true/false), url; text values match "
    "case-insensitively, exactly, or as glob patterns with * and ?"
)


# --- glob patterns -------------------------------------------------------------------

LIKE_ESCAPE = "\\"


def has_wildcard(value: str) -> bool:
    """True when the value holds an unescaped `*` or `?`."""
    return _glob_to_like(value)[1]


def glob_to_like(pattern: str) -> str:
    """'Findings*' -> 'Findings%'; '50%_off?' -> '50\\%\\_off_' (escape char: backslash)."""
    return _glob_to_like(pattern)[0]


def _glob_to_like(pattern: str) -> tuple[str, bool]:
    out: list[str] = []
    wildcard = False
    chars = iter(pattern)
    for char in chars:
        if char == "\\":
            following = next(chars, "")
            if following in ("*", "?"):
                out.append(following)  # an escaped glob character is literal in LIKE too
                continue
            out.append(LIKE_ESCAPE + LIKE_ESCAPE)
            char = following
            if not char:
                break
        if char == "*":
            out.append("%")
            wildcard = True
        elif char == "?":
            out.append("_")
            wildcard = True
        elif char in ("%", "_", LIKE_ESCAPE):
            out.append(LIKE_ESCAPE + char)
        else:
            out.append(char)
    return "".join(out), wildcard


def _unescape_glob(value: str) -> str:
    """The literal text of a pattern without wildcards (`\\*` -> `*`)."""
    return value.replace("\\*", "*").replace("\\?", "?")


class GlobLike(Lookup):
    """`lhs LIKE rhs ESCAPE '\\'`, case-insensitive on SQLite and PostgreSQL.

    Used as an expression (`queryset.filter(GlobLike(F("name"), like_pattern))`), so no
    lookup is registered on every text field of the project. The right-hand side is a
    LIKE pattern already escaped by `glob_to_like`.
    """

    lookup_name = "glob_like"
    prepare_rhs = False

    def as_sql(self, compiler: Any, connection: Any) -> tuple[str, tuple[Any, ...]]:
        lhs, lhs_params = self.process_lhs(compiler, connection)
        rhs, rhs_params = self.process_rhs(compiler, connection)
        # SQLite's LIKE folds ASCII case (PRAGMA case_sensitive_like is off by default);
        # PostgreSQL needs ILIKE. Both read the pattern with backslash as escape.
        operator = "ILIKE" if connection.vendor == "postgresql" else "LIKE"
        return f"{lhs} {operator} {rhs} ESCAPE '\\'", (*lhs_params, *rhs_params)


def text_match(field: str, value: str, *, key_field: str | None = None) -> Q:
    """A condition on one text column: glob when `value` has wildcards, exact otherwise.

    Exact matching is case-insensitive (`iexact`); with `key_field` (a folded `name_key`
    column) it is accent- and punctuation-insensitive too ('Garcia' finds 'García').
    """
    like, wildcard = _glob_to_like(value)
    if wildcard:
        return Q(GlobLike(F(field), like))
    literal = _unescape_glob(value)
    condition = Q(**{f"{field}__iexact": literal})
    if key_field:
        condition |= Q(**{key_field: fold_key(literal)})
    return condition


# --- parsing a payload -----------------------------------------------------------------


def filters_from_payload(payload: Mapping[str, Any] | None) -> SearchFilters:
    """Check a payload dict and return its `SearchFilters`.

    Raises InvalidInput for unknown keys (the message lists the allowed ones), values of
    the wrong type, empty or over-long text, years outside 1000-2999 and reversed ranges.
    `None` values are ignored, so callers can pass optional arguments straight through.
    """
    if payload is None:
        return SearchFilters()
    if not isinstance(payload, Mapping):
        raise InvalidInput(f"filters must be an object with keys: {FILTER_HELP}.", field="filters")
    unknown = sorted(str(key) for key in payload if key not in ALLOWED_KEYS)
    if unknown:
        raise InvalidInput(
            f"Unknown filter key(s) {', '.join(unknown)}; allowed keys: {', '.join(ALLOWED_KEYS)}.",
            field="filters",
            unknown=unknown,
            allowed=list(ALLOWED_KEYS),
        )
    values: dict[str, Any] = {}
    for key, raw in payload.items():
        if raw is None:
            continue
        if key == "year":
            low, high = _parse_year_or_range(raw)
            if low == high:
                values["year"] = low
            else:
                values["year_from"], values["year_to"] = _merge_range(
                    values.get("year_from"), values.get("year_to"), low, high
                )
        elif key in ("year_from", "year_to"):
            year = _parse_year(raw, key)
            current = values.get(key)
            if current is not None:
                year = max(current, year) if key == "year_from" else min(current, year)
            values[key] = year
        elif key in ("has_pdf", "has_pdf_url"):
            values[key] = _parse_bool(raw, key)
        else:
            values[key] = _parse_text(raw, key)
    low, high = values.get("year_from"), values.get("year_to")
    if low is not None and high is not None and low > high:
        raise InvalidInput(
            f"year_from ({low}) is after year_to ({high}).", field="filters.year_from"
        )
    if "doi" in values and not has_wildcard(values["doi"]):
        values["doi"] = normalize_doi(values["doi"]) or values["doi"].lower()
    return SearchFilters(**values)


def filters_merge(base: SearchFilters | None, **extra: Any) -> SearchFilters:
    """`base` with the non-None `extra` fields set; year bounds narrow rather than replace."""
    current = base or SearchFilters()
    updates: dict[str, Any] = {}
    for key, value in extra.items():
        if value is None:
            continue
        existing = getattr(current, key)
        if key == "year_from" and existing is not None:
            value = max(existing, value)
        elif key == "year_to" and existing is not None:
            value = min(existing, value)
        updates[key] = value
    merged = dataclasses.replace(current, **updates)
    if merged.year_from is not None and merged.year_to is not None:
        if merged.year_from > merged.year_to:
            raise InvalidInput(
                f"The date range is empty: from {merged.year_from} to {merged.year_to}.",
                field="date_from",
            )
    return merged


def filters_as_dict(filters: SearchFilters | None) -> dict[str, Any]:
    """The filters that are set, for echoing back to a client."""
    if filters is None:
        return {}
    return {k: v for k, v in dataclasses.asdict(filters).items() if v is not None}


def filters_empty(filters: SearchFilters | None) -> bool:
    return not filters_as_dict(filters)


def _parse_year(raw: Any, key: str) -> int:
    if isinstance(raw, bool):
        raise InvalidInput(f"{key} must be a year such as 2021.", field=f"filters.{key}")
    if isinstance(raw, str) and raw.strip().isdigit():
        raw = int(raw.strip())
    if isinstance(raw, float) and raw.is_integer():
        raw = int(raw)
    if not isinstance(raw, int):
        raise InvalidInput(f"{key} must be a year such as 2021.", field=f"filters.{key}")
    if not MIN_YEAR <= raw <= MAX_YEAR:
        raise InvalidInput(
            f"{key} must be between {MIN_YEAR} and {MAX_YEAR}.", field=f"filters.{key}"
        )
    return raw


_YEAR_RANGE = re.compile(r"^\s*(\d{4})?\s*(?:-|–|\.\.)\s*(\d{4})?\s*$")


def _parse_year_or_range(raw: Any) -> tuple[int | None, int | None]:
    """2020, '2020', '2019-2021', '2019..2021', '2019-', [2019, 2021] or
    {"from": 2019, "to": 2021} -> (low, high); open ends are None."""
    if isinstance(raw, Sequence) and not isinstance(raw, str):
        if len(raw) != 2:
            raise InvalidInput("year as a list must be [from, to].", field="filters.year")
        low = None if raw[0] is None else _parse_year(raw[0], "year")
        high = None if raw[1] is None else _parse_year(raw[1], "year")
    elif isinstance(raw, Mapping):
        extra = set(raw) - {"from", "to"}
        if extra:
            raise InvalidInput(
                "year as an object takes only 'from' and 'to'.", field="filters.year"
            )
        low = None if raw.get("from") is None else _parse_year(raw["from"], "year")
        high = None if raw.get("to") is None else _parse_year(raw["to"], "year")
    elif isinstance(raw, str) and (match := _YEAR_RANGE.match(raw)) and any(match.groups()):
        low = None if match[1] is None else _parse_year(match[1], "year")
        high = None if match[2] is None else _parse_year(match[2], "year")
    else:
        year = _parse_year(raw, "year")
        return year, year
    if low is None and high is None:
        raise InvalidInput("year range needs at least one end.", field="filters.year")
    return low, high


def _merge_range(
    low: int | None, high: int | None, new_low: int | None, new_high: int | None
) -> tuple[int | None, int | None]:
    if new_low is not None:
        low = new_low if low is None else max(low, new_low)
    if new_high is not None:
        high = new_high if high is None else min(high, new_high)
    return low, high


def _parse_bool(raw: Any, key: str) -> bool:
    if isinstance(raw, bool):
        return raw
    if isinstance(raw, str) and raw.strip().lower() in ("true", "false"):
        return raw.strip().lower() == "true"
    raise InvalidInput(f"{key} must be true or false.", field=f"filters.{key}")


def _parse_text(raw: Any, key: str) -> str:
    if isinstance(raw, bool) or not isinstance(raw, str | int):
        raise InvalidInput(
            f"{key} must be a text value (glob patterns with * and ? allowed).",
            field=f"filters.{key}",
        )
    text = " ".join(str(raw).split())
    if not text:
        raise InvalidInput(f"{key} cannot be empty.", field=f"filters.{key}")
    if len(text) > MAX_FILTER_CHARS:
        raise InvalidInput(
            f"{key} is longer than {MAX_FILTER_CHARS} characters.", field=f"filters.{key}"
        )
    return text


# --- applying filters --------------------------------------------------------------------


def has_pdf_condition() -> Q:
    """Papers with a PDF stored in the library (attached, uploaded or downloaded), the same
    rule as the records' `has_pdf`: the papers the PDF, passage and quote tools work on. A
    known `pdf_url` alone is not a PDF (`has_pdf_url`).

    An uncorrelated `paper_id IN (...)`, like `linked`.
    """
    return Q(pk__in=PaperPdf.objects.values("paper"))


def papers_passing(filters: SearchFilters | None, scope: Sequence[str] | None) -> QuerySet[Paper]:
    """The papers a client with this scope may see that pass these filters."""
    return apply_filters(scoping.papers_in_scope(scope), filters, scope=scope)


def apply_filters(
    queryset: QuerySet[Paper],
    filters: SearchFilters | None,
    *,
    scope: Sequence[str] | None = None,
) -> QuerySet[Paper]:
    """Narrow a paper queryset to the papers matching every set filter (AND).

    `scope` (the client's collections) limits what the `project` filter can name, so a
    scoped client cannot probe the membership of projects outside its scope.
    """
    if filters is None:
        return queryset
    condition = Q()
    if filters.year is not None:
        condition &= Q(year=filters.year)
    if filters.year_from is not None:
        condition &= Q(year__gte=filters.year_from)
    if filters.year_to is not None:
        condition &= Q(year__lte=filters.year_to)
    if filters.venue:
        venues = Venue.objects.filter(
            text_match("name", filters.venue, key_field="name_key")
            | text_match("short_name", filters.venue)
        )
        condition &= Q(venue__in=venues.values("pk"))
    if filters.author:
        authors = authors_matching(filters.author)
        condition &= linked(PaperAuthor.objects.filter(author__in=authors.values("pk")))
    if filters.institution:
        institutions = Institution.objects.filter(
            text_match("name", filters.institution, key_field="name_key")
        )
        condition &= linked(PaperAuthor.objects.filter(affiliation__in=institutions.values("pk")))
    if filters.source:
        condition &= text_match("source", filters.source)
    if filters.keyword:
        keywords = Keyword.objects.filter(text_match("name", filters.keyword, key_field="name_key"))
        condition &= linked(PaperKeyword.objects.filter(keyword__in=keywords.values("pk")))
    if filters.category:
        categories = Category.objects.filter(text_match("name", filters.category))
        condition &= linked(PaperCategory.objects.filter(category__in=categories.values("pk")))
    if filters.project:
        condition &= linked(_project_links(filters.project, scope))
    if filters.doi:
        if has_wildcard(filters.doi):
            condition &= text_match("doi", filters.doi.lower())
        else:
            condition &= Q(doi=normalize_doi(filters.doi) or filters.doi.lower())
    if filters.has_pdf is not None:
        condition &= has_pdf_condition() if filters.has_pdf else ~has_pdf_condition()
    if filters.has_pdf_url is not None:
        condition &= ~Q(pdf_url="") if filters.has_pdf_url else Q(pdf_url="")
    if filters.url:
        condition &= text_match("source_url", filters.url) | text_match("pdf_url", filters.url)
    return queryset.filter(condition) if condition else queryset


def authors_matching(name: str) -> QuerySet[Author]:
    """Authors a name refers to, case- and accent-insensitively: the full name in either
    order ('Ashish Vaswani', 'Vaswani, Ashish'), the family name alone ('Vaswani'), or an
    initial and the family name ('A. Vaswani'); a full name nobody has, the family's
    authors whose given name starts with its given name ('Chris Manning'). With `*`/`?`
    the pattern is matched against the full name and the family name."""
    if has_wildcard(name):
        like = glob_to_like(name)
        return Author.objects.filter(
            _led_by(like, "name") & text_match("name", name)
            | _led_by(like, "family_name") & text_match("family_name", name)
        )
    literal = _unescape_glob(name)
    person = parse_person_name(literal)
    # Indexed conditions only (the unique name_key, author_family_lower_idx): a LIKE-based
    # iexact on the name would scan every author (~90k in the ACL corpus).
    condition = Q(name_key__in=sorted({fold_key(literal), person.key})) | _family_is(literal)
    given = person.given.replace(".", " ").split() if person.family else []
    if not given:
        return Author.objects.filter(condition)
    led_by = _family_is(person.family) & Q(given_name__istartswith=given[0])
    if all(len(part) == 1 for part in given):
        # 'A. Vaswani', 'A Vaswani', 'Vaswani, A.': an initial stands for a given name.
        return Author.objects.filter(condition | led_by)
    named = Author.objects.filter(condition)
    # 'Chris Manning' when nobody has that name: the authors of that family whose given
    # name starts so ('Christopher D. Manning'), as query reading's 'Chris*Manning' finds.
    return named if named.exists() else Author.objects.filter(led_by)


def _family_is(name: str) -> Q:
    return Q(Exact(Lower("family_name"), name.lower()))


def like_prefix(like: str) -> str:
    """The literal text a LIKE pattern starts with, up to its first wildcard or non-ASCII
    character, in lower case: every value the pattern matches, case-insensitively, starts
    with it once lowered, on SQLite (whose LIKE and lower() fold ASCII letters only) and on
    PostgreSQL (whose ILIKE compares lower() of both sides). 'Christopher%Manning' ->
    'christopher'; '%Manning' -> ''."""
    out: list[str] = []
    chars = iter(like)
    for char in chars:
        if char in ("%", "_"):
            break
        if char == LIKE_ESCAPE:
            char = next(chars, "")
        if not char or not char.isascii():
            break
        out.append(char.lower())
    return "".join(out)


class LowerStartsWith(Lookup):
    """`lower(lhs)` starts with `rhs` (lower-case ASCII, from `like_prefix`), in the form
    an index on the lowered column answers: a range on SQLite (`lower(x) >= 'abc' AND
    lower(x) < 'abd'`, the byte order of its default collation), a LIKE prefix on
    PostgreSQL (the text_pattern_ops indexes of migration 0013; a range there would follow
    the database's collation, where the values starting with a prefix need not be
    contiguous)."""

    lookup_name = "lower_starts_with"
    prepare_rhs = False

    def as_sql(self, compiler: Any, connection: Any) -> tuple[str, tuple[Any, ...]]:
        lhs, lhs_params = self.process_lhs(compiler, connection)
        prefix = str(self.rhs)
        if connection.vendor == "postgresql":
            escaped = "".join(
                LIKE_ESCAPE + c if c in ("%", "_", LIKE_ESCAPE) else c for c in prefix
            )
            return f"{lhs} LIKE %s ESCAPE '\\'", (*lhs_params, escaped + "%")
        return f"{lhs} >= %s AND {lhs} < %s", (*lhs_params, prefix, *lhs_params, prefix_end(prefix))


def _led_by(like: str, field: str) -> Q:
    """The values of `field` a LIKE pattern can match, narrowed by its literal start to an
    index range (migration 0013's indexes of the lowered names) so that a pattern such as
    the query reading's 'Christopher*Manning' reads a few authors, not all of them (~90k
    in the ACL corpus). No start ('*Manning'): every author."""
    prefix = like_prefix(like)
    return Q(LowerStartsWith(Lower(field), prefix)) if prefix else Q()


def linked(links: QuerySet[Any]) -> Q:
    """Papers with at least one of these link rows (authors, keywords, projects, ...).

    A semi-join, so a paper with two matching links is still one row. Written as an
    uncorrelated `paper_id IN (SELECT paper_id ...)` rather than a correlated EXISTS:
    SQLite runs EXISTS once per paper (an author filter on 95k papers: 110 ms) but builds
    the IN list once (a few ms); PostgreSQL plans both as the same semi-join.
    """
    return Q(pk__in=links.values("paper"))


def _project_links(ref: str, scope: Sequence[str] | None) -> QuerySet[Any]:
    if has_wildcard(ref):
        named = text_match("id", ref) | text_match("name", ref)
    else:
        named = Q(id=_unescape_glob(ref)) | text_match("name", ref)
    projects = scoping.project_model()._default_manager.filter(named)
    if scope is not None:
        projects = projects.filter(id__in=scoping.project_ids_for(scope))
    return scoping.membership_model()._default_manager.filter(project__in=projects.values("pk"))


# --- pages ----------------------------------------------------------------------------------


def check_page(limit: int, offset: int) -> None:
    """Raise InvalidInput unless 1 <= limit <= MAX_PAGE_SIZE and 0 <= offset <= MAX_OFFSET."""
    if (
        isinstance(limit, bool)
        or not isinstance(limit, int)
        or not 1 <= limit <= settings.MAX_PAGE_SIZE
    ):
        raise InvalidInput(f"limit must be between 1 and {settings.MAX_PAGE_SIZE}.", field="limit")
    if (
        isinstance(offset, bool)
        or not isinstance(offset, int)
        or not 0 <= offset <= settings.MAX_OFFSET
    ):
        raise InvalidInput(f"offset must be between 0 and {settings.MAX_OFFSET}.", field="offset")


def lead_snippet(paper: Paper, max_chars: int = SNIPPET_CHARS) -> str:
    """The start of the abstract (or the stored snippet), cut at a word boundary, with its
    markup escaped (it is returned as markdown)."""
    text = " ".join((paper.abstract or paper.snippet or "").split())
    if len(text) <= max_chars:
        return escape_markdown(text)
    cut = text[:max_chars].rsplit(" ", 1)[0]
    return f"{escape_markdown(cut)} …"
