"""Loading what a first search needs in background threads when a server starts: the
typo-tolerance vocabulary (seconds at 95k papers: papers/search/vocabulary.py), the
embedding models (3-4 s, the bulk of a first search after a start when loaded on
demand), the vector index, one query encoded (a model's first encode sets itself up), and
the posting lists the last process held in memory at its exit (lexical.preload_held_terms).
Then two searches are rehearsed, a misspelt word and a question, through the path a
search tool takes (the server passes its own `rehearse`: the MCP tool's service and its
answer's encoding, saving nothing), so that what a first search still paid after the
models (the code's first run: lazy imports, Django's model metadata, the full-text tables
read from disk, the vector index's freshness check, the tool's answer built and encoded)
is paid here; and the whole library's facets are counted as `list_top_facets` asks for
them by default, into the facet cache. Last, a full garbage collection and
`gc.freeze()`: the objects of the start (Django, the models, the vocabulary; ~250k) move
out of the collector's reach, so a collection that comes due inside a later search scans
what was made since, not them (a full one costs ~130 ms of CPU at 3k papers, 0.35-0.65 s
on a loaded 2-core machine, paid by whichever search triggered it; ~0 once frozen).
`serve` starts it before the application is imported (the models even before the
database is checked: `load_models_early`), and the server opens its port, or reads
stdio, once it has ended or after READY_WAIT_SECONDS. While the models and vectors load
(a large library, past that wait), the first searches
that would rank by meaning wait for them, up to SEARCH_START_WAIT_MS; later ones rank by
the words alone at once, with a note (papers/search/startup.py, local.py); one asking
for hybrid ranking explicitly, or semantic search, waits for them.
"""

from __future__ import annotations

import gc
import logging
import threading
import time
from collections.abc import Callable

from django.conf import settings
from django.db import close_old_connections, connection

from core.shutdown import process_ending
from papers.search import startup, vocabulary

logger = logging.getLogger(__name__)

_lock = threading.Lock()
_state = "idle"  # idle, loading, ready or failed
_ended = threading.Event()

# The longest a server holds its start (its port closed, or stdio unread) for its warm-up
# to end, so that its first requests do not run beside it (the last of it, a full garbage
# collection, held the interpreter ~0.1 s: bench_stalls saw a first `initialize` take
# that long). A longer warm-up (a large library's vectors) goes on behind the start.
READY_WAIT_SECONDS = 2.0


def state() -> str:
    """idle (never started), loading, ready, or failed (logged; searches load on demand)."""
    return _state


def wait_until_ended(seconds: float = READY_WAIT_SECONDS) -> bool:
    """Wait up to `seconds` for a warm-up started in this process to end (at once when
    none was started); whether it has."""
    return _state == "idle" or _ended.wait(seconds)


Rehearsal = Callable[[str], object]


def start_in_background(rehearse: Rehearsal | None = None) -> threading.Thread | None:
    """Start building the typo-tolerance vocabulary (its own thread) and loading the
    models in a thread, once per process; the models' thread, or None when it was started
    before. `rehearse(query)` runs a search as the server's tools do, writing nothing (by
    default the library search, `local_search`). Not a daemon: a process that ends while
    the models load (stdio's input closed at once) waits for it, because a native thread
    still inside the ONNX runtime at exit aborts the process ("terminate called without
    an active exception", exit -6)."""
    global _state
    with _lock:
        if _state != "idle":
            return None
        _state = "loading"
        _ended.clear()
    building = vocabulary.holder().refresh_in_background()
    if settings.EMBEDDINGS_ENABLED:
        startup.begin()
    thread = threading.Thread(
        target=_load, args=(building, rehearse), name="search-warmup", daemon=False
    )
    thread.start()
    return thread


def load_models_early() -> threading.Thread | None:
    """Start loading the embedding models (each run once) in a thread of their own, before
    the server's database is ready: they need no database, and loaded while the knowledge
    base is checked and the application imported (a second of each on this 2-core
    machine), they are in place when the server starts answering, where loaded by
    `start_in_background` a question sent at once waited for them (bench_stalls: 0.37 s
    on a quiet machine, 1 s loaded). That warm-up then finds them loaded (load_model
    holds a lock, so the two never load one model twice). Not a daemon, for the reason
    start_in_background gives. None when embeddings are off or it was started before."""
    global _models_early
    if not settings.EMBEDDINGS_ENABLED:
        return None
    with _lock:
        if _models_early:
            return None
        _models_early = True
    logger.info("Loading the embedding models in the background, before the database is checked")
    thread = threading.Thread(target=_load_models, name="search-models", daemon=False)
    thread.start()
    return thread


_models_early = False


def _load_models() -> None:
    from papers.search.embedding import load_model, load_strong_model

    try:
        for model in (load_model(), load_strong_model()):
            if model is not None and not process_ending():
                model.encode_query("warm up")  # a model's first encode sets itself up
    except Exception:  # the warm-up loads them again, and logs what is wrong
        logger.debug("Loading the search models early failed", exc_info=True)


# A word no paper holds (typo tolerance runs) and a question (the default hybrid path).
REHEARSED = ("qzvxwjk", "how are these methods evaluated")


def rehearsed_queries() -> tuple[str, str]:
    """REHEARSED, with the misspelling made from the library when the vocabulary has a
    word for it: its most frequent title or author word of 8+ letters with the fourth
    dropped (a spelling no paper holds), so the rehearsal corrects it and shows the
    papers found, as a client's first misspelt query does; 'qzvxwjk' finds nothing."""
    typo, question = REHEARSED
    held = vocabulary.holder().vocabulary
    if held is None:
        return typo, question
    best = 0
    for term, docs in zip(held.terms, held.docs, strict=False):
        if docs > best and len(term) >= 8 and term.isalpha():
            misspelt = term[:3] + term[4:]
            if misspelt not in held.known:
                typo, best = misspelt, docs
    return typo, question


def _load(building: threading.Thread | None, rehearse: Rehearsal | None = None) -> None:
    global _state
    started = time.perf_counter()
    try:
        if settings.EMBEDDINGS_ENABLED:
            try:  # whatever happens, searches stop waiting for it (papers/search/startup.py)
                from papers.search.tiers import current_tiers

                logger.info("Loading the search models in the background")
                tiers = current_tiers()  # the models, and the vector index's snapshot
                tiers.encode("warm up")
            finally:
                startup.end()
            logger.info("Search models loaded in %.1f s", time.perf_counter() - started)
        _preload_postings()
        if building is not None:
            building.join()
        _rehearse(rehearse)
        _warm_facets()
        if not process_ending():
            gc.collect()  # here rather than inside a search, then out of the collector's way
            gc.freeze()
    except Exception:  # a search will load them again, and say what is wrong
        _state = "failed"
        if process_ending():  # e.g. stdio's input closed at once: nothing is wrong
            logger.info("Search warm-up left: the process is ending")
        else:
            logger.warning("The search warm-up failed", exc_info=True)
    else:
        _state = "ready"
        logger.info("Search warm-up done in %.1f s", time.perf_counter() - started)
    finally:
        close_old_connections()
        connection.close()  # this thread's own connection
        _ended.set()


def _preload_postings() -> None:
    """The posting lists of the terms the last process held in memory at its exit."""
    from papers.search.lexical import preload_held_terms

    started = time.perf_counter()
    terms, postings = preload_held_terms(process_ending)
    if terms:
        logger.info(
            "Posting lists of %d terms searched before the start read in %.1f s (%d postings)",
            terms, time.perf_counter() - started, postings,
        )  # fmt: skip


def _warm_facets() -> None:
    """The whole library's facets as `list_top_facets` asks for them by default (each
    category, its 20 largest values, no query, no scope), into the facet cache, where they
    stay until the library changes (papers/search/facets.py): authors over every author
    link took 0.2-0.3 s at 300k papers, so about a second at 1M (not measured there). A
    failure here is logged; searches are ready."""
    from papers.search.facets import FACET_CATEGORIES, facet_counts

    started = time.perf_counter()
    try:
        for category in FACET_CATEGORIES:
            if process_ending():
                return
            facet_counts(category=category)
    except Exception:
        logger.warning("Counting the library's facets at start failed", exc_info=True)
        return
    logger.info("Facets of the whole library counted in %.1f s", time.perf_counter() - started)


def _rehearse(rehearse: Rehearsal | None = None) -> None:
    """Run rehearsed_queries() through `rehearse` (the library search by default),
    answers unused (nothing is written). Each after marking the vector indexes to be
    checked, as a search a second after the last one finds them (the check's code runs
    here first)."""
    from papers.search.vector_index import strong_vector_index, vector_index

    if rehearse is None:
        from papers.search.local import local_search

        def rehearse(query: str) -> object:
            return local_search(query=query, limit=10)

    for query in rehearsed_queries():
        if process_ending():
            return
        vector_index().invalidate()
        strong_vector_index().invalidate()
        rehearse(query)
