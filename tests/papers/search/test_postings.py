"""Postings held in memory (papers/search/lexical.py `PostingCache`, issue 19 part C) never
change an answer: searches after a paper is added, edited or deleted, by this connection
or another, inside a transaction rolled back or not, rank exactly as reading every
posting from the database would; the memory stays within its capacity.

The library's answers are checked through `local_search` (what `search_papers` runs for
engines "local") on both databases, every write committed as a server's would be (the
tests run outside a test transaction): on PostgreSQL the generation is renewed at the
commit (migration 0016), and a transaction that has written searches without the memory.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np
import pytest
from django.db import connection, connections, transaction
from django.test import override_settings

from papers.models import Paper
from papers.search import lexical, postings
from papers.search.local import local_search
from papers.services import paper_keywords_update
from tests.papers.search.builders import TEXTS

pytestmark = pytest.mark.django_db(transaction=True)

# Plain words (the aggregate) and strict queries (their matches scored one by one).
QUERIES = [
    "machine translation", "translation", "language models", "proteins", "reading",
    '"machine translation"', "translation OR proteins", "transl*", "translation -speech",
]  # fmt: skip


def found(query: str) -> list[int]:
    """The full-text ranking's papers (committed papers get vectors too: the hybrid
    ranking would add papers by meaning)."""
    page = local_search(query=query, limit=20, rerank=False)
    return [hit.record["paper_id"] for hit in page.hits]


def ranking(query: str) -> tuple[list[int], list[float], int]:
    page = local_search(query=query, limit=20, rerank=False)
    return [h.record["paper_id"] for h in page.hits], [h.score for h in page.hits], page.total


def on_another_connection(
    work: Callable[[], object],
) -> tuple[threading.Thread, list[BaseException]]:
    """`work` started on another thread (so another database connection, as another
    process's), and the list its exception lands in."""
    errors: list[BaseException] = []

    def run() -> None:
        try:
            work()
        except BaseException as exc:  # reported to the test
            errors.append(exc)
        finally:
            connections.close_all()

    thread = threading.Thread(target=run)
    thread.start()
    return thread, errors


@pytest.fixture
def library(make_paper: Callable[..., Paper]) -> list[Paper]:
    lexical.posting_cache_clear()
    papers = [make_paper(title, abstract=abstract) for title, abstract in TEXTS]
    # The statistics (N, average length, df) read afresh for this library: left from an
    # earlier test's, they change when their 30-second re-reading falls between two
    # rankings compared here (CI on PostgreSQL: the same order, other scores).
    postings.forget_stats()
    return papers


def test_answers_from_memory_equal_answers_read_every_time(library: list[Paper]) -> None:
    with override_settings(SEARCH_POSTINGS_CACHE_MB=0):
        expected = {query: ranking(query) for query in QUERIES}
    first = {query: ranking(query) for query in QUERIES}  # reads and keeps the lists
    again = {query: ranking(query) for query in QUERIES}  # from memory
    assert first == expected
    assert again == expected
    with connection.cursor() as cursor:
        cache = lexical.posting_cache(cursor)
    assert cache is not None and cache.size > 0


def test_a_paper_added_after_a_search_is_found(
    library: list[Paper], make_paper: Callable[..., Paper]
) -> None:
    before = found("translation")
    added = make_paper("Translation memories for subtitles", abstract="Subtitle translation.")
    after = found("translation")
    assert added.pk not in before
    assert added.pk in after
    assert len(after) == len(before) + 1


def test_an_edited_paper_is_ranked_by_its_new_text(library: list[Paper]) -> None:
    protein = library[5]
    assert protein.pk not in found("translation")
    paper_keywords_update(refs=[protein.pk], action="set", keywords=["translation"])
    assert protein.pk in found("translation")
    paper_keywords_update(refs=[protein.pk], action="set", keywords=[])
    assert protein.pk not in found("translation")


def test_a_deleted_paper_leaves_the_results(library: list[Paper]) -> None:
    assert library[0].pk in found("attention")
    before = local_search(query="machine translation", limit=20, rerank=False).total
    Paper.objects.filter(pk=library[0].pk).delete()  # the database's trigger drops postings
    assert local_search(query="attention", limit=20, rerank=False).total == 0
    after = local_search(query="machine translation", limit=20, rerank=False)
    assert library[0].pk not in [hit.record["paper_id"] for hit in after.hits]
    assert after.total == before - 1


def test_a_change_rolled_back_then_another_committed_is_not_mistaken_for_it(
    library: list[Paper], make_paper: Callable[..., Paper]
) -> None:
    """A number counted up would come back to the same value after a rollback: the lists
    kept inside the rolled-back transaction would then pass for the next change's."""
    with pytest.raises(RuntimeError), transaction.atomic():
        make_paper("Coral reefs", abstract="Reef ecology.")
        ghost = make_paper("Quantum chromodynamics on lattices", abstract="Quantum fields.")
        assert found("quantum") == [ghost.pk]
        raise RuntimeError("roll back")
    # As many changes again, the quantum paper first this time (SQLite may give it the id
    # the rolled-back coral paper had); no search in between.
    real = make_paper("Quantum computing for chemistry", abstract="Qubits and molecules.")
    make_paper("Desert ecology", abstract="Dunes.")
    assert found("quantum") == [real.pk]


def test_a_search_inside_the_writing_transaction_sees_its_write(
    library: list[Paper], make_paper: Callable[..., Paper]
) -> None:
    """PostgreSQL renews the generation only at the commit: a transaction that has
    written must not be answered from lists kept before its write."""
    before = found("translation")
    with transaction.atomic():
        added = make_paper("Subtitle translation at scale", abstract="Subtitles translated.")
        inside = found("translation")
        assert added.pk in inside and len(inside) == len(before) + 1
    assert found("translation") == inside


def test_emptied_postings_are_seen(library: list[Paper]) -> None:
    """A rebuild empties the postings first (TRUNCATE on PostgreSQL, which fires no row
    trigger: a statement trigger renews the generation)."""
    terms = lexical.query_terms(["translation"])
    assert lexical.rank(terms, limit=5).ids
    with transaction.atomic():
        postings.clear_index()
    assert lexical.rank(terms, limit=5).ids == []


def test_a_write_by_another_connection_is_seen(make_paper: Callable[..., Paper]) -> None:
    """Another connection (here another thread's; another process's is the same to SQLite)
    commits a paper after this one kept the lists: the next search finds it."""
    lexical.posting_cache_clear()
    make_paper("Dialogue state tracking", abstract="Tracking dialogue states.")
    assert len(found("dialogue")) == 1
    writer, errors = on_another_connection(
        lambda: make_paper("Open-domain dialogue systems", abstract="Chit-chat dialogue.")
    )
    writer.join()
    assert not errors
    assert len(found("dialogue")) == 2
    # The ranking itself (search_papers adds the engine's own matches when fewer than
    # three papers rank, which would hide a stale list here).
    assert len(lexical.rank(lexical.query_terms(["dialogue"]), limit=5).ids) == 2


def test_two_writers_do_not_wait_for_each_other(make_paper: Callable[..., Paper]) -> None:
    """PostgreSQL: the generation is renewed at the commit, so a transaction that has
    indexed a paper and not yet committed does not hold back another writer (a trigger at
    the first write would lock the generation's row until its commit)."""
    if connection.vendor != "postgresql":
        pytest.skip("SQLite's writers take turns anyway")
    written, release = threading.Event(), threading.Event()

    def slow_writer() -> None:
        with transaction.atomic():
            make_paper(
                "Coreference resolution in dialogue",
                abstract="Mentions.",
                authors=["Vincent Ng"],
                year=2010,
            )
            written.set()
            release.wait(30)

    writer, errors = on_another_connection(slow_writer)
    try:
        assert written.wait(30)
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL lock_timeout = '5s'")
            other = make_paper(
                "Coreference across documents",
                abstract="Entity mentions.",
                authors=["Heeyoung Lee"],
                year=2013,
            )
        assert other.pk in found("coreference")
    finally:
        release.set()
        writer.join()
    assert not errors
    assert len(found("coreference")) == 2


def test_memory_stays_within_capacity_least_recently_used_dropped_first() -> None:
    def postings(n: int) -> lexical.Postings:
        return np.arange(n, dtype=np.int32), np.ones(n, dtype=np.uint16)

    cache = lexical.PostingCache(capacity=10 * lexical.BYTES_PER_POSTING)
    cache.store("g1", {1: postings(4), 2: postings(4)})
    assert cache.snapshot([1])[1].keys() == {1}  # 1 used: 2 is now the least recent
    cache.store("g1", {3: postings(4)})
    generation, held = cache.snapshot([1, 2, 3])
    assert generation == "g1"
    assert held.keys() == {1, 3}
    assert cache.size <= cache.capacity
    cache.store("g1", {4: postings(6)})  # more than half the capacity: used, not kept
    assert 4 not in cache.snapshot([4])[1]
    cache.store("g2", {5: postings(2)})  # a new generation drops every list of the old
    assert cache.snapshot([1, 3, 5]) == ("g2", {5: cache.snapshot([5])[1][5]})


def test_no_memory_when_switched_off(library: list[Paper]) -> None:
    with override_settings(SEARCH_POSTINGS_CACHE_MB=0), connection.cursor() as cursor:
        assert lexical.posting_cache(cursor) is None
        assert found("translation")


def test_the_terms_held_at_exit_are_read_before_the_next_processes_first_search(
    library: list[Paper],
    settings: object,
    tmp_path: object,
    monkeypatch: pytest.MonkeyPatch,
    make_paper: Callable[..., Paper],
) -> None:
    settings.CACHE_DIR = tmp_path  # type: ignore[attr-defined]
    expected = {query: ranking(query) for query in QUERIES}
    with connection.cursor() as cursor:
        held = lexical.posting_cache(cursor).terms()  # type: ignore[union-attr]
    assert len(held) > 3
    lexical.save_held_terms()  # at exit
    lexical.posting_cache_clear()  # the next process
    read: list[list[int]] = []
    original = lexical._read_postings

    def counted(cursor: object, terms: list[int], *args: object, **kwargs: object) -> object:
        read.append(list(terms))
        return original(cursor, terms, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(lexical, "_read_postings", counted)
    assert lexical.preload_held_terms()[0] == len(held)
    with connection.cursor() as cursor:
        assert lexical.posting_cache(cursor).terms() == held  # type: ignore[union-attr]
    read.clear()
    assert {query: ranking(query) for query in QUERIES} == expected
    assert read and not any(read), "a search read a list the preload had read"
    # Held lists are still checked against the postings' generation.
    added = make_paper("Translation memories for subtitles", abstract="Subtitle translation.")
    assert added.pk in found("translation")


def test_no_saved_terms_or_an_unreadable_file_preloads_nothing(
    library: list[Paper], settings: object, tmp_path: object
) -> None:
    settings.CACHE_DIR = tmp_path  # type: ignore[attr-defined]
    assert lexical.preload_held_terms() == (0, 0)
    ranking("machine translation")
    lexical.save_held_terms()
    (saved,) = (tmp_path / "postings").glob("*.npy")  # type: ignore[operator]
    saved.write_bytes(b"not numpy")
    lexical.posting_cache_clear()
    assert lexical.preload_held_terms() == (0, 0)
    assert ranking("machine translation")[0]
