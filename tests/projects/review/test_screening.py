"""Screening record by record inside a review (issue 23), through the tools in-process, on
a real database: screen_next's ranking, screen_decide's all-or-nothing validation, the
stopping report in get_session, and decide at the screen checkpoint afterwards.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp import MCPError

from papers.models import Paper
from papers.schemas import PaperRecord
from papers.services import papers_upsert
from projects.models import ReviewCandidate
from projects.review import screening as screening_module
from projects.review.prioritise import SEARCH_RANK
from projects.review.screening import MAYBE_AGAIN, NOT_SCREENED
from tests.projects.review.screening_builders import ToolError, Tools

pytestmark = pytest.mark.django_db(transaction=True)

QUESTION = "How do sparse attention transformers handle long documents?"
TOPICS = ["legal", "scientific", "clinical", "patent", "news", "book", "code", "dialogue"]
PLACES = ["Nordic", "Andean", "coastal", "alpine", "desert", "island", "river", "urban"]


def on_topic(i: int, topic: str) -> dict[str, Any]:
    # Few of the question's words: the search ranks these below the off-topic papers.
    return dict(
        title=f"Efficient self-attention for lengthy {topic} texts",
        authors=[f"Ada Topic{i}"], year=2020,
        abstract=(
            f"Linear-complexity sparse attention patterns let encoders read lengthy {topic} "
            "texts, with local windows and a few global tokens."
        ),
    )  # fmt: skip


def off_topic(i: int, place: str) -> list[dict[str, Any]]:
    # The question's words in other senses, so that the search puts these first.
    return [
        dict(title=f"Long documents on power transformers in {place} grids",
             authors=[f"Bo Grid{i}"], year=2019,
             abstract=f"Long maintenance documents of {place} transformers and substations."),
        dict(title=f"Attention to long documents among {place} pupils", authors=[f"Cy School{i}"],
             year=2018, abstract=f"How {place} pupils keep attention reading long documents."),
    ]  # fmt: skip


@pytest.fixture(autouse=True)
def _quick(settings: Any) -> None:
    settings.EMBEDDINGS_ENABLED = False


@pytest.fixture
def relevant(transactional_db: None) -> set[int]:
    """The library: 8 papers on the question, 16 on other things; the on-topic paper_ids."""
    topic = [on_topic(i, name) for i, name in enumerate(TOPICS)]
    other = [record for i, place in enumerate(PLACES) for record in off_topic(i, place)]
    ids = papers_upsert(records=[PaperRecord.build(**v) for v in topic + other]).paper_ids
    return set(ids[: len(topic)])


@pytest.fixture
def at_screen(relevant: set[int]) -> tuple[Tools, str]:
    tools = Tools()
    state = tools("start_review", query=QUESTION, limit=50)
    state = tools("decide", session_id=state["session_id"], action="approve", checkpoint=1)
    assert state["current_checkpoint_kind"] == "screen"
    assert state["checkpoint"]["candidates"]["total"] == 24
    return tools, state["session_id"]


def oracle(records: list[dict[str, Any]], relevant: set[int]) -> list[dict[str, Any]]:
    return [
        {"paper": r["paper_id"], "decision": "include" if r["paper_id"] in relevant else "exclude"}
        for r in records
    ]


def test_records_come_in_search_order_until_the_first_decisions_then_by_model(
    at_screen: tuple[Tools, str], relevant: set[int]
) -> None:
    tools, session_id = at_screen
    first = tools("screen_next", session_id=session_id, limit=6)
    assert first["pending"] == 24 and first["stopping"]["safe_to_stop"] is False
    by_rank = list(
        ReviewCandidate.objects.filter(session_id=session_id)
        .order_by("rank")
        .values_list("paper_id", flat=True)
    )
    assert [r["paper_id"] for r in first["records"]] == by_rank[:6]
    assert {r["rank_reason"] for r in first["records"]} == {SEARCH_RANK}
    assert all(r["abstract"] for r in first["records"])
    # The search put the papers using the question's words in other senses first. The
    # person knows one paper on the question (any pending one may be decided) and
    # excludes the search's first.
    known = sorted(relevant)[0]
    decisions = [{"paper": known, "decision": "include"}, *oracle(first["records"][:1], relevant)]
    answer = tools("screen_decide", session_id=session_id, decisions=decisions)
    assert answer["recorded"] == 2 and answer["pending"] == 22
    decided = {known, first["records"][0]["paper_id"]}
    assert first["records"][0]["paper_id"] not in relevant
    left = relevant - decided
    after = tools("screen_next", session_id=session_id, limit=len(left))
    assert all(r["rank_reason"].startswith("model score") for r in after["records"])
    # Every on-topic paper left comes first; the search order had fewer of them there.
    assert {r["paper_id"] for r in after["records"]} == left
    by_search = [pk for pk in by_rank if pk not in decided][: len(left)]
    assert len(left & set(by_search)) < len(left) / 2


def test_screen_decide_refuses_the_whole_batch_with_what_is_wrong(
    at_screen: tuple[Tools, str], relevant: set[int]
) -> None:
    tools, session_id = at_screen
    paper = sorted(relevant)[0]
    with pytest.raises(ToolError) as unknown:
        tools("screen_decide", session_id=session_id, decisions=[
            {"paper": paper, "decision": "include"}, {"paper": 999_999, "decision": "exclude"},
        ])  # fmt: skip
    assert unknown.value.code == "invalid_decision" and unknown.value.body["papers"] == ["999999"]
    assert "not candidates" in str(unknown.value)
    assert not ReviewCandidate.objects.filter(session_id=session_id, status="included").exists()

    citekey = Paper.objects.get(pk=paper).citekey  # any identifier of the paper works
    tools("screen_decide", session_id=session_id,
          decisions=[{"paper": citekey, "decision": "include"}])  # fmt: skip
    with pytest.raises(ToolError) as again:
        tools("screen_decide", session_id=session_id,
              decisions=[{"paper": paper, "decision": "exclude"}])  # fmt: skip
    assert again.value.code == "invalid_decision" and "already screened" in str(again.value)
    other = sorted(relevant)[1]
    with pytest.raises(ToolError) as twice:
        tools("screen_decide", session_id=session_id, decisions=[
            {"paper": other, "decision": "include"}, {"paper": other, "decision": "exclude"},
        ])  # fmt: skip
    assert "listed twice" in str(twice.value)
    with pytest.raises(MCPError) as bad:
        tools("screen_decide", session_id=session_id,
              decisions=[{"paper": other, "decision": "perhaps"}])  # fmt: skip
    assert bad.value.error.code == -32602
    with pytest.raises(MCPError):
        tools("screen_next", session_id=session_id, target_recall=1.5)


def test_screening_works_only_at_the_screen_checkpoint(relevant: set[int]) -> None:
    tools = Tools()
    state = tools("start_review", query=QUESTION, limit=50)
    with pytest.raises(ToolError) as at_plan:
        tools("screen_next", session_id=state["session_id"])
    assert at_plan.value.code == "no_pending_checkpoint" and "at plan" in str(at_plan.value)
    with pytest.raises(ToolError) as unknown:
        tools("screen_next", session_id="00000000-0000-0000-0000-000000000000")
    assert unknown.value.code == "not_found"


def test_approve_after_screening_keeps_the_decisions_and_excludes_the_unscreened(
    at_screen: tuple[Tools, str], relevant: set[int]
) -> None:
    tools, session_id = at_screen
    batch = tools("screen_next", session_id=session_id, limit=10)["records"]
    tools("screen_decide", session_id=session_id, decisions=oracle(batch, relevant))
    state = tools("get_session", session_id=session_id)
    screening = state["screening"]
    assert screening["pending"] == 14 and screening["included"] + screening["excluded"] == 10
    assert 0 <= screening["stopping"]["estimated_recall"] <= 1
    assert "safe_to_stop" in screening["stopping"]
    assert state["iteration"] == 1  # record decisions are not checkpoint decisions

    included = {r["paper"] for r in oracle(batch, relevant) if r["decision"] == "include"}
    state = tools("decide", session_id=session_id, action="approve", checkpoint=2)
    assert state["is_complete"]
    project = set(
        Paper.objects.filter(project_links__project_id=state["project_id"]).values_list(
            "pk", flat=True
        )
    )
    assert project == included
    counts = state["counts"]
    assert counts["excluded_reasons"][NOT_SCREENED] == 14
    assert counts["screened"] == counts["pending"] + counts["excluded"] + counts["included"]
    assert counts["included"] == len(included)


def test_decisions_and_get_session_report_without_fitting_the_ranker(
    at_screen: tuple[Tools, str], relevant: set[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tallies and the stopping report read the decisions only: screen_decide's answer
    and get_session never fit the TF-IDF model (most of what a ranking costs); only
    screen_next ranks."""
    tools, session_id = at_screen
    batch = tools("screen_next", session_id=session_id, limit=5)["records"]
    fits: list[int] = []
    real = screening_module.Ranker

    def counted(texts: Any, **options: Any) -> Any:
        fits.append(len(texts))
        return real(texts, **options)

    monkeypatch.setattr(screening_module, "Ranker", counted)
    answer = tools("screen_decide", session_id=session_id, decisions=oracle(batch, relevant))
    state = tools("get_session", session_id=session_id)
    assert answer["pending"] == state["screening"]["pending"] == 19
    assert answer["stopping"] == state["screening"]["stopping"]
    assert fits == []
    tools("screen_next", session_id=session_id, limit=5)
    assert fits == [24]


def test_edit_after_screening_applies_to_the_pending_records_only(
    at_screen: tuple[Tools, str], relevant: set[int]
) -> None:
    tools, session_id = at_screen
    batch = tools("screen_next", session_id=session_id, limit=4)["records"]
    tools("screen_decide", session_id=session_id, decisions=oracle(batch, relevant))
    kept = {r["paper"] for r in oracle(batch, relevant) if r["decision"] == "include"}
    pending = list(
        ReviewCandidate.objects.filter(session_id=session_id, status="pending").values_list(
            "paper_id", flat=True
        )
    )
    state = tools("decide", session_id=session_id, action="edit",
                  data={"include": pending[:1]}, checkpoint=2)  # fmt: skip
    assert state["counts"]["included"] == len(kept) + 1


def test_two_screeners_decide_independently_and_get_session_shows_kappa(
    at_screen: tuple[Tools, str], relevant: set[int]
) -> None:
    tools, session_id = at_screen
    first = tools("screen_next", session_id=session_id, limit=6)["records"]
    agent = oracle(first, relevant)
    tools("screen_decide", session_id=session_id, decisions=agent)
    # A person screens the same records as a second opinion: shown first, undecided-looking.
    shown = tools("screen_next", session_id=session_id, limit=6, screener="admin:ann")
    assert [r["paper_id"] for r in shown["records"]] == [r["paper_id"] for r in first]
    assert all("decision hidden" in r["rank_reason"] and r.get("score") is None
               for r in shown["records"])  # fmt: skip
    disputed = agent[0]["paper"]
    ann = [dict(d) for d in agent]
    ann[0]["decision"] = "exclude" if agent[0]["decision"] == "include" else "include"
    answer = tools("screen_decide", session_id=session_id, decisions=ann, screener="admin:ann")
    assert answer["recorded"] == 6 and answer["pending"] == 18  # second opinions only
    agreement = tools("get_session", session_id=session_id)["screening"]["agreement"]
    assert agreement["compared"] == ["agent", "admin:ann"] and agreement["both_screened"] == 6
    assert [d["paper_id"] for d in agreement["disagreements"]] == [disputed]
    assert agreement["kappa"] is not None and agreement["kappa"] < 1
    # The first screener's decision stands; each screener decides a record once.
    candidate = ReviewCandidate.objects.get(session_id=session_id, paper_id=disputed)
    assert candidate.status == ("included" if agent[0]["decision"] == "include" else "excluded")
    with pytest.raises(ToolError) as again:
        tools("screen_decide", session_id=session_id, decisions=ann[:1], screener="admin:ann")
    assert "already screened by admin:ann" in str(again.value)
    assert (
        tools("screen_next", session_id=session_id, limit=1, screener="admin:ann")["records"][0][
            "rank_reason"
        ]
        != shown["records"][0]["rank_reason"]
    )


def test_an_unresolved_disagreement_keeps_the_screen_checkpoint_open(
    at_screen: tuple[Tools, str], relevant: set[int]
) -> None:
    tools, session_id = at_screen
    batch = tools("screen_next", session_id=session_id, limit=3)["records"]
    agent = oracle(batch, relevant)
    tools("screen_decide", session_id=session_id, decisions=agent)
    flipped = {"include": "exclude", "exclude": "include"}
    other = [{**agent[0], "decision": flipped[agent[0]["decision"]]}, *agent[1:]]
    tools("screen_decide", session_id=session_id, decisions=other, screener="bob")
    disputed = agent[0]["paper"]
    for action, data in (("approve", None), ("edit", {"include": []})):
        with pytest.raises(ToolError) as refused:
            tools("decide", session_id=session_id, action=action, data=data, checkpoint=2)
        assert refused.value.code == "invalid_decision"
        assert refused.value.body["papers"] == [str(disputed)]
        assert "resolve" in refused.value.body["message"]
    state = tools("get_session", session_id=session_id)
    assert state["current_checkpoint_kind"] == "screen" and state["iteration"] == 1
    assert ReviewCandidate.objects.filter(session_id=session_id, status="pending").count() == 21

    # "_" starts the reserved key of a resolution, never a screener's name.
    with pytest.raises(MCPError, match="reserved"):
        tools("screen_decide", session_id=session_id, decisions=agent[:1], screener="_resolution")
    # The resolver may be anyone, one of the two screeners included; its decision stands.
    final = flipped[agent[0]["decision"]]
    resolution = {"paper": disputed, "decision": final, "reason": "agreed after discussion"}
    tools("screen_decide", session_id=session_id, screener="agent", resolve=True,
          decisions=[resolution])  # fmt: skip
    candidate = ReviewCandidate.objects.get(session_id=session_id, paper_id=disputed)
    assert candidate.status == ("included" if final == "include" else "excluded")
    assert candidate.votes["_resolution"] == {
        "decision": final,
        "by": "agent",
        "reason": "agreed after discussion",
    }
    assert candidate.votes["agent"] == agent[0]["decision"]  # the independent vote is kept
    state = tools("decide", session_id=session_id, action="approve", checkpoint=2)
    assert state["is_complete"]


def test_a_maybe_is_no_decision_for_the_model_the_stopping_rule_or_prisma(
    at_screen: tuple[Tools, str], relevant: set[int]
) -> None:
    tools, session_id = at_screen
    every = tools("screen_next", session_id=session_id, limit=24)
    order = [r["paper_id"] for r in every["records"]]
    unsure, known = order[0], sorted(relevant)[0]
    answer = tools("screen_decide", session_id=session_id, decisions=[
        {"paper": unsure, "decision": "maybe", "reason": "  method   unclear "},
    ])  # fmt: skip
    assert answer["recorded"] == 1 and (answer["pending"], answer["maybe"]) == (24, 1)
    assert answer["stopping"] == every["stopping"]  # nothing screened as far as it knows
    candidate = ReviewCandidate.objects.get(session_id=session_id, paper_id=unsure)
    assert (candidate.status, candidate.screened_order, candidate.reason) == ("pending", None, "")
    assert candidate.votes == {"agent": "maybe", "_maybe": {"agent": "method unclear"}}
    # It comes back after every undecided record, saying why.
    again = tools("screen_next", session_id=session_id, limit=24)["records"]
    assert [r["paper_id"] for r in again] == [*order[1:], unsure]
    assert again[-1]["rank_reason"] == MAYBE_AGAIN
    assert tools("get_session", session_id=session_id)["screening"]["maybe"] == 1

    # Not a label for the model: with one inclusion only it still cannot learn.
    tools(
        "screen_decide", session_id=session_id, decisions=[{"paper": known, "decision": "include"}]
    )
    session = ReviewCandidate.objects.get(session_id=session_id, paper_id=known).session
    loaded = screening_module._load(session)
    assert list(loaded.labels().values()) == [True] and loaded.labels_in_order() == [True]

    # Approve refuses while it is only maybe; deciding it replaces the maybe.
    with pytest.raises(ToolError) as refused:
        tools("decide", session_id=session_id, action="approve", checkpoint=2)
    assert refused.value.code == "invalid_decision" and refused.value.body["papers"] == [
        str(unsure)
    ]
    assert "maybe" in str(refused.value)
    tools("screen_decide", session_id=session_id,
          decisions=[{"paper": unsure, "decision": "exclude", "reason": "grids"}])  # fmt: skip
    candidate.refresh_from_db()
    assert candidate.votes == {"agent": "exclude"} and candidate.status == "excluded"
    state = tools("decide", session_id=session_id, action="approve", checkpoint=2)
    counts = state["counts"]
    assert (counts["included"], counts["excluded_reasons"]["grids"]) == (1, 1)
    assert counts["excluded_reasons"][NOT_SCREENED] == 22


def test_a_maybe_is_one_screeners_and_comes_back_to_that_screener_last(
    at_screen: tuple[Tools, str], relevant: set[int]
) -> None:
    tools, session_id = at_screen
    order = [
        r["paper_id"] for r in tools("screen_next", session_id=session_id, limit=24)["records"]
    ]
    decided, unsure = order[0], order[1]
    tools("screen_decide", session_id=session_id,
          decisions=[{"paper": decided, "decision": "exclude"}])  # fmt: skip
    # ann: maybe on the agent's record (a second opinion left open) and on a pending one.
    tools("screen_decide", session_id=session_id, screener="ann", decisions=[
        {"paper": decided, "decision": "maybe"}, {"paper": unsure, "decision": "maybe"},
    ])  # fmt: skip
    anns = tools("screen_next", session_id=session_id, limit=24, screener="ann")["records"]
    agents = tools("screen_next", session_id=session_id, limit=24, screener="agent")["records"]
    # ann's maybes last (the pending one, then the decided one); another screener's maybe
    # leaves the record where the ranking puts it.
    assert [r["paper_id"] for r in anns] == [
        *(r["paper_id"] for r in agents if r["paper_id"] != unsure),
        unsure,
        decided,
    ]
    assert unsure in [r["paper_id"] for r in agents[:-1]]
    # Not a vote: no disagreement, no kappa; ann's "maybe" on a decided record is no count.
    status = tools("get_session", session_id=session_id)["screening"]
    assert "agreement" not in status and status["maybe"] == 1
    # A resolution is never maybe; ann's later decision replaces her maybe.
    with pytest.raises(MCPError, match="not maybe"):
        tools("screen_decide", session_id=session_id, resolve=True, screener="lead",
              decisions=[{"paper": decided, "decision": "maybe", "reason": "x"}])  # fmt: skip
    tools("screen_decide", session_id=session_id, screener="ann",
          decisions=[{"paper": decided, "decision": "include"}])  # fmt: skip
    agreement = tools("get_session", session_id=session_id)["screening"]["agreement"]
    assert agreement["unresolved"] == 1 and agreement["screeners"] == {"agent": 1, "ann": 1}
    with pytest.raises(ToolError, match="already screened by ann"):
        tools("screen_decide", session_id=session_id, screener="ann",
              decisions=[{"paper": decided, "decision": "maybe"}])  # fmt: skip
    # Left open by ann on a record the agent decided: in the candidates and the export.
    tools("screen_decide", session_id=session_id, screener="ann",
          decisions=[{"paper": unsure, "decision": "maybe", "reason": "ask the lead"}])  # fmt: skip
    listed = tools("get_session", session_id=session_id, limit=24)["checkpoint"]["candidates"]
    assert [c["maybe"] for c in listed["items"] if "maybe" in c] == [{"ann": "ask the lead"}]
    tools(
        "screen_decide", session_id=session_id, decisions=[{"paper": unsure, "decision": "include"}]
    )
    tools("screen_decide", session_id=session_id, screener="lead", resolve=True,
          decisions=[{"paper": decided, "decision": "exclude", "reason": "grids"}])  # fmt: skip
    assert tools("decide", session_id=session_id, action="approve", checkpoint=2)["is_complete"]
    exported = tools("export_results", session_id=session_id, format="json")["content"]
    assert json.loads(exported)["review"]["maybe"] == [{
        "paper_id": unsure, "title": Paper.objects.get(pk=unsure).title, "status": "included",
        "screeners": {"ann": "ask the lead"},
    }]  # fmt: skip
    markdown = tools("export_results", session_id=session_id, format="markdown")["content"]
    assert "## Left maybe by a screener" in markdown and "ann: ask the lead" in markdown
