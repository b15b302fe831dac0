"""The search box of the admin's paper lists (the Paper list, a project's papers, the
library picker and autocomplete): identifiers match exactly, words go through the
library's one ranking (local.local_search_ids: hybrid for questions once there are
vectors, as search_papers), and the list is ordered by it (papers.admin's changelist
orders by SEARCH_RANK)."""

from __future__ import annotations

import re
import threading
import uuid
from collections import OrderedDict
from collections.abc import Mapping, Sequence

from django.db import connection
from django.db.models import Q, QuerySet
from django.db.models.expressions import RawSQL

from core.errors import InvalidInput
from core.sql import among_ids
from papers.models import Paper
from papers.search.local import LocalRanking, local_search_ids
from papers.search.types import SearchFilters

ADMIN_SEARCH_MAX_HITS = 10_000
# The annotation paper_search_admin adds: a paper's place in the full-text ranking (0 for
# an exact identifier match, so those come first); the admin orders by it.
SEARCH_RANK = "search_rank"


# On SQLite the rank is looked up by a function of the connection (`search_rank(token,
# paper_id)`) in a ranking kept here under a token: a dict lookup per row. (instr() over
# the ids joined in one string scanned that string once per row: ~0.9 s for 9,000 hits at
# 20k papers.) The last MAX_RANKINGS rankings are kept; a queryset is evaluated in the
# request that made it, long before its ranking is dropped.
MAX_RANKINGS = 64
_rankings: OrderedDict[str, dict[int, int]] = OrderedDict()
_rankings_lock = threading.Lock()


def _ranking_token(ranked_ids: Sequence[int]) -> str:
    token = uuid.uuid4().hex
    with _rankings_lock:
        _rankings[token] = {int(pk): place for place, pk in enumerate(ranked_ids, 1)}
        while len(_rankings) > MAX_RANKINGS:
            _rankings.popitem(last=False)
    return token


def _search_rank(token: str, paper_id: int) -> int:
    ranking = _rankings.get(token)
    return ranking.get(paper_id, 0) if ranking is not None else 0


def with_search_rank(queryset: QuerySet[Paper], ranked_ids: Sequence[int]) -> QuerySet[Paper]:
    """The queryset annotated with SEARCH_RANK: 1 for the first of `ranked_ids`, 2 for the
    second..., 0 for the papers not among them; ordered by it (then newest first), which
    the autocomplete keeps and the changelist re-applies unless a column is clicked."""
    if connection.vendor == "postgresql":
        rank = RawSQL(
            "COALESCE(array_position(%s::bigint[], papers_paper.paper_id), 0)", [list(ranked_ids)]
        )
    else:
        connection.ensure_connection()
        connection.connection.create_function("search_rank", 2, _search_rank, deterministic=True)
        rank = RawSQL("search_rank(%s, papers_paper.paper_id)", [_ranking_token(ranked_ids)])
    return queryset.annotate(**{SEARCH_RANK: rank}).order_by(SEARCH_RANK, "-paper_id")


def identifier_match(term: str) -> Q:
    """The papers a search box's term names exactly: paper_id, human id, citekey or DOI."""
    condition = Q(citekey=term) | Q(human_id=term) | Q(doi=term.lower())
    if term.isdigit():
        condition |= Q(pk=int(term))
    return condition


def admin_search_filters(params: Mapping[str, str]) -> SearchFilters | None:
    """The list filters of an admin paper list that are search filters too (`year`: 2019
    or 2018-2020, `project`), so a filtered list is ranked as search_papers ranks with
    those filters (hybrid fusion depends on the papers ranked, not only their order).
    The other list filters (venue contains, keyword, source...) narrow the ranked list;
    a value the list filter refuses is left out here as there."""
    year = (params.get("year") or "").strip()
    low, _, high = year.partition("-")
    year_from = year_to = None
    if low.isdigit() and (not high or high.isdigit()):
        year_from, year_to = int(low), int(high or low)
    project = (params.get("project") or "").strip() or None
    if year_from is None and project is None:
        return None
    return SearchFilters(year_from=year_from, year_to=year_to, project=project)


def paper_search_admin(
    queryset: QuerySet[Paper], term: str, filters: SearchFilters | None = None
) -> QuerySet[Paper]:
    """The admin's search box (see paper_search_admin_ranked), as a queryset only."""
    return paper_search_admin_ranked(queryset, term, filters)[0]


def paper_search_admin_ranked(
    queryset: QuerySet[Paper], term: str, filters: SearchFilters | None = None
) -> tuple[QuerySet[Paper], LocalRanking | None]:
    """The admin's search box: identifiers (paper_id, human id, citekey, DOI) match
    exactly, and words are ranked as search_papers ranks them (`local_search_ids`). The
    queryset carries SEARCH_RANK (best first: identifier matches, then the search's
    ranking); the ranking (None for an empty term or a query that is not one) tells the
    results list whether the words were respelled. Text that is still not a valid query
    (a misused operator) falls back to a plain title/author match, so the box never
    errors."""
    term = term.strip()
    if not term:
        return queryset, None
    condition = identifier_match(term)
    ranking: LocalRanking | None
    try:
        ranking = local_search_ids(query=term, filters=filters, limit=ADMIN_SEARCH_MAX_HITS)
    except InvalidInput:
        ranking = None
        plain = " ".join(re.sub(r'["()*]', " ", term).split())
        condition |= Q(title__icontains=plain) | Q(authors_string__icontains=plain)
    else:
        # The ranked ids as one parameter: Django's IN (...) prepares each of up to
        # ADMIN_SEARCH_MAX_HITS in Python, every time the list's queries are compiled.
        condition |= Q(pk__in=among_ids(ranking.ids))
    ids = ranking.ids if ranking is not None else []
    return with_search_rank(queryset.filter(condition), ids), ranking
