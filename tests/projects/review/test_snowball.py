"""The review's expand step through the snowballing walk (plan.snowball_direction): the
included papers' references from an engine, and the papers citing them from the library,
each work one candidate however many included papers lead to it, those connecting to more
included papers first.

On the PostgreSQL + Redis run the step runs on the real Celery worker, which finds the
plugin engine in the shared engines folder (as tests/projects/review/test_workflow.py's engines).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings

from engines.base import PaperRef
from engines.registry import registry as engine_registry
from engines.runner import EngineCall, run_calls
from papers.models import Citation, Paper
from tests.engines.plugins import write_plugin
from tests.engines.replay import ReplayServer, Reply, Request
from tests.projects.review.builders import CORPUS, Tools, assert_counts_add_up, build_library

pytestmark = pytest.mark.django_db(transaction=True)

# The plugin of tests/engines/plugins.py, with reference lists: GET /references?title=...
REFERENCES_PART = """

from engines.base import REFERENCES


def _get_references(self, paper, max_results):
    return self._records(self._get("/references", title=paper.title))[:max_results]


TestEngine.operations = TestEngine.operations | {REFERENCES}
TestEngine.get_references = _get_references
"""
SPARSE = {
    "title": "Generating Long Sequences with Sparse Transformers",
    "authors": ["Rewon Child"],
    "year": 2019,
    "arxiv_id": "1904.10509",
}
ATTENTION = {"title": "Attention is all you need", "authors": ["A Vaswani"], "year": 2017}
REFERENCES = {
    CORPUS["longformer"]["title"]: [ATTENTION, SPARSE, CORPUS["reformer"]],
    CORPUS["bigbird"]["title"]: [ATTENTION, {**SPARSE, "title": SPARSE["title"].upper()}],
}


@pytest.fixture
def references_engine(settings: Any) -> Iterator[tuple[ReplayServer, str]]:
    server = ReplayServer().start()
    engine_id = f"refs_{uuid.uuid4().hex[:6]}"
    path = write_plugin(Path(settings.ENGINES_DIR), engine_id, f"{server.url}/{engine_id}")
    path.write_text(path.read_text() + REFERENCES_PART)

    def references(request: Request) -> Reply:
        return Reply(200, REFERENCES.get(request.query["title"][0], []))

    server.add(f"/{engine_id}/references", references)
    settings.ENGINES_ENABLED = [engine_id]
    engine_registry.refresh()
    yield server, engine_id
    path.unlink(missing_ok=True)
    engine_registry.refresh()
    server.stop()


def test_the_expand_step_snowballs_references_and_citing_papers(
    transactional_db: None, references_engine: tuple[ReplayServer, str]
) -> None:
    server, engine_id = references_engine
    library = build_library()
    tools = Tools()
    state = tools.start(max_results=10)
    assert state["checkpoint"]["payload"]["plan"]["snowball_direction"] == "citing"
    state = tools.decide(
        state, "edit",
        data={"queries": ['"sparse attention"'], "snowball": True, "snowball_direction": "both"},
    )  # fmt: skip
    state = tools.decide(state, "approve")  # Longformer and Big Bird included
    assert state["current_checkpoint_kind"] == "expand", state

    items = state["checkpoint"]["candidates"]["items"]
    by_title = {item["title"]: item for item in items}
    longformer, bigbird = library["longformer"], library["bigbird"]
    # Attention and Sparse Transformers (references of both) and Coral (cites both) first.
    assert {item["title"] for item in items[:3]} == {
        CORPUS["attention"]["title"], SPARSE["title"], CORPUS["coral"]["title"],
    }  # fmt: skip
    # Then those connecting to one: Reformer (a reference of Longformer), Zebra (cites it).
    assert {item["title"] for item in items[3:]} == {
        CORPUS["reformer"]["title"], CORPUS["zebra"]["title"],
    }  # fmt: skip
    assert sorted(by_title[SPARSE["title"]]["cites"]) == sorted([longformer, bigbird])
    assert by_title[CORPUS["attention"]["title"]]["paper_id"] == library["attention"]
    assert set(by_title[CORPUS["coral"]["title"]]["engines"]) == {"local"}
    assert set(by_title[SPARSE["title"]]["engines"]) == {engine_id}
    # Sparse Transformers is new to the library, once (two records, two spellings).
    assert Paper.objects.filter(title__iexact=SPARSE["title"]).count() == 1
    assert Citation.objects.filter(citing_id=longformer, cited_id=library["attention"]).exists()
    citation = state["counts"]["citation_search"]
    assert citation["identified"][engine_id] == 5
    assert_counts_add_up(state["counts"])
    asked = {r.query["title"][0] for r in server.requests if r.path.endswith("/references")}
    assert asked == set(REFERENCES)


@pytest.mark.skipif(
    django_settings.CELERY_TASK_ALWAYS_EAGER or not os.environ.get("CELERY_WORKER_RUNNING"),
    reason="needs Redis and running Celery workers (make test-pg)",
)
def test_reference_lookups_run_on_the_engine_workers(
    references_engine: tuple[ReplayServer, str],
) -> None:
    server, engine_id = references_engine
    paper = PaperRef(title=CORPUS["bigbird"]["title"])
    [outcome] = run_calls([EngineCall.references(engine_id, paper, 10)])
    assert outcome.ok, outcome
    assert [record.title for record in outcome.records()] == [
        ATTENTION["title"], SPARSE["title"].upper(),
    ]  # fmt: skip
    # Sent from a worker process, not this one.
    assert server.requests
    assert all(r.headers["x-worker"] != str(os.getpid()) for r in server.requests)
