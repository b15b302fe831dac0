"""Each author's number of paper links, kept by the database (papers/search/link_counts.py,
papers migration 0019): always equal to the links grouped by author, through inserts,
deletes, links moved to another author, bulk writes and folds, on both databases; the
whole library's author facet ranks by them instead of grouping every link; and on
PostgreSQL two writers linking the same authors do not wait for each other.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from django.core.cache import cache
from django.db import connection, connections, transaction
from django.db.models import Count
from django.test.utils import CaptureQueriesContext

from papers.imports import RawItem, import_records
from papers.models import Author, Paper, PaperAuthor
from papers.schemas import PaperRecord
from papers.search import link_counts
from papers.search.facets import top_facets


def grouped() -> dict[int, int]:
    """What the counts must equal: every author's links, grouped."""
    rows = PaperAuthor.objects.order_by().values_list("author_id").annotate(n=Count("pk"))
    return dict(rows)


def kept() -> dict[int, int]:
    everyone = link_counts.candidates(100_000)
    assert everyone.bound == 0  # every author with links is among them
    return everyone.counts


def pending() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT COUNT(*) FROM papers_author_link_delta")
        return int(cursor.fetchone()[0])


def test_the_counts_follow_every_change_to_the_links(make_paper: Callable[..., Paper]) -> None:
    first = make_paper("Parsing", authors=["Ana Ruiz", "Bo Li"])
    second = make_paper("Tagging", authors=["Bo Li", "Cy Wu"])
    make_paper("Vision", authors=["Cy Wu", "Bo Li", "Dee Park"])
    assert kept() == grouped() != {}
    link_counts.fold()
    assert pending() == 0
    assert kept() == grouped()

    second.delete()  # its links go with it
    assert kept() == grouped()
    ana, dee = Author.objects.get(name="Ana Ruiz"), Author.objects.get(name="Dee Park")
    PaperAuthor.objects.filter(author=ana).update(author=dee)  # an author merged
    assert ana.pk not in kept()
    assert kept() == grouped()
    PaperAuthor.objects.bulk_create(
        PaperAuthor(paper=first, author=dee, position=position) for position in (5, 6)
    )  # the same author twice on a paper: links, not papers
    PaperAuthor.objects.filter(paper=first, position=0).update(position=9)  # no author moved
    assert kept() == grouped()
    link_counts.fold()
    assert kept() == grouped()
    PaperAuthor.objects.filter(author=dee).delete()
    link_counts.fold()
    assert dee.pk not in kept()
    assert kept() == grouped()


def test_the_bound_covers_every_author_left_out(make_paper: Callable[..., Paper]) -> None:
    for n in range(1, 6):
        make_paper(f"Paper {n}", authors=[f"Author {k}" for k in range(n)])
    link_counts.fold()
    make_paper("One more", authors=["Author 4", "Author 3"])  # pending, not folded
    counts = grouped()
    top = link_counts.candidates(2)
    assert len(top.counts) == 2
    assert all(counts[author] == n for author, n in top.counts.items())
    left_out = [n for author, n in counts.items() if author not in top.counts]
    assert max(left_out) <= top.bound
    assert min(top.counts.values()) >= max(left_out)


def test_an_import_folds_what_it_changed(db: None) -> None:
    rows = [
        {"title": f"Imported {n}", "authors": ["Ana Ruiz", f"Coauthor {n}"], "year": 2020}
        for n in range(30)
    ]
    items = [RawItem(location=f"line {n}", data=row) for n, row in enumerate(rows, 1)]
    report = import_records(items, build=lambda data: PaperRecord.build(**data))
    assert report.created == 30
    assert pending() == 0
    assert kept()[Author.objects.get(name="Ana Ruiz").pk] == 30
    assert kept() == grouped()


def test_the_whole_librarys_author_facet_does_not_group_every_link(
    make_paper: Callable[..., Paper],
) -> None:
    make_paper("Parsing", authors=["Ana Ruiz", "Bo Li"])
    make_paper("Tagging", authors=["Bo Li"])
    cache.clear()
    with CaptureQueriesContext(connection) as queries:
        values = top_facets(category="author")
    assert [(v["name"], v["paper_count"]) for v in values] == [("Bo Li", 2), ("Ana Ruiz", 1)]
    grouping_every_link = 'COUNT("papers_paperauthor"."id")'
    assert not any(grouping_every_link in query["sql"] for query in queries.captured_queries)


@pytest.mark.django_db(transaction=True)
def test_two_writers_linking_the_same_authors_do_not_wait_for_each_other(
    make_paper: Callable[..., Paper],
) -> None:
    """PostgreSQL: a count row updated by every writer would make two imports of papers by
    the same authors take turns until each commits, and deadlock when they link them in
    opposite orders; the changes are appended instead."""
    if connection.vendor != "postgresql":
        pytest.skip("SQLite's writers take turns anyway")
    make_paper("Their first paper", authors=["Ana Ruiz", "Bo Li"])
    papers = [make_paper(f"Paper {n}", authors=[]) for n in range(2)]
    ana, bo = Author.objects.get(name="Ana Ruiz"), Author.objects.get(name="Bo Li")
    both_linked_one = threading.Barrier(2, timeout=10)
    errors: list[BaseException] = []

    def link(paper: Paper, authors: list[Author]) -> None:
        try:
            with transaction.atomic():
                with connection.cursor() as cursor:
                    cursor.execute("SET LOCAL lock_timeout = '5s'")
                PaperAuthor.objects.create(paper=paper, author=authors[0], position=0)
                both_linked_one.wait()
                PaperAuthor.objects.create(paper=paper, author=authors[1], position=1)
        except BaseException as error:  # reported to the test
            errors.append(error)
        finally:
            connections.close_all()

    threads: list[Any] = [
        threading.Thread(target=link, args=(papers[0], [ana, bo])),
        threading.Thread(target=link, args=(papers[1], [bo, ana])),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert kept() == grouped() == {ana.pk: 3, bo.pk: 3}
    link_counts.fold()
    assert kept() == grouped()


def test_a_long_import_folds_as_it_goes(db: None, monkeypatch: pytest.MonkeyPatch) -> None:
    from papers import imports

    folds: list[int] = []
    fold = link_counts.fold
    monkeypatch.setattr(imports, "FOLD_EVERY", 10)
    monkeypatch.setattr(link_counts, "fold", lambda: (folds.append(pending()), fold())[1])
    rows = [{"title": f"Paper {n}", "authors": [f"Author {n}"], "year": 2020} for n in range(25)]
    items = [RawItem(location=f"line {n}", data=row) for n, row in enumerate(rows, 1)]
    import_records(items, build=lambda data: PaperRecord.build(**data), batch_size=5)
    # after 10 and 20 records, and at the end: never more than 10 records' links pending
    assert folds == [10, 10, 5]
    assert pending() == 0
    assert kept() == grouped()


@pytest.mark.django_db(transaction=True)
def test_a_fold_leaves_no_deleted_rows_to_read_on_postgresql(
    make_paper: Callable[..., Paper],
) -> None:
    """PostgreSQL keeps deleted rows until a VACUUM, and reading the pending changes reads
    them all: half a second at 500k papers after an import's fold, until vacuumed."""
    if connection.vendor != "postgresql":
        pytest.skip("SQLite's deleted rows leave the table at once")
    for n in range(3):
        make_paper(f"Paper {n}", authors=["Ana Ruiz", f"Coauthor {n}"])
    assert pending() > 0
    link_counts.fold()
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_relation_size('papers_author_link_delta')")
        assert cursor.fetchone()[0] == 0
    assert kept() == grouped()
