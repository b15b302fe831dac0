"""Top facet values with paper counts (the `list_top_facets` tool).

A facet is a dimension of the library: authors, venues, user keywords, institutions, tags
(projects), source categories and years. `facet_counts` returns the values holding the
most papers, `paper_count` descending then name, over:

- the client's scope (its collections) or the whole library;
- optionally only papers matching payload filters;
- optionally only the papers a query finds, ranked as search_papers ranks them
  (local.local_search_ids), at most FACETS_QUERY_CAP of the best (a note says when the
  cap cut them, and how many match in all).

`venue` counts per edition (one venue row per proceedings volume); `venue_short` per
series: the record's short venue name (ACL's venue id, e.g. "emnlp"), or the full name
when it has none. `by_year` adds each value's counts per year in the same call.

Cost on the 95k-paper ACL corpus (SQLite, measured): a cold whole-library count takes
2-12 ms for most categories; authors took ~50 ms while their GROUP BY read all ~324k
author links (0.2-0.7 s at 300k papers, ~0.3 s at 1M), and now rank by the link counts
the database keeps per author (`kept_counts`; see `_top_distinct_papers`). Venues, venue
series and years over the whole library read the papers per venue and per year it keeps
too (grouping every paper took ~0.4 s on PostgreSQL at 500k; `_per_value`). Venue
series, grouped by their expression, took 0.37 s at 300k (now summed per venue:
`_short_venues`).
A query over the cap pays for ranking its hits (~150 ms for a 20k-hit word). So every
answer is cached under a key made of the request and the library's version
(`library_version`: one small statement reading the generations that triggers renew on
both databases whenever a row a facet counts, a column a filter reads or a paper's text
changes): adding, removing or editing papers, authors, venues, keywords, categories or
project members changes the key at once. An answer over the whole library is kept
`KEPT_SECONDS` (a day): only a change renews it; one over a query `CACHE_SECONDS`, since
its ranking also follows the vectors, which no generation covers. A query's hits are
cached too, so the next category of the same query does not rank again. Warm answers take
~1 ms.

One module because every facet is counted over the same restricted set of papers, with the
same cache key and shape; a facet is one small function over that.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Literal, get_args

from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.db.models import Count, QuerySet

from core.errors import InvalidInput
from core.sql import among_ids, wrote_in_this_transaction
from papers import scoping
from papers.models import (
    Author,
    Category,
    Institution,
    Keyword,
    Paper,
    PaperAuthor,
    PaperCategory,
    PaperKeyword,
    Venue,
)
from papers.search import kept_counts, kept_filters, postings
from papers.search.filters import filters_as_dict, filters_empty
from papers.search.types import SearchFilters

FacetCategory = Literal[
    "author", "venue", "venue_short", "keyword", "institution", "tag", "category", "year"
]
FACET_CATEGORIES: tuple[str, ...] = get_args(FacetCategory)
# Over a query, facets count the best-ranked hits only (settings.FACETS_QUERY_CAP, at most
# MAX_IDS): enough to describe what a query is about, and it bounds the cost of a query
# matching most of the library.
CACHE_SECONDS = 60
# An answer over the whole library (no query) under a key of generations: it changes with
# every change it counts, so it is kept this long (whole-library counts at 1M papers take
# up to a second or more to make).
KEPT_SECONDS = 24 * 3600
MAX_FACET_LIMIT = 100
# Extra groups fetched past `limit`, so ties at the cut can be ordered by name.
_TIE_MARGIN = 50


@dataclass
class FacetResult:
    category: str
    values: list[dict[str, Any]]
    papers_considered: int | None = None  # papers the counts are over (None: not counted)
    notes: list[str] = field(default_factory=list)


def top_facets(
    *,
    category: str,
    limit: int = 20,
    query: str | None = None,
    filters: SearchFilters | None = None,
    scope: Sequence[str] | None = None,
) -> list[dict[str, Any]]:
    """The top values of a facet: `[{"name", "paper_count", "filter", ...}]`; see
    `facet_counts`, which also says what the counts are over."""
    return facet_counts(
        category=category, limit=limit, query=query, filters=filters, scope=scope
    ).values


def facet_counts(
    *,
    category: str,
    limit: int = 20,
    query: str | None = None,
    filters: SearchFilters | None = None,
    scope: Sequence[str] | None = None,
    by_year: bool = False,
) -> FacetResult:
    """Top `limit` values of `category` with their paper counts, `paper_count` descending
    then name. Each value carries `filter`: the payload filter that selects its papers
    (for search_papers_by_payload / search_papers); with `by_year`, also `by_year`: its
    paper counts per publication year ({"2019": 3, ...}, oldest first, papers without a
    year left out), over the same papers.

    Raises InvalidInput for an unknown category, a limit outside 1-100, an over-long
    query, or by_year with the year category.
    """
    if category not in FACET_CATEGORIES:
        raise InvalidInput(
            f"Unknown facet category {category!r}; choose one of: {', '.join(FACET_CATEGORIES)}.",
            field="category",
            allowed=list(FACET_CATEGORIES),
        )
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_FACET_LIMIT:
        raise InvalidInput(f"limit must be between 1 and {MAX_FACET_LIMIT}.", field="limit")
    if by_year and category == "year":
        raise InvalidInput("by_year needs a category other than year.", field="by_year")
    query = " ".join((query or "").split()) or None
    if query and len(query) > settings.MAX_QUERY_CHARS:
        raise InvalidInput(
            f"query is longer than {settings.MAX_QUERY_CHARS} characters.", field="query"
        )

    version, renewed = library_version()
    key = _cache_key(
        "counts", version, query_cap(), category, limit, query, filters, scope, by_year
    )
    cached = cache.get(key)
    if cached is not None:
        return FacetResult(**cached)
    result = _compute(
        category=category, limit=limit, query=query, filters=filters, scope=scope,
        version=version, by_year=by_year,
    )  # fmt: skip
    # A query's hits also depend on the vectors (hybrid ranking), which no generation
    # covers: those answers, and any under the counted key, live CACHE_SECONDS.
    lifetime = KEPT_SECONDS if renewed and not query else CACHE_SECONDS
    cache.set(key, dataclasses.asdict(result), lifetime)
    return result


def query_cap() -> int:
    """How many of a query's best-ranked papers facets count at most."""
    from papers.search.fulltext import MAX_IDS

    return min(settings.FACETS_QUERY_CAP, MAX_IDS)


# --- what the counts are over -----------------------------------------------------------


def _compute(
    *,
    category: str,
    limit: int,
    query: str | None,
    filters: SearchFilters | None,
    scope: Sequence[str] | None,
    version: str,
    by_year: bool = False,
) -> FacetResult:
    notes: list[str] = []
    considered: int | None = None
    papers: QuerySet[Paper] | list[int] | None = None  # None: every paper
    if query:
        cap = query_cap()
        hits_key = _cache_key("ranked-with-notes", version, cap, query, filters, scope)
        cached = cache.get(hits_key)
        if cached is None:
            # An agent asks for several categories of one query in a row: rank it once.
            cached = _query_hits(query=query, filters=filters, scope=scope, cap=cap)
            cache.set(hits_key, cached, CACHE_SECONDS)
        ids, matching, read = cached
        notes.extend(read)
        papers, considered = ids, len(ids)
        if matching > len(ids):
            notes.append(
                f"Capped: the query matches about {matching:,} papers; counts are over its "
                f"{len(ids):,} best-ranked (the cap)."
            )
        else:
            notes.append(f"Counts are over the {len(ids)} papers matching the query.")
    elif scope is not None or not filters_empty(filters):
        papers = _papers(filters=filters, scope=scope)
        notes.append(
            "Counts are over the papers "
            + " and ".join(
                part
                for part, on in (
                    ("in your collections", scope is not None),
                    ("matching the filters", not filters_empty(filters)),
                )
                if on
            )
            + "."
        )
    values = _FACETS[category](papers, limit, scope)
    if by_year:
        per_year = _BY_YEAR[category](papers, [value["_key"] for value in values], scope)
        for value in values:
            value["by_year"] = {str(year): n for year, n in sorted(per_year.get(value["_key"], []))}
    for value in values:
        del value["_key"]
    if considered is None and papers is None:
        notes.append("Counts are over the whole library.")
    return FacetResult(category=category, values=values, papers_considered=considered, notes=notes)


def _papers(*, filters: SearchFilters | None, scope: Sequence[str] | None) -> QuerySet[Paper]:
    from papers.search.filters import apply_filters

    queryset = Paper.objects.all()
    if scope is not None:
        queryset = queryset.filter(pk__in=scoping.scope_paper_ids(scope))
    return apply_filters(queryset, filters, scope=scope)


def _query_hits(
    *, query: str, filters: SearchFilters | None, scope: Sequence[str] | None, cap: int
) -> tuple[list[int], int, tuple[str, ...]]:
    """The ids of the papers a query finds, ranked as search_papers ranks them
    (local.local_search_ids), at most its `cap` best, how many it finds in all, and what
    was read from the query (its notes, as search_papers gives them)."""
    from papers.search.local import local_search_ids

    ranking = local_search_ids(query=query, filters=filters, scope=scope, limit=cap)
    return ranking.ids, ranking.total, ranking.notes


# --- one function per category ------------------------------------------------------------

Papers = QuerySet[Paper] | list[int] | None
Scope = Sequence[str] | None


def _restrict(queryset: QuerySet[Any], papers: Papers, paper_field: str = "paper") -> QuerySet[Any]:
    """Limit rows to the given papers. Also drops Meta.ordering: PaperAuthor's ("paper",
    "position") would otherwise join papers_paper into every GROUP BY (+50 ms on 95k).

    A query's papers (a list of up to FACETS_QUERY_CAP ids) go as one parameter
    (`core.sql.among_ids`). As `IN (%s, %s, ...)` SQLite grouped the author links by
    walking the whole (author, paper) index and testing each link against the list: 0.38 s
    for a query's 10,000 papers at 1M papers, against 0.03 s reading their links by paper.
    """
    queryset = queryset.order_by()
    if papers is None:
        return queryset
    if isinstance(papers, list) and not papers:
        return queryset.none()
    if isinstance(papers, QuerySet):
        source: Any = papers.values("pk")
    else:
        source = among_ids(papers)
    return queryset.filter(**{f"{paper_field}__in": source})


Names = Callable[[list[Any]], dict[Any, dict[str, Any]]]


def _top(groups: QuerySet[Any], group_field: str, limit: int, names: Names) -> list[dict[str, Any]]:
    """The `limit` largest groups of a `values(group_field).annotate(n=...)` queryset,
    ordered by count desc then name.

    Sorting every group by name in SQL needs a join per group; instead fetch the top
    groups by count with a margin and order ties by name in Python, re-querying only
    when the tie at the cut runs past the margin.
    """
    groups = groups.filter(**{f"{group_field}__isnull": False})
    fetched = list(groups.order_by("-n", group_field)[: limit + _TIE_MARGIN])
    if len(fetched) == limit + _TIE_MARGIN and fetched[limit - 1]["n"] == fetched[-1]["n"]:
        fetched = list(groups.filter(n__gte=fetched[limit - 1]["n"]))
    return _shape(fetched, group_field, limit, names)


def _top_distinct_papers(
    links: QuerySet[Any],
    group_field: str,
    limit: int,
    names: Names,
    *,
    whole_library: bool,
    kept: Callable[[int], kept_counts.Candidates] | None = None,
) -> list[dict[str, Any]]:
    """`_top` over link rows that may repeat a paper within a group (a paper listing the
    same author twice), counting distinct papers.

    COUNT(DISTINCT paper) over every link costs twice a plain COUNT(*) (~100 vs ~50 ms
    on 95k papers), and even that grouping reads every link (~0.3 s for 3.4M author links
    at 1M papers). A group's number of links is an upper bound of its distinct count, so
    rank by links (`kept`: the counts the database keeps, for authors; institutions'
    links are grouped here), count exactly for the candidates only, and fall back to the
    exact aggregate over every group when a group outside the candidates could still
    reach the cut.
    """
    links = links.filter(**{f"{group_field}__isnull": False})
    exact_groups = links.values(group_field).annotate(n=Count("paper", distinct=True))
    if not whole_library:
        # Over a subset the exact aggregate is cheap, and `group IN (candidates)` with the
        # paper subset makes SQLite probe (group, paper) pairs: 150 ms for 4k papers.
        return _top(exact_groups, group_field, limit, names)
    wanted = limit + _TIE_MARGIN
    candidates = (kept or partial(_grouped_links, links, group_field))(wanted)
    exact = list(exact_groups.filter(**{f"{group_field}__in": list(candidates.counts)}))
    counts = sorted((row["n"] for row in exact), reverse=True)
    cut = counts[limit - 1] if len(counts) >= limit else 0
    if candidates.bound and candidates.bound >= cut:
        return _top(exact_groups, group_field, limit, names)
    return _shape(exact, group_field, limit, names)


def _grouped_links(links: QuerySet[Any], group_field: str, wanted: int) -> kept_counts.Candidates:
    """The `wanted` groups with the most links, counted by grouping them all."""
    rows = list(
        links.values(group_field).annotate(n=Count("pk")).order_by("-n", group_field)[: wanted + 1]
    )
    bound = rows[wanted]["n"] if len(rows) > wanted else 0
    return kept_counts.Candidates({row[group_field]: row["n"] for row in rows[:wanted]}, bound)


def _shape(
    fetched: list[dict[str, Any]], group_field: str, limit: int, names: Names
) -> list[dict[str, Any]]:
    details = names([row[group_field] for row in fetched])
    rows = [
        {**details[row[group_field]], "paper_count": row["n"], "_key": row[group_field]}
        for row in fetched
        if row[group_field] in details
    ]
    rows.sort(key=lambda r: (-r["paper_count"], str(r["name"]).casefold(), str(r["name"])))
    return rows[:limit]


def _escape_glob(value: str) -> str:
    """A name as a filter value that matches it literally (names may contain * or ?)."""
    return value.replace("*", "\\*").replace("?", "\\?")


def _authors(papers: Papers, limit: int, scope: Scope) -> list[dict[str, Any]]:
    links = _restrict(PaperAuthor.objects.all(), papers)

    def names(ids: list[int]) -> dict[int, dict[str, Any]]:
        return {
            a.pk: {"name": a.name, "filter": {"author": _escape_glob(a.name)}}
            for a in Author.objects.filter(pk__in=ids).only("name")
        }

    return _top_distinct_papers(
        links,
        "author_id",
        limit,
        names,
        whole_library=papers is None,
        kept=kept_counts.author_candidates,
    )


def _institutions(papers: Papers, limit: int, scope: Scope) -> list[dict[str, Any]]:
    links = _restrict(PaperAuthor.objects.all(), papers)

    def names(ids: list[int]) -> dict[int, dict[str, Any]]:
        return {
            i.pk: {"name": i.name, "filter": {"institution": _escape_glob(i.name)}}
            for i in Institution.objects.filter(pk__in=ids).only("name")
        }

    return _top_distinct_papers(links, "affiliation_id", limit, names, whole_library=papers is None)


def _per_value(papers: Papers, column: str, facet: int) -> dict[int, int]:
    """Papers per value of a paper column: over the whole library the counts the database
    keeps (`kept_counts`), read whole; over a subset, grouped (its index read)."""
    if papers is None:
        return kept_counts.paper_values(facet)
    rows = (
        _restrict(Paper.objects.all(), papers, "pk")
        .filter(**{f"{column}__isnull": False})
        .values(column)
        .annotate(n=Count("pk"))
        .values_list(column, "n")
    )
    return dict(rows)


def _top_values(
    papers: Papers, column: str, facet: int, limit: int, names: Names
) -> list[dict[str, Any]]:
    counts = _per_value(papers, column, facet)
    # The ties at the cut are all kept: _shape orders them by name.
    ranked = sorted(counts.items(), key=lambda item: -item[1])
    cut = ranked[limit - 1][1] if len(ranked) >= limit else 0
    fetched = [{column: value, "n": n} for value, n in ranked if n >= cut]
    return _shape(fetched, column, limit, names)


def _venues(papers: Papers, limit: int, scope: Scope) -> list[dict[str, Any]]:
    def names(ids: list[int]) -> dict[int, dict[str, Any]]:
        return {
            v.pk: {
                "name": v.name,
                "short_name": v.short_name or None,
                "filter": {"venue": _escape_glob(v.name)},
            }
            for v in Venue.objects.filter(pk__in=among_ids(ids)).only("name", "short_name")
        }

    return _top_values(papers, "venue_id", kept_counts.VENUE, limit, names)


def _venue_series(venue_ids: Sequence[int]) -> dict[int, str]:
    """Each venue's series: its short name (ACL's venue id, e.g. "emnlp"; what the record
    calls venue_short) in lower case, or its full name when the record has none, so every
    edition of a series is one value. The one definition `venue_short` counts by."""
    venues = Venue.objects.filter(pk__in=among_ids(list(venue_ids))).values_list(
        "pk", "short_name", "name"
    )
    return {pk: short_name.lower() if short_name else name for pk, short_name, name in venues}


def _short_venues(papers: Papers, limit: int, scope: Scope) -> list[dict[str, Any]]:
    """Papers per venue (`_per_value`), then summed per series here: grouping the papers
    by the series expression itself joined every paper to its venue and sorted the values
    (0.37 s at 300k papers)."""
    per_venue = _per_value(papers, "venue_id", kept_counts.VENUE)
    series: dict[str, int] = {}
    for pk, name in _venue_series(list(per_venue)).items():
        series[name] = series.get(name, 0) + per_venue[pk]
    rows: list[dict[str, Any]] = [
        {"name": name, "filter": {"venue": _escape_glob(name)}, "paper_count": n, "_key": name}
        for name, n in series.items()
    ]
    rows.sort(key=lambda r: (-r["paper_count"], str(r["name"]).casefold(), str(r["name"])))
    return rows[:limit]


def _years(papers: Papers, limit: int, scope: Scope) -> list[dict[str, Any]]:
    def names(years: list[int]) -> dict[int, dict[str, Any]]:
        return {y: {"name": str(y), "year": y, "filter": {"year": y}} for y in years}

    return _top_values(papers, "year", kept_counts.YEAR, limit, names)


def _keywords(papers: Papers, limit: int, scope: Scope) -> list[dict[str, Any]]:
    groups = (
        _restrict(PaperKeyword.objects.all(), papers).values("keyword_id").annotate(n=Count("pk"))
    )

    def names(ids: list[int]) -> dict[int, dict[str, Any]]:
        return {
            k.pk: {"name": k.name, "filter": {"keyword": _escape_glob(k.name)}}
            for k in Keyword.objects.filter(pk__in=ids).only("name")
        }

    return _top(groups, "keyword_id", limit, names)


def _categories(papers: Papers, limit: int, scope: Scope) -> list[dict[str, Any]]:
    groups = (
        _restrict(PaperCategory.objects.all(), papers).values("category_id").annotate(n=Count("pk"))
    )

    def names(ids: list[int]) -> dict[int, dict[str, Any]]:
        return {
            c.pk: {"name": c.name, "filter": {"category": _escape_glob(c.name)}}
            for c in Category.objects.filter(pk__in=ids).only("name")
        }

    return _top(groups, "category_id", limit, names)


def _tags(papers: Papers, limit: int, scope: Scope) -> list[dict[str, Any]]:
    links = scoping.membership_model()._default_manager.all()
    if scope is not None:
        # Papers in scope may also sit in projects outside it; those stay invisible.
        links = links.filter(project__in=scoping.project_ids_for(scope))
    groups = _restrict(links, papers).values("project_id").annotate(n=Count("pk"))

    projects: Any = scoping.project_model()._default_manager

    def names(ids: list[str]) -> dict[str, dict[str, Any]]:
        return {
            p.pk: {"name": p.name, "project_id": p.pk, "filter": {"project": p.pk}}
            for p in projects.filter(pk__in=ids).only("name")
        }

    return _top(groups, "project_id", limit, names)


_FACETS: dict[str, Callable[[Papers, int, Scope], list[dict[str, Any]]]] = {
    "author": _authors,
    "venue": _venues,
    "venue_short": _short_venues,
    "keyword": _keywords,
    "institution": _institutions,
    "tag": _tags,
    "category": _categories,
    "year": _years,
}


# --- year by year -------------------------------------------------------------------------

PerYear = dict[Any, list[tuple[int, int]]]  # facet value's key -> [(year, papers)]


def _per_year(rows: QuerySet[Any], key_field: str, year_field: str, keys: list[Any]) -> PerYear:
    """(year, distinct papers) per value of `key_field` among `keys`, one GROUP BY."""
    counted = (
        rows.filter(**{f"{key_field}__in": keys, f"{year_field}__isnull": False})
        .values(key_field, year_field)
        .annotate(n=Count("paper" if year_field.startswith("paper__") else "pk", distinct=True))
        .order_by()
    )
    found: PerYear = {}
    for row in counted:
        found.setdefault(row[key_field], []).append((row[year_field], row["n"]))
    return found


def _links_per_year(model: Any, key_field: str) -> Callable[[Papers, list[Any], Scope], PerYear]:
    def count(papers: Papers, keys: list[Any], scope: Scope) -> PerYear:
        links = _restrict(model.objects.all(), papers)
        return _per_year(links, key_field, "paper__year", keys)

    return count


def _venues_per_year(papers: Papers, keys: list[Any], scope: Scope) -> PerYear:
    return _per_year(_restrict(Paper.objects.all(), papers, "pk"), "venue_id", "year", keys)


def _short_venues_per_year(papers: Papers, keys: list[Any], scope: Scope) -> PerYear:
    """Papers per venue and year, summed per series (`_venue_series`, as `_short_venues`)."""
    queryset = _restrict(Paper.objects.all(), papers, "pk").filter(
        venue__isnull=False, year__isnull=False
    )
    per_venue = list(
        queryset.values("venue_id", "year").annotate(n=Count("pk")).order_by()
        .values_list("venue_id", "year", "n")
    )  # fmt: skip
    series = _venue_series(list({venue for venue, _, _ in per_venue}))
    wanted = set(keys)
    summed: dict[Any, dict[int, int]] = {}
    for venue, year, n in per_venue:
        name = series.get(venue)
        if name in wanted:
            years = summed.setdefault(name, {})
            years[year] = years.get(year, 0) + n
    return {name: list(years.items()) for name, years in summed.items()}


def _tags_per_year(papers: Papers, keys: list[Any], scope: Scope) -> PerYear:
    links = _restrict(scoping.membership_model()._default_manager.all(), papers)
    return _per_year(links, "project_id", "paper__year", keys)


_BY_YEAR: dict[str, Callable[[Papers, list[Any], Scope], PerYear]] = {
    "author": _links_per_year(PaperAuthor, "author_id"),
    "institution": _links_per_year(PaperAuthor, "affiliation_id"),
    "venue": _venues_per_year,
    "venue_short": _short_venues_per_year,
    "keyword": _links_per_year(PaperKeyword, "keyword_id"),
    "category": _links_per_year(PaperCategory, "category_id"),
    "tag": _tags_per_year,
}


# --- caching ------------------------------------------------------------------------------


def library_version() -> tuple[str, bool]:
    """(A fingerprint of what facets count, whether every change they count renews it).

    The generations of every table a facet or a filter reads (kept_filters.watched_tables;
    papers migrations 0017/0018, projects 0019) and of the postings a query ranks by: an
    insert, a delete, an update of a counted column (a paper's year or venue, a venue's
    name) or of a paper's text shows at once, on both databases (every payload filter
    reads only what the triggers watch: tests/papers/search/test_kept_filters.py).

    Inside a PostgreSQL transaction that has written (its generations are renewed at the
    commit) and wherever a generation row is missing, `_counted_version` instead, which
    misses edits in place: answers under it live CACHE_SECONDS.
    """
    if wrote_in_this_transaction(connection):
        return _counted_version(), False
    tables = sorted(kept_filters.watched_tables())
    items, names = kept_filters.generations_sql(tables)
    with connection.cursor() as cursor:
        # Table names from the code, never from input.
        cursor.execute(f"SELECT {items}, (SELECT n FROM {postings.GENERATION_TABLE})", names)  # noqa: S608
        numbers = cursor.fetchone()
    if None in numbers:
        return _counted_version(), False
    return ":".join([connection.alias, "g", *(str(number) for number in numbers)]), True


def _counted_version() -> str:
    """Counts and highest ids of papers and of every link table facets count: any insert
    or delete changes them.

    One statement of scalar subqueries: SQLite answers a bare `SELECT COUNT(*)` and
    `MAX(<primary key>)` from its b-tree without decoding rows (~1 ms at 95k papers,
    ~10 ms at 300k), which it cannot do for `COUNT(col), MAX(col)` in one SELECT.
    """
    models = (Paper, PaperAuthor, PaperKeyword, PaperCategory, scoping.membership_model())
    quote = connection.ops.quote_name
    parts = []
    for model in models:
        table, pk = quote(model._meta.db_table), quote(str(model._meta.pk.column))
        count, top = f"SELECT COUNT(*) FROM {table}", f"SELECT MAX({pk}) FROM {table}"  # noqa: S608
        parts.append(f"({count}), ({top})")
    with connection.cursor() as cursor:
        # Table and column names come from the models, never from input.
        cursor.execute("SELECT " + ", ".join(parts))
        row = cursor.fetchone()
    return ":".join([connection.alias, *(str(value) for value in row)])


def _cache_key(kind: str, *request: Any) -> str:
    """A cache key for a request: its parts, with filters as dicts and scope sorted."""
    parts = [
        filters_as_dict(part)
        if isinstance(part, SearchFilters)
        else sorted(part)
        if isinstance(part, list | tuple)
        else part
        for part in request
    ]
    digest = hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()
    return f"facets:{kind}:{digest}"
