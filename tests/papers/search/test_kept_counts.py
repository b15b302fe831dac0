"""Counts the database keeps (papers/search/kept_counts.py): each author's number of paper
links (papers migration 0019) and the papers per venue and per year (0020). Always equal
to the rows grouped, through inserts, deletes, values changed, bulk writes and folds, on
both databases; the whole library's facets read them instead of grouping every row; and
on PostgreSQL two writers linking the same authors do not wait for each other.
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
from papers.models import Author, Paper, PaperAuthor, Venue
from papers.schemas import PaperRecord
from papers.search import kept_counts
from papers.search.facets import top_facets
from papers.search.types import SearchFilters
from papers.services import papers_upsert


def grouped() -> dict[int, int]:
    """What the counts must equal: every author's links, grouped."""
    rows = PaperAuthor.objects.order_by().values_list("author_id").annotate(n=Count("pk"))
    return dict(rows)


def kept() -> dict[int, int]:
    everyone = kept_counts.author_candidates(100_000)
    assert everyone.bound == 0  # every author with links is among them
    return everyone.counts


def pending(table: str = "papers_author_link_delta") -> int:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT COUNT(*) FROM {table}")  # noqa: S608
        return int(cursor.fetchone()[0])


def papers_grouped(column: str) -> dict[int, int]:
    """What the kept papers per value must equal: the papers grouped by the column."""
    rows = (
        Paper.objects.order_by()
        .filter(**{f"{column}__isnull": False})
        .values_list(column)
        .annotate(n=Count("pk"))
    )
    return dict(rows)


def values_agree() -> bool:
    venues, years = papers_grouped("venue_id"), papers_grouped("year")
    assert kept_counts.paper_values(kept_counts.VENUE) == venues
    assert kept_counts.paper_values(kept_counts.YEAR) == years
    return bool(venues or years)


def test_the_counts_follow_every_change_to_the_links(make_paper: Callable[..., Paper]) -> None:
    first = make_paper("Parsing", authors=["Ana Ruiz", "Bo Li"])
    second = make_paper("Tagging", authors=["Bo Li", "Cy Wu"])
    make_paper("Vision", authors=["Cy Wu", "Bo Li", "Dee Park"])
    assert kept() == grouped() != {}
    kept_counts.fold()
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
    kept_counts.fold()
    assert kept() == grouped()
    PaperAuthor.objects.filter(author=dee).delete()
    kept_counts.fold()
    assert dee.pk not in kept()
    assert kept() == grouped()


def test_the_papers_per_venue_and_year_follow_every_change(
    make_paper: Callable[..., Paper],
) -> None:
    first = make_paper("Parsing", venue="ACL 2020", year=2020)
    second = make_paper("Tagging", venue="ACL 2020", year=2021)
    make_paper("Vision", venue="EMNLP 2021", year=2021)
    make_paper("Undated", venue="", year=None)  # counted under neither
    assert values_agree()
    kept_counts.fold()
    assert pending("papers_paper_value_delta") == 0
    assert values_agree()

    second.delete()
    assert values_agree()
    emnlp = Venue.objects.get(name="EMNLP 2021")
    first.venue, first.year = emnlp, 2019  # an edit moves the paper
    first.save()
    assert values_agree()
    first.title = "Parsing, revised"  # neither changes
    first.save()
    Paper.objects.filter(year=2021).update(year=None)
    assert values_agree()
    papers_upsert(records=[
        PaperRecord.build(title=f"Bulk {n}", year=2018, venue="EMNLP 2021") for n in range(3)
    ])  # the bulk path  # fmt: skip
    assert values_agree()
    kept_counts.fold()
    assert values_agree()
    emnlp.delete()  # its papers keep no venue
    assert values_agree()
    kept_counts.fold()
    assert values_agree()


def test_the_whole_librarys_venue_and_year_facets_do_not_group_every_paper(
    make_paper: Callable[..., Paper],
) -> None:
    make_paper("Parsing", venue="ACL 2020", venue_short="acl", year=2020)
    make_paper("Tagging", venue="ACL 2021", venue_short="acl", year=2021)
    make_paper("Vision", venue="EMNLP 2021", venue_short="emnlp", year=2021)
    cache.clear()
    expected = {
        "venue": [("ACL 2020", 1), ("ACL 2021", 1), ("EMNLP 2021", 1)],
        "venue_short": [("acl", 2), ("emnlp", 1)],
        "year": [("2021", 2), ("2020", 1)],
    }
    for category, values in expected.items():
        with CaptureQueriesContext(connection) as queries:
            found = top_facets(category=category)
        assert [(v["name"], v["paper_count"]) for v in found] == values, category
        grouping_every_paper = 'COUNT("papers_paper"'
        assert not any(grouping_every_paper in q["sql"] for q in queries.captured_queries)
    # Over a subset they are grouped, and agree.
    acl = top_facets(category="year", filters=SearchFilters(venue="ACL*"))
    assert [(v["name"], v["paper_count"]) for v in acl] == [("2020", 1), ("2021", 1)]


def test_the_bound_covers_every_author_left_out(make_paper: Callable[..., Paper]) -> None:
    for n in range(1, 6):
        make_paper(f"Paper {n}", authors=[f"Author {k}" for k in range(n)])
    kept_counts.fold()
    make_paper("One more", authors=["Author 4", "Author 3"])  # pending, not folded
    counts = grouped()
    top = kept_counts.author_candidates(2)
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
    assert pending() == pending("papers_paper_value_delta") == 0
    assert values_agree()
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
    kept_counts.fold()
    assert kept() == grouped()


def test_a_long_import_folds_as_it_goes(db: None, monkeypatch: pytest.MonkeyPatch) -> None:
    from papers import imports

    folds: list[int] = []
    fold = kept_counts.fold
    monkeypatch.setattr(imports, "FOLD_EVERY", 10)
    monkeypatch.setattr(kept_counts, "fold", lambda: (folds.append(pending()), fold())[1])
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
    kept_counts.fold()
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_relation_size('papers_author_link_delta')")
        assert cursor.fetchone()[0] == 0
    assert kept() == grouped()
