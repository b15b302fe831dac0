"""Shared fixtures: factories for papers and projects built through the real services."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings

from engines import breaker
from papers.models import Paper
from papers.schemas import PaperRecord
from papers.search import vocabulary
from papers.services import paper_upsert
from projects.models import Project
from projects.services import project_create
from tests.engines.replay import ReplayServer

# Hypothesis profiles for the property tests that leave max_examples to the profile
# (tests/projects/review/test_workflow_properties.py; the fuzzers set their own). `ci`, the
# default, finds a decision that is refused with the wrong code, or accepted when it should
# not be, within a few minutes of the run: 25 new random workflows per property each run;
# `thorough` is for a longer local run:
#   HYPOTHESIS_PROFILE=thorough .venv/bin/python -m pytest \
#       tests/projects/review/test_workflow_properties.py
_PROPERTY_DEFAULTS: dict[str, Any] = {
    "deadline": None,
    "database": None,
    "print_blob": True,
    "suppress_health_check": [HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
}
# `ci-worker`, the default on the PostgreSQL + worker run, runs 10: there every step goes
# through the Celery worker (about 1.6 s a workflow, 200 s of that run for 25), and the
# embedded default's 25 already explore the decisions; the worker run checks they hold there.
hypothesis_settings.register_profile("ci", max_examples=25, **_PROPERTY_DEFAULTS)
hypothesis_settings.register_profile("ci-worker", max_examples=10, **_PROPERTY_DEFAULTS)
hypothesis_settings.register_profile("thorough", max_examples=300, **_PROPERTY_DEFAULTS)
_ON_WORKER = os.environ.get("DATABASE_URL", "").startswith(("postgres://", "postgresql://"))
hypothesis_settings.load_profile(
    os.environ.get("HYPOTHESIS_PROFILE", "ci-worker" if _ON_WORKER else "ci")
)

# One folder of built model files for the whole run, this process's and every server's,
# seeding script's and command's it starts (they inherit the environment): the re-quantised
# MiniLM is built once, not once per knowledge base (a few seconds of CPU each, for some
# ninety knowledge bases a run). tests/papers/search/test_tiers.py builds one on purpose.
if not os.environ.get("MODELS_DIR"):
    _models = tempfile.mkdtemp(prefix="research-mcp-test-models-")
    atexit.register(shutil.rmtree, _models, ignore_errors=True)
    os.environ["MODELS_DIR"] = _models

# The servers, commands and scripts a test starts run on the first embedding tier only, as
# the test process does (_first_embedding_tier_only below): otherwise every server a test
# starts embeds its library again with MiniLM in a background thread on every core, CPU
# the run's other tests wait for (a sixth of the CPU of tests/mcp/test_offline_engines.py).
# A test that wants the second tier in a process it starts says so in that process's
# environment (tests/papers/search/test_tiers.py).
os.environ.setdefault("EMBEDDING_MODEL_STRONG", "")


@pytest.fixture
def replay_server() -> Iterator[ReplayServer]:
    """A local server answering with recorded responses (see tests/engines/replay.py)."""
    server = ReplayServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session", autouse=True)
def _database_reset_by_delete_and_tried_again() -> Iterator[None]:
    """How PostgreSQL is emptied after a test that commits (transactional_db), in two ways.

    DELETE, not TRUNCATE: Django's flush truncates all sixty-odd tables in one statement,
    and a TRUNCATE gives each table new files and scans the shared buffers once per table:
    1.6-1.8 s a test on this machine, where deleting the few rows a test wrote takes tens
    of milliseconds (an empty table costs one round trip). The result is the same empty
    database: every foreign key Django makes on PostgreSQL is DEFERRABLE INITIALLY DEFERRED
    (checked at commit, when every table is empty), and the rows' delete triggers keep the
    full-text and postings tables in step, as the TRUNCATE triggers did. A flush that resets
    sequences still truncates.

    Tried again: on the PostgreSQL + worker run a task a test sent (a PDF's passages, an
    embedding) may still be writing when the test ends; emptying the database can then
    deadlock with it (PostgreSQL cancels one of the two; CI saw the reset cancelled, as an
    error at teardown), or find at commit a row the task added meanwhile that points at a
    deleted one. The task's transaction has ended by then: empty the database again, a few
    times at most."""
    from django.db import IntegrityError, OperationalError
    from django.db.backends.postgresql.operations import DatabaseOperations

    original_flush_sql = DatabaseOperations.sql_flush
    original_execute = DatabaseOperations.execute_sql_flush

    def sql_flush(
        self: DatabaseOperations,
        style: Any,
        tables: Any,
        *,
        reset_sequences: bool = False,
        allow_cascade: bool = False,
    ) -> list[str]:
        if reset_sequences:
            return original_flush_sql(
                self, style, tables, reset_sequences=True, allow_cascade=allow_cascade
            )
        return [f"DELETE FROM {self.quote_name(table)};" for table in tables]  # noqa: S608

    def execute_sql_flush(self: DatabaseOperations, sql_list: list[str]) -> None:
        for attempt in range(1, 6):
            try:
                return original_execute(self, sql_list)
            except (OperationalError, IntegrityError) as error:
                retried = isinstance(error, IntegrityError) or "deadlock detected" in str(error)
                if attempt == 5 or not retried:
                    raise
                time.sleep(0.2 * attempt)

    DatabaseOperations.sql_flush = sql_flush  # type: ignore[method-assign,assignment]
    DatabaseOperations.execute_sql_flush = execute_sql_flush  # type: ignore[method-assign,assignment]
    yield
    DatabaseOperations.sql_flush = original_flush_sql  # type: ignore[method-assign]
    DatabaseOperations.execute_sql_flush = original_execute  # type: ignore[method-assign]


@pytest.fixture(scope="session", autouse=True)
def _fast_password_hashing() -> Iterator[None]:
    """The test process hashes passwords with MD5, as Django's testing guide advises: the
    default PBKDF2 (1.5 million rounds) costs 0.35-0.5 s of CPU per user created or signed
    in, several minutes of a run. Only this process: the servers, commands and worker the
    tests start hash as a deployment does (tests/mcp, tests/browser sign in through them)."""
    from django.test import override_settings

    with override_settings(PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"]):
        yield


@pytest.fixture(autouse=True)
def _no_external_engines(settings: Any) -> None:
    """Only the local engine unless a test enables others (tests never reach the internet)."""
    settings.ENGINES_ENABLED = ["local"]


@pytest.fixture(autouse=True)
def _typo_tolerance_loaded() -> None:
    """Every test starts with an empty typo-tolerance vocabulary loaded, as a server has
    once its background build ended on an empty library: the papers the test writes are
    added to it as they are written (papers/search/vocabulary.py). Tests of the loading
    itself install None."""
    vocabulary.holder().install(vocabulary.Vocabulary(()))


@pytest.fixture(autouse=True)
def _engine_breakers_closed() -> Iterator[None]:
    """Every test starts with every engine's circuit breaker closed (engines/breaker.py):
    a test that makes an engine fail must not leave it refused for the next one."""
    breaker.reset_all()
    yield
    breaker.reset_all()


@pytest.fixture(autouse=True)
def _no_failed_sign_ins_carried_over(settings: Any) -> None:
    """Each test starts with no failed sign-in or token guess counted (core.throttle),
    in a cache of the test process's own: the configured one outlives a test, and with
    REDIS_URL clearing it would flush the Redis database the Celery worker uses."""
    from django.core.cache import caches

    throttle = {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "throttle"}
    settings.CACHES = {**settings.CACHES, "throttle": throttle}
    caches["throttle"].clear()


@pytest.fixture(autouse=True)
def _first_embedding_tier_only(settings: Any) -> None:
    """No second-tier background thread or tasks unless a test turns the tier on
    (tests/papers/search/test_tiers.py): a thread writing while a test's transaction is open
    would race with it."""
    settings.EMBEDDING_MODEL_STRONG = ""


@pytest.fixture(autouse=True)
def _no_retraction_checks_on_import(settings: Any) -> None:
    """Adding papers queues no background retraction check unless a test asks for one
    (tests/projects/test_retractions.py): a thread writing while a test's transaction is open
    would race with it."""
    settings.RETRACTION_CHECK_ON_IMPORT = False


@pytest.fixture(autouse=True)
def _passage_statistics_read_again() -> None:
    """The passages' BM25 statistics (papers/passages/ranking.py's PASSAGES, kept per
    process and followed by its writes) are read from the database at a test's first
    search: a rolled-back test's passages must not count in the next one's."""
    from papers.passages.ranking import PASSAGES
    from papers.search.postings import forget_stats

    forget_stats(PASSAGES)


@pytest.fixture
def search_caches_held(monkeypatch: pytest.MonkeyPatch) -> None:
    """For tests that count a search's queries: the search's caches re-check the database
    after a time (the vectors every vector_index.REFRESH_SECONDS, the BM25 statistics every
    postings.STATS_SECONDS), so on a loaded machine a counted request could fall on a
    re-check. Held here, they re-check only after this process's writes (which reset them)."""
    import math

    from papers.search import postings, semantic, vector_index

    monkeypatch.setattr(vector_index, "REFRESH_SECONDS", math.inf)
    monkeypatch.setattr(semantic, "REFRESH_SECONDS", math.inf)
    monkeypatch.setattr(postings, "STATS_SECONDS", math.inf)


@pytest.fixture
def make_paper(db: None) -> Callable[..., Paper]:
    """Create (or merge into) a paper through paper_upsert, as every interface does."""

    def make(title: str = "Attention Is All You Need", **values: Any) -> Paper:
        values.setdefault("authors", ["Ashish Vaswani", "Noam Shazeer"])
        values.setdefault("year", 2017)
        paper, _ = paper_upsert(record=PaperRecord.build(title=title, **values))
        return paper

    return make


@pytest.fixture
def make_project(db: None) -> Callable[..., Project]:
    def make(name: str = "Transformers", description: str = "") -> Project:
        return project_create(name=name, description=description)

    return make
