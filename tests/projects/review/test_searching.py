"""A review's search log (projects/review/searching.py, docs/SEARCH-STRINGS.md): every query
of the plan on every source, with the query as written and as sent (a search string in
each source's dialect, refused in strict mode where it would drop a constraint), the time,
the records returned and the source's total; kept on the session, counted by get_session,
and in export_results and the review's search-log resource (PRISMA-S)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from mcp import MCPError

from engines.registry import registry as engine_registry
from mcp_endpoint.tools.review import review_search_log_resource
from projects.models import ReviewSession
from tests.engines.plugins import write_plugin
from tests.engines.replay import ReplayServer, Reply
from tests.projects.review.builders import ToolError, Tools, build_library

pytestmark = pytest.mark.django_db(transaction=True)

WRITTEN = '("long document"[tiab] OR longformer[tiab]) AND transformer* NOT vision'
HIERARCHICAL = {
    "title": "Hierarchical Transformers for Long Document Classification",
    "authors": ["Raghavendra Pappagari"],
    "year": 2019,
    "doi": "10.1109/asru46091.2019",
}


@pytest.fixture(autouse=True)
def _quick(settings: Any) -> None:
    settings.EMBEDDINGS_ENABLED = False


@pytest.fixture
def library(transactional_db: None) -> dict[str, int]:
    return build_library()


@pytest.fixture
def tools() -> Tools:
    return Tools()


@pytest.fixture
def engines(settings: Any) -> Iterator[tuple[ReplayServer, str, str]]:
    """A PubMed-dialect and a keywords-only plugin engine calling a local server."""
    server = ReplayServer().start()
    suffix = uuid.uuid4().hex[:6]
    pubmed_like, plain = f"log_pubmed_{suffix}", f"log_plain_{suffix}"
    paths = [
        write_plugin(Path(settings.ENGINES_DIR), engine_id, f"{server.url}/{engine_id}",
                     query_dialect=dialect)
        for engine_id, dialect in ((pubmed_like, "pubmed"), (plain, "plain"))
    ]  # fmt: skip
    settings.ENGINES_ENABLED = [pubmed_like, plain]
    engine_registry.refresh()
    server.add(f"/{pubmed_like}/search", Reply(200, {"results": [HIERARCHICAL], "total": 4321}))
    server.add(f"/{plain}/search", Reply(200, [HIERARCHICAL]))
    yield server, pubmed_like, plain
    for path in paths:
        path.unlink(missing_ok=True)
    engine_registry.refresh()
    server.stop()


def test_a_review_logs_each_search_per_source_and_exports_the_log(
    tools: Tools, library: dict[str, int], engines: tuple[ReplayServer, str, str]
) -> None:
    server, pubmed_like, plain = engines
    state = tools.start(max_results=20)
    assert set(state["checkpoint"]["payload"]["plan"]["engines"]) == {"local", pubmed_like, plain}
    state = tools.decide(state, "edit", data={"queries": [WRITTEN, "sparse attention"]})
    assert state["current_checkpoint_kind"] == "screen"
    assert state["searches_logged"] == 6  # 2 queries x 3 sources; the log itself is elsewhere

    log = ReviewSession.objects.get(pk=state["session_id"]).search_log
    entries = {(entry["source"], entry["query"]): entry for entry in log}
    assert len(entries) == 6 and {entry["round"] for entry in log} == {1}

    pubmed = entries[(pubmed_like, WRITTEN)]
    assert pubmed["query_sent"] == (
        '(("long document"[tiab] OR longformer[tiab]) AND transformer*) NOT vision'
    )
    assert (pubmed["status"], pubmed["count"], pubmed["total"]) == ("ok", 1, 4321)
    assert datetime.fromisoformat(pubmed["searched_at"]).tzinfo is not None

    # Strict mode: the keywords-only source would drop the NOT part, so it is not asked.
    refused = entries[(plain, WRITTEN)]
    assert refused["status"] == "unsupported" and refused["reason"] == "query_untranslatable"
    assert "NOT parts left out" in refused["message"] and "query_sent" not in refused
    assert [r.query["q"][0] for r in server.requests if r.path == f"/{plain}/search"] == [
        "sparse attention"
    ]

    library_entry = entries[("local", WRITTEN)]
    assert (
        library_entry["query_sent"]
        == '(("long document" OR longformer) AND transformer*) NOT vision'
    )
    assert any("widened" in note for note in library_entry["notes"])
    plain_question = entries[(plain, "sparse attention")]
    assert plain_question["query_sent"] == "sparse attention" and "total" not in plain_question

    state = tools.decide(state, "approve")
    assert state["is_complete"]
    exports = {
        fmt: tools("export_results", session_id=state["session_id"], format=fmt)["content"]
        for fmt in ("json", "markdown")
    }
    assert json.loads(exports["json"])["review"]["search_log"] == log
    markdown = exports["markdown"]
    assert "## Search log" in markdown
    assert f"| 1 | {pubmed_like} | `{WRITTEN}` | `{pubmed['query_sent']}` |" in markdown
    assert "| 4321 | ok |" in markdown
    assert f"| {plain} | `{WRITTEN}` | not sent |" in markdown

    resource = json.loads(review_search_log_resource(state["session_id"]))
    assert resource["searches"] == log and resource["session_id"] == state["session_id"]


def test_a_rejected_round_stays_in_the_log(
    tools: Tools, library: dict[str, int], engines: tuple[ReplayServer, str, str]
) -> None:
    state = tools.start(max_results=20)
    state = tools.decide(state, "edit", data={"queries": ["sparse attention"]})
    state = tools.decide(state, "reject", note="narrower")
    state = tools.decide(state, "edit", data={"queries": ["longformer[ti]"]})
    log = ReviewSession.objects.get(pk=state["session_id"]).search_log
    assert [(entry["round"], entry["query"]) for entry in log] == [
        (1, "sparse attention"), (1, "sparse attention"), (1, "sparse attention"),
        (2, "longformer[ti]"), (2, "longformer[ti]"), (2, "longformer[ti]"),
    ]  # fmt: skip


def test_a_malformed_search_string_in_the_plan_is_refused_with_its_position(
    tools: Tools, library: dict[str, int]
) -> None:
    state = tools.start(max_results=20)
    with pytest.raises((ToolError, MCPError)) as raised:
        tools.decide(state, "edit", data={"queries": ["longformer[tiab] OR bigbird AND x"]})
    assert "(at character 29)" in str(raised.value)
