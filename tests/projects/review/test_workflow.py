"""The review workflow through its services and MCP tools, on a real database.

On the embedded default the steps run in-process as they are sent; on the PostgreSQL +
Redis run they go to the real Celery worker (scripts/with-celery-worker.sh), which reads
the same committed data, hence transactional tests. Tests that play the worker's part
themselves (a crash, a redelivery) capture the sent steps instead and run them here.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone
from mcp import MCPError

from engines.registry import registry as engine_registry
from papers.models import Paper
from projects.models import (
    Project,
    ReviewCandidate,
    ReviewCheckpoint,
    ReviewDecision,
    ReviewSession,
)
from projects.review import services, steps
from projects.review.steps import review_step
from tests.engines.plugins import write_plugin
from tests.engines.replay import ReplayServer, Reply
from tests.projects.review.builders import (
    CORPUS,
    LONG_DOCS,
    ToolError,
    Tools,
    assert_counts_add_up,
    build_library,
)

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _quick(settings: Any) -> None:
    settings.EMBEDDINGS_ENABLED = False


@pytest.fixture
def library(transactional_db: None) -> dict[str, int]:
    return build_library()


# --- the tools, called as MCP calls them (guarded, errors mapped) -------------------------------


@pytest.fixture
def tools() -> Tools:
    return Tools()


def titles(state: dict[str, Any]) -> list[str]:
    return [item["title"] for item in state["checkpoint"]["candidates"]["items"]]


def project_titles(project_id: str) -> set[str]:
    papers = Paper.objects.filter(project_links__project_id=project_id)
    return set(papers.values_list("title", flat=True))


# --- a review from question to project ----------------------------------------------------------


def test_review_runs_from_plan_to_a_project_with_prisma_counts(
    tools: Tools, library: dict[str, int]
) -> None:
    state = tools.start(max_results=10)
    assert state["state"] == "waiting" and state["current_checkpoint_kind"] == "plan"
    plan = state["checkpoint"]["payload"]["plan"]
    assert plan["engines"] == ["local"] and plan.get("date_from") is None
    assert "transformers AND handle AND long AND documents" in plan["queries"]
    assert any("Addresses the question" in criterion for criterion in plan["criteria"])
    assert state["checkpoint"]["actions"]["approve"]

    state = tools.decide(state, "approve", checkpoint=1)
    assert state["current_checkpoint_kind"] == "screen" and state["iteration"] == 1
    found = titles(state)
    assert found[0] == "Longformer: The Long-Document Transformer"  # every query's best
    assert set(found) >= {
        "Attention Is All You Need", "Big Bird: Transformers for Longer Sequences",
        "Reformer: The Efficient Transformer",
    }  # fmt: skip
    assert "Zebra Stripes and Thermoregulation" not in found
    first = state["checkpoint"]["candidates"]["items"][0]
    assert first["abstract"] == CORPUS["longformer"]["abstract"] and first["engines"] == ["local"]
    assert_counts_add_up(state["counts"])

    reformer = library["reformer"]
    state = tools.decide(
        state, "edit", data={"exclude": [reformer], "reasons": {str(reformer): "about efficiency"}},
        note="keep the long-document ones", checkpoint=2,
    )  # fmt: skip
    assert state["is_complete"] and state["state"] == "complete"
    counts = state["counts"]
    assert counts["excluded"] == 1 and counts["excluded_reasons"] == {"about efficiency": 1}
    assert counts["included"] == counts["screened"] - 1 == state["result"]["included"]
    assert_counts_add_up(counts)
    project = state["project_id"]
    assert Project.objects.get(pk=project).name == f"Review: {LONG_DOCS}"
    assert "Reformer: The Efficient Transformer" not in project_titles(project)
    assert len(project_titles(project)) == counts["included"]
    assert [d["action"] for d in state["decisions"]] == ["approve", "edit"]
    assert state["decisions"][1]["note"] == "keep the long-document ones"


def test_export_results_in_every_format(tools: Tools, library: dict[str, int]) -> None:
    state = tools.start(max_results=10)
    state = tools.decide(state, "edit", data={"queries": ['"sparse attention"']})
    state = tools.decide(state, "approve")
    assert state["is_complete"]
    exports = {
        fmt: tools("export_results", session_id=state["session_id"], format=fmt)
        for fmt in ("json", "bibtex", "markdown", "csv", "ris")
    }
    assert {e["count"] for e in exports.values()} == {2}
    document = json.loads(exports["json"]["content"])
    assert document["review"]["query"] == LONG_DOCS
    assert {p["title"] for p in document["papers"]} == {
        "Longformer: The Long-Document Transformer", "Big Bird: Transformers for Longer Sequences",
    }  # fmt: skip
    assert document["review"]["counts"]["included_total"] == 2
    assert "@" in exports["bibtex"]["content"] and "Longformer" in exports["bibtex"]["content"]
    markdown = exports["markdown"]["content"]
    assert markdown.startswith(f"# Literature review: {LONG_DOCS}")
    assert "## PRISMA counts" in markdown and "| included in total | 2 |" in markdown
    assert exports["csv"]["content"].startswith("paper_id,")
    assert "TY  - " in exports["ris"]["content"]


def test_plan_edit_then_citation_search_adds_citing_papers(
    tools: Tools, library: dict[str, int]
) -> None:
    state = tools.start(max_results=10)
    state = tools.decide(
        state, "edit",
        data={"queries": ["sparse attention"], "date_from": "2019", "snowball": True},
    )  # fmt: skip
    assert titles(state) == [
        "Longformer: The Long-Document Transformer", "Big Bird: Transformers for Longer Sequences",
    ]  # fmt: skip
    state = tools.decide(state, "approve")
    assert state["current_checkpoint_kind"] == "expand" and state["stage"] == "expand"
    items = state["checkpoint"]["candidates"]["items"]
    # Coral cites both included papers, Zebra one: Coral first.
    assert [item["title"] for item in items] == [
        "Coral Reef Acoustic Monitoring", "Zebra Stripes and Thermoregulation",
    ]  # fmt: skip
    assert sorted(items[0]["cites"]) == sorted([library["longformer"], library["bigbird"]])
    citation = state["counts"]["citation_search"]
    # Coral cites both included papers, but is one record of the source, not a duplicate.
    assert citation["identified"] == {"local": 2} and citation["duplicates_removed"] == 0
    state = tools.decide(state, "edit", data={"include": [library["coral"]]})
    assert state["is_complete"]
    counts = state["counts"]
    assert counts["citation_search"]["excluded_reasons"] == {"not selected at screening": 1}
    assert counts["included_total"] == 3
    assert_counts_add_up(counts)
    assert project_titles(state["project_id"]) == {
        "Longformer: The Long-Document Transformer", "Big Bird: Transformers for Longer Sequences",
        "Coral Reef Acoustic Monitoring",
    }  # fmt: skip


def test_dates_named_in_the_question_limit_the_search(
    tools: Tools, library: dict[str, int]
) -> None:
    state = tools.start("long documents since 2019")
    plan = state["checkpoint"]["payload"]["plan"]
    assert plan["date_from"] == "2019" and plan["queries"][0] == "long AND documents"
    state = tools.decide(state, "approve")
    assert "A Mathematical Theory of Communication" not in titles(state)  # 1948


def test_reject_at_plan_plans_again_with_the_note(tools: Tools, library: dict[str, int]) -> None:
    state = tools.start()
    state = tools.decide(state, "reject", note='Too broad: use "sparse attention"')
    assert state["current_checkpoint_kind"] == "plan"
    assert state["round"] == 2 and state["iteration"] == 1
    plan = state["checkpoint"]["payload"]["plan"]
    assert '"sparse attention"' in plan["queries"]
    assert plan["feedback"] == ['Too broad: use "sparse attention"']


def test_reject_at_screen_discards_the_candidates_and_plans_again(
    tools: Tools, library: dict[str, int]
) -> None:
    state = tools.start()
    state = tools.decide(state, "approve")
    assert state["counts"]["screened"] > 0
    state = tools.decide(state, "reject", note="wrong papers")
    assert state["current_checkpoint_kind"] == "plan" and state["round"] == 2
    assert state["counts"]["screened"] == 0 and state["counts"]["identified_total"] == 0
    assert not ReviewCandidate.objects.filter(session_id=state["session_id"]).exists()
    state = tools.decide(state, "edit", data={"queries": ["graph convolutional"]})
    assert titles(state) == ["Semi-Supervised Classification with Graph Convolutional Networks"]


def test_screen_include_keeps_only_the_listed_papers(tools: Tools, library: dict[str, int]) -> None:
    state = tools.start(max_results=10)
    state = tools.decide(state, "approve")
    longformer = Paper.objects.get(pk=library["longformer"])
    # Any identifier of a paper works: its paper_id, id or citekey.
    state = tools.decide(state, "edit", data={"include": [longformer.citekey]})
    assert project_titles(state["project_id"]) == {longformer.title}
    reasons = state["counts"]["excluded_reasons"]
    assert reasons == {"not selected at screening": state["counts"]["screened"] - 1}


def test_candidates_are_paged(tools: Tools, library: dict[str, int]) -> None:
    state = tools.start(max_results=10)
    state = tools.decide(state, "approve")
    total = state["checkpoint"]["candidates"]["total"]
    assert total >= 4
    first = tools.get(state, offset=0, limit=2)["checkpoint"]["candidates"]
    rest = tools.get(state, offset=2, limit=100)["checkpoint"]["candidates"]
    assert first["has_more"] and first["next_offset"] == 2 and len(first["items"]) == 2
    assert [i["rank"] for i in first["items"] + rest["items"]] == list(range(1, total + 1))


def test_max_results_caps_the_screening_and_is_counted(
    tools: Tools, library: dict[str, int]
) -> None:
    queries = {"queries": ["sparse attention", "graph convolutional"]}
    state = tools.decide(tools.start(max_results=1), "edit", data=queries)
    counts = state["counts"]
    # Each query's best paper; only the better of the two is screened.
    assert counts["identified"] == {"local": 2}
    assert counts["screened"] == 1 and counts["over_limit"] == 1
    assert_counts_add_up(counts)


# --- errors an agent can act on -------------------------------------------------------------


def test_errors_are_structured(tools: Tools, library: dict[str, int]) -> None:
    with pytest.raises(ToolError) as unknown:
        tools("get_session", session_id="00000000-0000-0000-0000-000000000000")
    assert unknown.value.code == "not_found"
    with pytest.raises(ToolError) as garbage:
        tools("get_session", session_id="not-a-session")
    assert garbage.value.code == "not_found"

    state = tools.start()
    with pytest.raises(ToolError) as invalid:
        tools.decide(state, "maybe")
    assert invalid.value.code == "invalid_action" and "approve, edit, reject" in str(invalid.value)
    with pytest.raises(ToolError) as engine:
        tools.decide(state, "edit", data={"engines": ["arxiv"]})
    assert engine.value.code == "invalid_decision" and "available: local" in str(engine.value)
    with pytest.raises(ToolError) as empty_edit:
        tools.decide(state, "edit")
    assert empty_edit.value.code == "invalid_decision"
    with pytest.raises(ToolError) as early:
        tools("export_results", session_id=state["session_id"], format="json")
    assert early.value.code == "session_not_complete"
    assert tools.get(state)["iteration"] == 0  # none of that changed anything

    state = tools.decide(state, "approve", checkpoint=1)
    with pytest.raises(ToolError) as retried:  # the same call again: checkpoint 1 is answered
        tools.decide(state, "approve", checkpoint=1)
    assert retried.value.code == "no_pending_checkpoint" and retried.value.body["pending"] == 2
    with pytest.raises(ToolError) as stranger:
        tools.decide(state, "edit", data={"exclude": [999_999]})
    assert stranger.value.code == "invalid_decision" and stranger.value.body["papers"] == ["999999"]
    attention = library["attention"]
    with pytest.raises(ToolError) as both:
        tools.decide(state, "edit", data={"include": [attention], "exclude": [attention]})
    assert both.value.code == "invalid_decision"

    state = tools.decide(state, "approve")
    with pytest.raises(ToolError) as complete:
        tools.decide(state, "approve")
    assert complete.value.code == "session_complete"
    with pytest.raises(MCPError) as bad_format:
        tools("export_results", session_id=state["session_id"], format="docx")
    assert bad_format.value.error.code == -32602


def assert_refused(tools: Tools, state: dict[str, Any], action: str, data: Any) -> ToolError:
    """decide(action, data) is refused with invalid_decision and changes nothing."""
    before = tools.get(state)
    with pytest.raises(ToolError) as refused:
        tools.decide(state, action, data=data)
    assert refused.value.code == "invalid_decision", refused.value.body
    assert tools.get(state) == before
    assert not ReviewDecision.objects.filter(
        checkpoint__session_id=state["session_id"], iteration__gt=before["iteration"]
    ).exists()
    return refused.value


def test_approve_and_reject_refuse_edit_data(tools: Tools, library: dict[str, int]) -> None:
    state = tools.start(max_results=10)
    for action in ("approve", "reject"):
        refused = assert_refused(tools, state, action, {"queries": ["graph convolutional"]})
        assert "data is for action=edit" in str(refused)
    state = tools.decide(state, "approve")
    assert state["current_checkpoint_kind"] == "screen"
    for action in ("approve", "reject"):
        refused = assert_refused(tools, state, action, {"exclude": [library["attention"]]})
        assert "data is for action=edit" in str(refused)
    # Without data the same decision goes through.
    assert tools.decide(state, "approve", note="all relevant")["is_complete"]


def test_a_reason_given_for_a_kept_paper_is_refused(tools: Tools, library: dict[str, int]) -> None:
    state = tools.decide(tools.start(max_results=10), "approve")
    kept, dropped = (str(library[name]) for name in ("longformer", "attention"))
    included_with_reason = {"include": [kept], "reasons": {kept: "too short"}}
    refused = assert_refused(tools, state, "edit", included_with_reason)
    assert "a reason is for excluded papers" in str(refused)
    # With exclude, the papers not listed are kept: a reason for one of them is refused too.
    kept_with_reason = {"exclude": [dropped], "reasons": {dropped: "off topic", kept: "short"}}
    assert "a reason is for excluded papers" in str(
        assert_refused(tools, state, "edit", kept_with_reason)
    )
    state = tools.decide(state, "edit", data={"exclude": [dropped], "reasons": {dropped: "off"}})
    included = project_titles(state["project_id"])
    assert Paper.objects.get(pk=library["longformer"]).title in included
    assert Paper.objects.get(pk=library["attention"]).title not in included
    assert state["counts"]["excluded_reasons"] == {"off": 1}


def test_bad_arguments_are_invalid_params(tools: Tools) -> None:
    for arguments in ({"query": "   "}, {"query": "?!"}, {"query": "x", "domain": "astrology"}):
        with pytest.raises(MCPError) as error:
            tools("start_review", **arguments)
        assert error.value.error.code == -32602


def test_decide_while_a_step_is_running_has_no_pending_checkpoint(tools: Tools) -> None:
    session = ReviewSession.objects.create(
        query="q", domain="general", max_results=5, status="running", stage="search",
        lease_expires_at=timezone.now() + timedelta(minutes=5),
    )  # fmt: skip
    with pytest.raises(ToolError) as error:
        tools("decide", session_id=str(session.pk), action="approve", wait_seconds=0)
    assert error.value.code == "no_pending_checkpoint"
    state = tools("get_session", session_id=str(session.pk))
    assert state["state"] == "running" and state.get("checkpoint") is None


def test_a_failing_step_fails_the_review_with_its_error(
    tools: Tools, library: dict[str, int]
) -> None:
    state = tools.start()
    # A plan damaged behind the workflow's back makes the search step raise.
    session = ReviewSession.objects.get(pk=state["session_id"])
    ReviewSession.objects.filter(pk=session.pk).update(plan={**session.plan, "date_from": "soon"})
    with pytest.raises(ToolError) as failed:
        tools.decide(state, "approve")
    assert failed.value.code == "workflow_failed"
    assert "ValueError" in failed.value.body["error"]
    shown = tools.get(state)
    assert shown["state"] == "failed" and "ValueError" in shown["error"]
    for call in (
        lambda: tools.decide(state, "approve"),
        lambda: tools("export_results", session_id=state["session_id"], format="json"),
    ):
        with pytest.raises(ToolError) as again:
            call()
        assert again.value.code == "workflow_failed"


def test_cleanup_removes_the_review_and_keeps_the_papers(
    tools: Tools, library: dict[str, int]
) -> None:
    state = tools.decide(tools.start(), "approve")
    removed = tools("cleanup_review", session_id=state["session_id"])
    assert removed == {"session_id": state["session_id"], "removed": True, "cancelled": False}
    with pytest.raises(ToolError) as gone:
        tools.get(state)
    assert gone.value.code == "not_found"
    assert not ReviewCheckpoint.objects.filter(session_id=state["session_id"]).exists()
    assert not ReviewDecision.objects.exists() and not ReviewCandidate.objects.exists()
    assert Paper.objects.count() == len(CORPUS)
    with pytest.raises(ToolError):
        tools("cleanup_review", session_id=state["session_id"])


def test_read_only_mode_hides_the_write_tools() -> None:
    assert set(Tools(read_only=True).fns) == {"get_session", "export_results"}
    assert set(Tools().fns) == {
        "start_review", "decide", "get_session", "export_results", "cleanup_review",
        "split_duplicate",
    }  # fmt: skip


# --- steps: exactly once, whatever the broker and the workers do ----------------------------------


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[tuple[tuple[Any, ...], str]]:
    """Steps are captured instead of sent (to a worker or this process's step threads):
    the test plays the worker."""
    captured: list[tuple[tuple[Any, ...], str]] = []

    def capture(*, session_id: str, stage: str, round: int, task_id: str) -> None:
        captured.append(((session_id, stage, round), task_id))

    monkeypatch.setattr(steps, "review_step_send", capture)
    return captured


def run(step: tuple[tuple[Any, ...], str]) -> str:
    (session_id, stage, round_), task_id = step
    return review_step(session_id=session_id, stage=stage, round=round_, run_id=task_id)


def test_a_step_delivered_twice_does_its_work_once(
    sent: list[Any], library: dict[str, int]
) -> None:
    session = services.review_start(query=LONG_DOCS, max_results=10)
    assert run(sent[-1]) == "done" and run(sent[-1]) == "stale"
    services.review_decide(session_id=str(session.pk), action="approve")
    search = sent[-1]
    assert run(search) == "done"
    candidates = ReviewCandidate.objects.filter(session=session).count()
    assert run(search) == "stale"  # a redelivery after the commit
    assert ReviewCandidate.objects.filter(session=session).count() == candidates
    assert ReviewCheckpoint.objects.filter(session=session).count() == 2
    assert Paper.objects.count() == len(CORPUS)


def test_a_step_whose_worker_died_is_sent_again_and_done_once(
    sent: list[Any], library: dict[str, int]
) -> None:
    session = services.review_start(query=LONG_DOCS, max_results=10)
    run(sent[-1])
    services.review_decide(session_id=str(session.pk), action="approve")
    search = sent[-1]
    # A worker claims the step and dies before committing: the lease is not renewed.
    (sid, stage, round_), task_id = search
    claimed = steps._claim(sid, stage, round_, task_id)
    assert isinstance(claimed, ReviewSession) and claimed.attempt == 1
    # Another copy arriving while the lease is live waits for it.
    with pytest.raises(steps.StepBusy):
        run(search)
    ReviewSession.objects.filter(pk=session.pk).update(
        lease_expires_at=timezone.now() - timedelta(seconds=1)
    )
    services.review_wait(session_id=str(session.pk), timeout=0)  # a look at the review...
    assert sent[-1] == search  # ...sent the same step again
    assert run(search) == "done"
    session.refresh_from_db()
    assert session.status == "waiting" and session.attempt == 2
    # The dead worker's late commit, had it come back, is refused.
    assert steps._commit(session.pk, task_id, 1, "search", None) == "discarded"
    assert ReviewCheckpoint.objects.filter(session=session, kind="screen").count() == 1


def test_a_step_interrupted_too_often_fails_the_review(
    sent: list[Any], library: dict[str, int]
) -> None:
    session = services.review_start(query=LONG_DOCS)
    (sid, stage, round_), task_id = sent[-1]
    for _ in range(steps.MAX_ATTEMPTS):
        steps._claim(sid, stage, round_, task_id)
        ReviewSession.objects.filter(pk=session.pk).update(
            lease_expires_at=timezone.now() - timedelta(seconds=1)
        )
        assert services.review_resume(session_id=sid)
    assert run(sent[-1]) == "failed"
    session.refresh_from_db()
    assert session.status == "failed" and "interrupted 3 times" in session.error


def test_cleanup_while_a_step_is_queued_cancels_it(
    sent: list[Any], library: dict[str, int]
) -> None:
    session = services.review_start(query=LONG_DOCS)
    assert services.review_cleanup(session_id=str(session.pk))["cancelled"] is True
    assert run(sent[-1]) == "gone"
    assert not ReviewSession.objects.exists()


def test_a_step_that_loses_its_review_midway_discards_its_work(
    sent: list[Any], library: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    session = services.review_start(query=LONG_DOCS)
    run(sent[-1])
    services.review_decide(session_id=str(session.pk), action="approve")
    real_gather = steps.search_gather

    def gather_then_removed(**kwargs: Any) -> Any:
        found = real_gather(**kwargs)
        ReviewSession.objects.filter(pk=session.pk).delete()  # cleanup_review meanwhile
        return found

    monkeypatch.setattr(steps, "search_gather", gather_then_removed)
    assert run(sent[-1]) == "discarded"
    assert not ReviewCandidate.objects.exists()


# --- engines: every engine and query, de-duplicated --------------------------------------------


@pytest.fixture
def plugin_engines(settings: Any, tmp_path: Path) -> Iterator[tuple[ReplayServer, list[str]]]:
    """Two plugin engines in the folder the workers read, calling a local server."""
    import uuid

    server = ReplayServer().start()
    suffix = uuid.uuid4().hex[:6]
    ids = [f"rev_alpha_{suffix}", f"rev_beta_{suffix}"]
    paths = [write_plugin(Path(settings.ENGINES_DIR), e, f"{server.url}/{e}") for e in ids]
    settings.ENGINES_ENABLED = ids
    engine_registry.refresh()
    yield server, ids
    for path in paths:
        path.unlink(missing_ok=True)
    engine_registry.refresh()
    server.stop()


def test_engine_results_are_merged_into_one_candidate_per_paper(
    tools: Tools, library: dict[str, int], plugin_engines: tuple[ReplayServer, list[str]]
) -> None:
    server, (alpha, beta) = plugin_engines
    longformer = {**CORPUS["longformer"], "authors": ["I Beltagy"]}  # same arXiv id
    new = {
        "title": "Hierarchical Transformers for Long Document Classification",
        "authors": ["Raghavendra Pappagari"],
        "year": 2019,
        "doi": "10.1109/asru46091.2019",
    }
    server.add(f"/{alpha}/search", Reply(200, [longformer, new]))
    server.add(f"/{beta}/search", Reply(200, [new]))  # fmt: skip
    state = tools.start(max_results=20)
    plan = state["checkpoint"]["payload"]["plan"]
    assert plan["engines"] == ["local", alpha, beta]
    state = tools.decide(state, "edit", data={"queries": ["long document transformer"]})
    counts = state["counts"]
    assert counts["identified"][alpha] == 2 and counts["identified"][beta] == 1
    assert_counts_add_up(counts)
    by_title = {item["title"]: item for item in state["checkpoint"]["candidates"]["items"]}
    assert set(by_title[new["title"]]["engines"]) == {alpha, beta}
    longformer_entry = by_title["Longformer: The Long-Document Transformer"]
    assert longformer_entry["paper_id"] == library["longformer"]
    assert set(longformer_entry["engines"]) == {"local", alpha}
    assert Paper.objects.count() == len(CORPUS) + 1  # the new paper, once
    sent_queries = {request.query["q"][0] for request in server.requests}
    assert sent_queries == {"long document transformer"}


def test_nul_characters_never_reach_the_database(tools: Tools, library: dict[str, int]) -> None:
    # PostgreSQL refuses NUL in text and jsonb; hypothesis found this through PROP-7.
    state = tools.start()
    with pytest.raises(ToolError) as error:
        tools.decide(state, "edit", data={"queries": ["a\x00b"]})
    assert error.value.code == "invalid_decision"
    state = tools.decide(state, "approve", note="fine\x00 by me")
    assert state["decisions"][0]["note"] == "fine by me"


def test_an_unreachable_engine_is_counted_as_not_reached_never_as_zero(
    tools: Tools,
    library: dict[str, int],
    plugin_engines: tuple[ReplayServer, list[str]],
    settings: Any,
) -> None:
    server, (alpha, _) = plugin_engines
    settings.ENGINES_ENABLED = [alpha, "crossref"]
    # RFC 6761: never resolves; on a worker without this setting the real host does not
    # resolve either (no network in tests).
    settings.CROSSREF_API_URL = "http://api.research-mcp-test.invalid"
    engine_registry.refresh()
    server.add(f"/{alpha}/search", Reply(200, [CORPUS["longformer"]]))
    state = tools.start(max_results=20)
    assert "crossref" in state["checkpoint"]["payload"]["plan"]["engines"]
    state = tools.decide(state, "approve")

    counts = state["counts"]
    assert "crossref" not in counts["identified"] and counts["identified"][alpha] >= 1
    assert counts["not_reached"] == {"crossref": "unreachable"}
    crossref = counts["sources"]["crossref"]
    assert crossref["outcome"] == "unreachable" and crossref["failed"] == crossref["searches"]
    assert crossref["last_failure"]["reason"] in ("dns", "circuit_open")
    assert counts["sources"][alpha]["outcome"] == "ok"
    assert_counts_add_up(counts)
    # Said once (counts.sources); each query's statuses stay on the checkpoint, for the admin.
    assert "engines" not in state["checkpoint"]["payload"]
    stored = ReviewCheckpoint.objects.get(session_id=state["session_id"], kind="screen").payload
    assert all(
        per_engine["crossref"]["outcome"] == "unreachable"
        for per_engine in stored["engines"].values()
    )

    state = tools.decide(state, "approve")
    markdown = tools("export_results", session_id=state["session_id"], format="markdown")
    assert "| not reached: crossref | unreachable |" in markdown["content"]


def test_start_and_decide_return_within_wait_seconds_while_a_step_runs_in_the_background(
    tools: Tools,
    library: dict[str, int],
    plugin_engines: tuple[ReplayServer, list[str]],
    settings: Any,
) -> None:
    """Issue 20: on the embedded default a step runs on a thread of the server process,
    never inside the call (decide blocked 149 s before)."""
    if not settings.CELERY_TASK_ALWAYS_EAGER:
        pytest.skip("the embedded default's in-process steps")
    server, (alpha, beta) = plugin_engines
    server.add(f"/{alpha}/search", Reply(200, [CORPUS["longformer"]], delay=3.0))
    server.add(f"/{beta}/search", Reply(200, []))
    started = time.monotonic()
    state = tools.start(max_results=20, wait_seconds=1)
    assert time.monotonic() - started < 2.0 and state["state"] == "waiting"

    started = time.monotonic()
    state = tools.decide(state, "approve", wait_seconds=1)
    assert time.monotonic() - started < 2.0
    assert state["state"] == "running" and state["stage"] == "search"
    assert state["running"]["step"] == "search"
    assert state["running"]["runs_in"] == "background threads of this server"

    deadline = time.monotonic() + 15
    while state["state"] == "running" and time.monotonic() < deadline:
        time.sleep(0.2)
        state = tools.get(state)
    assert state["state"] == "waiting" and state["current_checkpoint_kind"] == "screen"
    assert "running" not in state or state.get("running") is None
    assert state["counts"]["identified"][alpha] >= 1
