"""Typo tolerance without stalls (issue 37, goal 4): a query never builds the vocabulary;
one background thread does; the papers this process writes are corrected towards at once.

The background builds read the database from their own thread (their own connection), so
these tests commit what they write (transactional_db)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from papers.schemas import PaperRecord
from papers.search import fulltext, vocabulary
from papers.search.local import local_search_ids
from papers.services import paper_upsert

THREAD_TIMEOUT = 60


class BlockedBuild:
    """Stands in for build_vocabulary: reads the library as the real one does when
    called, then holds its result until released; records each call's thread."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.read = threading.Event()
        self.threads: list[threading.Thread] = []
        self.real = vocabulary.build_vocabulary

    def __call__(self, using: str = "default") -> vocabulary.Vocabulary:
        self.threads.append(threading.current_thread())
        built = self.real(using)
        self.read.set()
        assert self.release.wait(THREAD_TIMEOUT), "the test never released the build"
        return built

    def wait_read(self) -> None:
        assert self.read.wait(THREAD_TIMEOUT), "no build started"

    def finish(self) -> None:
        self.release.set()
        for thread in self.threads:
            thread.join(THREAD_TIMEOUT)
            assert not thread.is_alive()


@pytest.fixture
def blocked_build(monkeypatch: pytest.MonkeyPatch) -> Iterator[BlockedBuild]:
    build = BlockedBuild()
    monkeypatch.setattr(vocabulary, "build_vocabulary", build)
    vocabulary.holder().install(None)  # a process that has not loaded it yet
    yield build
    build.finish()  # never leave a thread behind for the next test


def wait_until_built() -> None:
    deadline = time.monotonic() + THREAD_TIMEOUT
    while vocabulary.holder().building and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not vocabulary.holder().building


def add(title: str, authors: list[str]) -> int:
    paper, _ = paper_upsert(record=PaperRecord.build(title=title, authors=authors, year=2017))
    return paper.paper_id


def search(query: str) -> Any:
    return fulltext.paper_search(query=query, limit=10)


@pytest.mark.django_db(transaction=True)
def test_a_query_answers_at_once_while_the_vocabulary_builds_in_the_background(
    blocked_build: BlockedBuild,
) -> None:
    paper_id = add("Attention Is All You Need", ["Ashish Vaswani"])
    page = search("atention")  # misspelt: no exact hit
    # Answered while the build is still held: the query did not wait for it.
    assert not blocked_build.release.is_set()
    assert page.hits == [] and page.mode == "fulltext"
    assert fulltext.TYPO_TOLERANCE_LOADING in page.notes
    blocked_build.wait_read()
    assert [t.name for t in blocked_build.threads] == ["search-vocabulary-default"]
    assert blocked_build.threads[0] is not threading.current_thread()

    blocked_build.finish()
    page = search("atention")
    assert page.mode == "fuzzy" and [h.record["paper_id"] for h in page.hits] == [paper_id]
    assert fulltext.TYPO_TOLERANCE_LOADING not in page.notes
    assert "**Attention**" in page.hits[0].snippet_markdown
    # The list interfaces (admin, facets) take the same path, without a note to carry.
    assert local_search_ids(query="atention", rerank=False).ids == [paper_id]


@pytest.mark.django_db(transaction=True)
def test_only_one_build_runs_at_a_time(blocked_build: BlockedBuild) -> None:
    add("Attention Is All You Need", ["Ashish Vaswani"])
    holder = vocabulary.holder()
    for _ in range(3):
        search("atention")
        assert vocabulary.current_vocabulary() is None
    assert holder.refresh_in_background() is None  # one is running
    blocked_build.wait_read()
    assert len(blocked_build.threads) == 1

    blocked_build.finish()
    loaded = vocabulary.current_vocabulary()
    assert loaded is not None and "attention" in loaded.known
    # Too old: the held one still answers, and one rebuild starts behind it.
    blocked_build.release.clear()
    blocked_build.read.clear()
    loaded.built_at -= vocabulary.VOCABULARY_TTL + 1
    assert vocabulary.current_vocabulary() is loaded
    assert search("atention").mode == "fuzzy"
    blocked_build.wait_read()
    assert holder.refresh_in_background() is None
    assert len(blocked_build.threads) == 2
    blocked_build.finish()
    assert vocabulary.current_vocabulary() is not loaded


@pytest.mark.django_db(transaction=True)
def test_a_failed_build_is_logged_and_the_query_still_answers(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    calls: list[threading.Thread] = []

    def broken(using: str = "default") -> vocabulary.Vocabulary:
        calls.append(threading.current_thread())
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(vocabulary, "build_vocabulary", broken)
    vocabulary.holder().install(None)
    add("Attention Is All You Need", ["Ashish Vaswani"])
    with caplog.at_level("WARNING", logger="papers.search.vocabulary"):
        assert fulltext.TYPO_TOLERANCE_LOADING in search("atention").notes
        wait_until_built()
    assert "Building the typo-tolerance vocabulary failed" in caplog.text
    search("atention")
    assert len(calls) == 1  # not retried by every query (RETRY_AFTER_FAILURE)


@pytest.mark.django_db
def test_a_paper_written_in_this_process_is_found_by_a_typo_at_once() -> None:
    # A vocabulary built from the library as it was (conftest: loaded, empty library).
    assert vocabulary.current_vocabulary() is not None
    paper_id = add("Sparse Transformers for Summarisation", ["Grzegorz Brzęczyszczykiewicz"])
    page = search("summarisaton")
    assert page.mode == "fuzzy" and [h.record["paper_id"] for h in page.hits] == [paper_id]
    # An author's name, accents folded as the index folds them.
    page = search("brzeczyszczykiewic")
    assert [h.record["paper_id"] for h in page.hits] == [paper_id]


@pytest.mark.django_db(transaction=True)
def test_papers_written_while_a_build_reads_are_kept_when_it_swaps_in(
    blocked_build: BlockedBuild,
) -> None:
    search("atention")  # starts the build; it reads an empty library
    blocked_build.wait_read()
    paper_id = add("Attention Is All You Need", ["Ashish Vaswani"])  # after that read
    blocked_build.finish()
    loaded = vocabulary.current_vocabulary()
    assert loaded is not None and {"attention", "vaswani"} <= set(loaded.known)
    assert [h.record["paper_id"] for h in search("atention").hits] == [paper_id]


@pytest.mark.django_db(transaction=True)
def test_a_misspelt_query_does_not_wait_for_the_models_a_start_is_loading(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """While a server's warm-up loads the embedding models (holding their lock), a query
    whose words match too few papers for hybrid ranking (a misspelling) is answered by
    typo-tolerant full text without waiting for the load: it no longer asks first whether
    the library has vectors, which needs the models. A question still waits for them."""
    from papers.search import embedding
    from papers.search.local import local_search

    paper_id = add("Attention Is All You Need", ["Ashish Vaswani"])
    vocabulary.holder().install(vocabulary.build_vocabulary())
    monkeypatch.setattr(embedding, "_loaded", {})  # none loaded yet in this process
    answers: list[Any] = []

    def misspelt() -> None:
        answers.append(local_search(query="atention", limit=5))

    with embedding._lock:  # the warm-up's load, under way
        thread = threading.Thread(target=misspelt)
        thread.start()
        thread.join(THREAD_TIMEOUT)
        waited = thread.is_alive()
    thread.join(THREAD_TIMEOUT)
    assert not waited, "the misspelt query waited for the models"
    (page,) = answers
    assert [hit.record["paper_id"] for hit in page.hits] == [paper_id]
    assert page.mode != "hybrid"
