"""The papers a filter allows, kept between searches (papers/search/kept_filters.py): the
next search with the same filters reads no ids, and any change a filter could see (an
insert, a delete, an edit in place of a year, a venue's name, a project's membership) is
seen by the next search, on both databases; a change rolled back leaves nothing stale.

Transactional tests: the generations a kept list is checked against are renewed by
triggers (PostgreSQL: at the commit), as a server's writes renew them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from papers.models import Keyword, Paper, PaperKeyword, PaperPdf, Venue
from papers.search import kept_filters, lexical, native, semantic
from papers.search import query as q
from papers.search.filters import filters_from_payload
from papers.search.fulltext import search_restrictions
from papers.search.local import local_search
from papers.search.types import SearchFilters
from projects.models import Project, ProjectPaper
from projects.services import project_add_papers
from tests.papers.search.builders import TEXTS

pytestmark = pytest.mark.django_db(transaction=True)

QUESTION = "machine translation of speech"


@pytest.fixture
def library(
    make_paper: Callable[..., Paper], make_project: Callable[..., Project]
) -> Iterator[list[Paper]]:
    """TEXTS thrice, published 2015-2022 at two venues, with their vectors (a hybrid
    search's two rankings both read the allowed ids); the first half in a project."""
    kept_filters.clear()
    papers = [
        make_paper(
            f"{title}, part {index}",
            abstract=abstract,
            year=2015 + index % 8,
            venue="ACL" if index % 2 else "EMNLP",
        )
        for index, (title, abstract) in enumerate(TEXTS * 3)
    ]
    project = make_project("Speech")
    project_add_papers(project=project, paper_ids=[p.pk for p in papers[: len(papers) // 2]])
    semantic.vector_index().reset()
    semantic.embed_papers([paper.pk for paper in papers])
    yield papers
    semantic.vector_index().reset()
    kept_filters.clear()


def add_pdf(paper: Paper) -> None:
    """A PDF row (the filter reads the rows, not the files)."""
    PaperPdf.objects.create(
        paper=paper, file_name=f"{paper.pk}.pdf", sha256="0" * 64, size=1, page_count=1,
        origin=PaperPdf.Origin.ATTACHED,
    )  # fmt: skip


def search(filters: dict[str, Any]) -> tuple[set[int], int]:
    """The papers a hybrid search with these filters returns (every match: a page of
    them all), and how many times it read every allowed id."""
    with CaptureQueriesContext(connection) as queries:
        page = local_search(query=QUESTION, filters=filters_from_payload(filters), limit=50)
    # Ranked by meaning too, unless the words matched too few papers to ask for it.
    assert page.mode == "hybrid" or page.total < 3
    reads = sum(
        "group_concat(paper_id)" in query["sql"] or "string_agg(paper_id" in query["sql"]
        for query in queries.captured_queries
    )
    return {hit.record["paper_id"] for hit in page.hits}, reads


def allowed(filters: dict[str, Any]) -> set[int]:
    """What the filters allow, asked of the database directly."""
    sql, params = lexical.intersection(search_restrictions(filters_from_payload(filters), None))
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return {row[0] for row in cursor.fetchall()}


def searched_twice(filters: dict[str, Any]) -> set[int]:
    """The first search reads the allowed ids, the second takes the kept list."""
    first, reads = search(filters)
    assert reads == 1
    second, reads = search(filters)
    assert (second, reads) == (first, 0)
    assert first and first <= allowed(filters)
    return first


def test_the_next_search_with_the_same_filters_reads_no_ids(library: list[Paper]) -> None:
    found = searched_twice({"year": "2018-"})
    assert found == {p.pk for p in library if p.year >= 2018} & found
    # Other filters are lists of their own.
    assert search({"year": "2019-"})[1] == 1


def test_a_year_edited_in_place_is_seen_by_the_next_search(library: list[Paper]) -> None:
    filters = {"year": "2018-"}
    searched_twice(filters)
    old = library[0]  # 2015
    Paper.objects.filter(pk=old.pk).update(year=2020)
    found, reads = search(filters)
    assert reads == 1
    assert old.pk in found  # it matches the question's words
    assert found <= allowed(filters)
    # Moved out again by a save of the whole row, as the admin does.
    paper = Paper.objects.get(pk=old.pk)
    paper.year = 2016
    paper.save()
    found, _ = search(filters)
    assert old.pk not in found
    assert old.pk not in allowed(filters)


def test_a_venue_renamed_and_a_paper_moved_are_seen(library: list[Paper]) -> None:
    filters = {"venue": "ACL"}
    before = searched_twice(filters)
    Venue.objects.filter(name="ACL").update(name="NAACL", name_key="naacl")
    found, reads = search(filters)
    assert (found, reads) == (set(), 1)
    Venue.objects.filter(name="NAACL").update(name="ACL", name_key="acl")
    assert search(filters)[0] == before
    emnlp = Venue.objects.get(name="EMNLP")
    moved = next(p for p in library if p.pk not in allowed(filters))
    Paper.objects.filter(pk=moved.pk).update(venue=Venue.objects.get(name="ACL"))
    assert moved.pk in allowed(filters)
    Paper.objects.filter(pk=moved.pk).update(venue=emnlp)
    assert search(filters)[0] == before


def test_project_membership_added_and_removed_is_seen(library: list[Paper]) -> None:
    filters = {"project": "Speech"}
    members = searched_twice(filters)
    gone = next(iter(members))
    ProjectPaper.objects.filter(paper_id=gone).delete()
    found, reads = search(filters)
    assert reads == 1 and gone not in found
    newcomer = library[-1]
    assert newcomer.pk not in allowed(filters)
    project_add_papers(project=Project.objects.get(name="Speech"), paper_ids=[newcomer.pk])
    assert newcomer.pk in allowed(filters)
    assert search(filters)[0] <= allowed(filters)


def test_a_pdf_removed_and_a_paper_deleted_are_seen(library: list[Paper]) -> None:
    with_pdf = library[:4]
    for paper in with_pdf:
        add_pdf(paper)
    filters = {"has_pdf": True}
    assert searched_twice(filters) <= {p.pk for p in with_pdf}
    PaperPdf.objects.filter(paper=with_pdf[0]).delete()
    assert with_pdf[0].pk not in search(filters)[0]
    Paper.objects.filter(pk=with_pdf[1].pk).delete()
    found, reads = search(filters)
    assert reads == 1 and found <= {with_pdf[2].pk, with_pdf[3].pk}


def test_a_change_rolled_back_leaves_nothing_stale(library: list[Paper]) -> None:
    """A search inside a transaction sees its own change; after the rollback the next
    search sees the data as it is, never the list read inside."""
    filters = {"year": "2018-"}
    before = searched_twice(filters)
    old = library[0]
    with transaction.atomic():
        Paper.objects.filter(pk=old.pk).update(year=2021)
        assert old.pk in allowed(filters)
        inside, _ = search(filters)
        assert old.pk in inside  # it matches the question's words
        assert inside <= allowed(filters)
        transaction.set_rollback(True)
    after, _ = search(filters)
    assert after == before
    assert old.pk not in after
    # And committed, the same change is seen.
    Paper.objects.filter(pk=old.pk).update(year=2021)
    assert old.pk in search(filters)[0]


@pytest.mark.parametrize(
    "filters",
    [
        {"year": "2018-"},
        {"venue": "AC*"},
        {"project": "Speech"},
        {"author": "Vaswani"},
        {"keyword": "speech"},
        {"category": "cs.CL"},
        {"institution": "MIT"},
        {"has_pdf": False},
        {"doi": "10.1/x"},
        {"source": "arxiv"},
        {"url": "*arxiv*"},
        {"has_pdf_url": True},
    ],
)
def test_every_filter_reads_only_watched_tables(library: list[Paper], filters: dict) -> None:
    sql, _ = lexical.intersection(search_restrictions(filters_from_payload(filters), None))
    assert kept_filters.tables_read(sql) is not None


def test_a_scoped_clients_restriction_reads_only_watched_tables(library: list[Paper]) -> None:
    restriction = search_restrictions(filters_from_payload({"year": "2018-"}), ["Speech"])
    assert kept_filters.tables_read(lexical.intersection(restriction)[0]) == (
        "papers_paper",
        "projects_projectpaper",
    )


def test_what_no_generation_covers_is_read_at_every_search() -> None:
    match = lexical.intersection([native.match_restriction(q.Term("speech"))])[0]
    assert kept_filters.tables_read(match) is None
    unwatched = (
        'SELECT "papers_paper"."paper_id" FROM "papers_paper" WHERE "papers_paper"."title" = %s'
    )
    assert kept_filters.tables_read(unwatched) is None
    bare = 'SELECT "papers_paper"."paper_id" FROM "papers_paper" p WHERE p.title = %s'
    assert kept_filters.tables_read(bare) is None
    assert kept_filters.tables_read("SELECT paper_id FROM papers_paper") is None


def generations() -> dict[str, int]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT name, n FROM papers_table_generation")
        return dict(cursor.fetchall())


def test_every_watched_table_and_column_renews_its_generation(library: list[Paper]) -> None:
    """Each table a filter may read renews its generation on insert, on an update of any
    column a filter may read, and on delete: a migration that remade a table without its
    triggers would fail here."""
    keyword = Keyword.objects.create(name="speech", name_key="speech")
    PaperKeyword.objects.create(paper=library[0], keyword=keyword)
    add_pdf(library[0])
    watched = kept_filters.watched_tables()
    assert watched <= set(generations())
    quote = connection.ops.quote_name
    for table in sorted(watched):
        with connection.cursor() as cursor:
            columns = [
                c.name for c in connection.introspection.get_table_description(cursor, table)
            ]
            cursor.execute(f"SELECT count(*) FROM {quote(table)}")  # noqa: S608
            if not cursor.fetchone()[0]:
                continue
        if table == Paper._meta.db_table:
            columns = sorted(kept_filters.PAPER_COLUMNS)
        for column in columns:
            before = generations()[table]
            with connection.cursor() as cursor:
                cursor.execute(f"UPDATE {quote(table)} SET {quote(column)} = {quote(column)}")  # noqa: S608
            assert generations()[table] != before, (table, column)
    before = generations()
    Paper.objects.filter(pk=library[0].pk).delete()  # its links, pdf and memberships too
    after = generations()
    for table in (
        "papers_paper",
        "papers_paperauthor",
        "papers_paperkeyword",
        "papers_paperpdf",
        "projects_projectpaper",
    ):
        assert after[table] != before[table], table
    before = generations()
    Keyword.objects.all().delete()
    Venue.objects.all().delete()
    Project.objects.all().delete()
    after = generations()
    for table in ("papers_keyword", "papers_venue", "projects_project"):
        assert after[table] != before[table], table
    untouched = generations()["papers_paper"]
    with connection.cursor() as cursor:
        cursor.execute("UPDATE papers_paper SET title = title")
    assert generations()["papers_paper"] == untouched  # a column no filter reads


def test_a_library_with_no_filter_keeps_nothing(library: list[Paper]) -> None:
    kept_filters.clear()
    local_search(query=QUESTION, filters=SearchFilters())
    assert not kept_filters._kept.lists
