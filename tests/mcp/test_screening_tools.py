"""Screening record by record over HTTP /mcp with the SDK client (issue 23): an agent screens
a review with screen_next / screen_decide until the stopping rule says it is safe to stop,
then closes the screen checkpoint with decide. The records come from a plugin engine
answering from a local replay server; on PostgreSQL + Redis the steps run on a worker of
the test's own (tests/mcp/test_review_tools.py, `review_backend`). Last, two people
screen one review with API tokens of their own, on the same server.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from mcp import MCPError

from tests.engines.plugins import write_plugin
from tests.engines.replay import ReplayServer, Reply
from tests.mcp.builders import review_backend
from tests.mcp.conftest import (
    PYTHON,
    ROOT,
    KnowledgeBase,
    LiveServer,
    base_env,
    mcp_client,
    running_server,
    server_database,
    tool_data,
    tool_error,
)

pytestmark = [pytest.mark.server, pytest.mark.anyio]

ENGINE = "scr_src"
TOPICS = ["legal", "scientific", "clinical", "patent", "news", "book", "code", "dialogue"]
PLACES = ["Nordic", "Andean", "coastal", "alpine", "desert", "island", "river", "urban"]
NOT_SCREENED = "not screened (screening stopped)"
QUESTION = "How does sparse self-attention let transformer encoders handle lengthy texts?"


def records() -> list[dict[str, Any]]:
    """32 papers using the question's words in other senses, then 8 on the question: the
    search order puts every relevant paper last."""
    off = []
    for place in PLACES:
        off += [
            {"title": f"Long documents on power transformers in {place} grids",
             "abstract": f"Maintenance documents of {place} substations and their transformers."},
            {"title": f"Attention to long documents among {place} pupils",
             "abstract": f"How {place} pupils keep attention reading long documents."},
            {"title": f"Archiving long legal documents in {place} courts",
             "abstract": f"Paper archives of {place} courts, scanned and catalogued."},
            {"title": f"Long distance attention of {place} migrating birds",
             "abstract": f"Radar tracks of {place} flocks show vigilance on long flights."},
        ]  # fmt: skip
    on = [
        {"title": f"Efficient self-attention for lengthy {topic} texts",
         "abstract": f"Sparse attention patterns let transformer encoders read lengthy {topic} "
                     "texts, with local windows and a few global tokens."}
        for topic in TOPICS
    ]  # fmt: skip
    items = off + on
    for number, item in enumerate(items):
        item.update(authors=[f"Author {number}"], year=2015 + number % 8,
                    doi=f"10.9999/screen.{number}")  # fmt: skip
    return items


RELEVANT = {item["title"] for item in records()[-len(TOPICS) :]}


@dataclass
class ScreeningSite:
    server: LiveServer
    env: dict[str, str]  # the server's environment, for management commands on its data


@pytest.fixture(scope="module")
def screening_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ScreeningSite]:
    source = ReplayServer().start()
    source.add(f"/{ENGINE}/search", Reply(200, records()))
    directory = tmp_path_factory.mktemp("screening-kb")
    write_plugin(directory / "engines", ENGINE, f"{source.url}/{ENGINE}", timeout=30)
    try:
        with server_database("mcpscreen") as database_url:
            env = base_env(directory, database_url)
            env.update(ENGINES_ENABLED=f"local,{ENGINE}", EMBEDDINGS_ENABLED="false")
            kb = KnowledgeBase(directory, env)
            with review_backend(kb) as (extra, _), running_server(kb, env=extra) as server:
                yield ScreeningSite(server, {**env, **extra})
    finally:
        source.stop()


@pytest.fixture(scope="module")
def screening_server(screening_site: ScreeningSite) -> LiveServer:
    return screening_site.server


async def call(url: str, tool: str, **arguments: Any) -> Any:
    async with mcp_client(url) as client:
        return await client.call_tool(tool, arguments)


async def ok(url: str, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await call(url, tool, **arguments)
    assert not result.is_error, result.content[0].text
    return tool_data(result)


async def at_screen(url: str) -> dict[str, Any]:
    state = await ok(url, "start_review", query=QUESTION,
                     max_results=40)  # fmt: skip
    edit = {"engines": [ENGINE], "queries": ["long documents"]}
    state = await ok(url, "decide", session_id=state["session_id"], action="edit", data=edit,
                     checkpoint=1)  # fmt: skip
    assert state["current_checkpoint_kind"] == "screen", state
    assert state["checkpoint"]["candidates"]["total"] == 40
    return state


def precision(batch: list[dict[str, Any]]) -> float:
    return sum(r["title"] in RELEVANT for r in batch) / len(batch)


async def test_an_agent_screens_to_the_stopping_rule_and_the_ranking_improves(
    screening_server: LiveServer,
) -> None:
    url = screening_server.mcp_url
    async with mcp_client(url) as client:
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert listed["screen_next"].annotations.read_only_hint
    assert not listed["screen_decide"].annotations.read_only_hint
    session_id = (await at_screen(url))["session_id"]
    stop_at = {"target_recall": 0.8, "confidence": 0.8}

    batches: list[list[dict[str, Any]]] = []
    reasons: list[str] = []
    while True:
        page = await ok(url, "screen_next", session_id=session_id, limit=5, **stop_at)
        if page["stopping"]["safe_to_stop"] or not page["records"]:
            break
        batches.append(page["records"])
        reasons.append(page["records"][0]["rank_reason"])
        decisions = [
            {"paper": r["paper_id"], "decision": "include" if r["title"] in RELEVANT else "exclude",
             **({} if r["title"] in RELEVANT else {"reason": "not about language models"})}
            for r in page["records"]
        ]  # fmt: skip
        answer = await ok(url, "screen_decide", session_id=session_id, decisions=decisions)
        assert answer["recorded"] == len(decisions)
        assert len(batches) < 10, "the stopping rule never fired"

    assert reasons[0].startswith("search rank")
    # The search order gave the off-topic papers first; the model, once it had learnt
    # from an inclusion and an exclusion, gave the relevant ones.
    learnt = next(i for i, reason in enumerate(reasons) if reason.startswith("model score"))
    assert precision(batches[0]) == 0.0 and precision(batches[learnt]) >= 0.6
    found = {r["title"] for batch in batches for r in batch} & RELEVANT
    assert found == RELEVANT
    assert page["pending"] > 0, "stopped before screening everything"
    assert "Safe to stop" in page["next"]
    stopping = page["stopping"]
    assert stopping["estimated_recall"] >= 0.8 and stopping["p_value"] < 0.2

    state = await ok(url, "get_session", session_id=session_id)
    assert state["screening"]["pending"] == page["pending"]
    assert state["screening"]["included"] == len(RELEVANT)
    state = await ok(url, "decide", session_id=session_id, action="approve",
                     checkpoint=state["checkpoint"]["sequence"])  # fmt: skip
    assert state["is_complete"] and state["result"]["included"] == len(RELEVANT)
    reasons_counted = state["counts"]["excluded_reasons"]
    assert reasons_counted[NOT_SCREENED] == page["pending"]
    assert reasons_counted["not about language models"] == 40 - len(RELEVANT) - page["pending"]
    exported = await ok(url, "export_results", session_id=session_id, format="json")
    titles = {paper["title"] for paper in json.loads(exported["content"])["papers"]}
    assert titles == RELEVANT


async def test_screen_next_reports_target_recall_and_confidence_each_for_itself(
    screening_server: LiveServer,
) -> None:
    """Different values, so a swap shows: after the 8 relevant records and then 12 others
    (of 40), recall >= 95 % at 60 % confidence is not yet shown (p 0.625, estimated recall
    0.88), while recall >= 60 % at 95 % confidence would be (p 0.043, safe, 0.61)."""
    url = screening_server.mcp_url
    session_id = (await at_screen(url))["session_id"]
    every = (await ok(url, "screen_next", session_id=session_id, limit=40))["records"]
    relevant = [r["paper_id"] for r in every if r["title"] in RELEVANT]
    others = [r["paper_id"] for r in every if r["title"] not in RELEVANT][:12]
    decisions = [{"paper": p, "decision": "include"} for p in relevant]
    decisions += [{"paper": p, "decision": "exclude", "reason": "off topic"} for p in others]
    await ok(url, "screen_decide", session_id=session_id, decisions=decisions)

    page = await ok(url, "screen_next", session_id=session_id, limit=1,
                    target_recall=0.95, confidence=0.6)  # fmt: skip
    stopping = page["stopping"]
    assert (stopping["target_recall"], stopping["confidence"]) == (0.95, 0.6)
    assert (stopping["screened"], stopping["included"]) == (20, 8)
    assert stopping["p_value"] == 0.625 and stopping["safe_to_stop"] is False
    assert stopping["estimated_recall"] == 0.88
    assert "Safe to stop" not in page["next"]
    await ok(url, "cleanup_review", session_id=session_id)


async def test_screen_decide_names_what_is_wrong_and_records_nothing(
    screening_server: LiveServer,
) -> None:
    url = screening_server.mcp_url
    state = await at_screen(url)
    session_id = state["session_id"]
    first = state["checkpoint"]["candidates"]["items"][0]["paper_id"]
    result = await call(url, "screen_decide", session_id=session_id, decisions=[
        {"paper": first, "decision": "exclude"}, {"paper": "nobody2099", "decision": "include"},
    ])  # fmt: skip
    error = tool_error(result)
    assert error["code"] == "invalid_decision" and error["papers"] == ["nobody2099"]
    page = await ok(url, "screen_next", session_id=session_id, limit=1)
    assert page["pending"] == 40  # the valid half was not recorded either
    async with mcp_client(url) as client:
        with pytest.raises(MCPError) as bad:
            await client.call_tool("screen_decide", {
                "session_id": session_id, "decisions": [{"paper": first, "decision": "perhaps"}],
            })  # fmt: skip
    assert bad.value.error.code == -32602 and "include" in bad.value.error.message
    # decide at the screen checkpoint works as in seed 002 when nothing was screened here.
    state = await ok(url, "decide", session_id=session_id, action="approve", checkpoint=2)
    assert state["is_complete"] and state["result"]["included"] == 40
    done = tool_error(await call(url, "screen_next", session_id=session_id))
    assert done["code"] == "session_complete"


async def test_two_screeners_over_mcp_get_kappa_and_a_third_resolves_disagreements(
    screening_server: LiveServer,
) -> None:
    url = screening_server.mcp_url
    session_id = (await at_screen(url))["session_id"]
    page = await ok(url, "screen_next", session_id=session_id, limit=8)
    titles = {r["paper_id"]: r["title"] for r in page["records"]}
    # An agent excludes them all; a person includes the last two (they are on topic).
    agent = [{"paper": pk, "decision": "exclude"} for pk in titles]
    person = [{"paper": pk, "decision": "exclude"} for pk in list(titles)[:6]]
    person += [{"paper": pk, "decision": "include"} for pk in list(titles)[6:]]
    await ok(url, "screen_decide", session_id=session_id, decisions=agent, screener="agent-1")
    second = await ok(url, "screen_next", session_id=session_id, limit=8, screener="ann")
    assert {r["paper_id"] for r in second["records"]} == set(titles)
    await ok(url, "screen_decide", session_id=session_id, decisions=person, screener="ann")
    state = await ok(url, "get_session", session_id=session_id)
    agreement = state["screening"]["agreement"]
    assert agreement["both_screened"] == 8 and agreement["disagreements_total"] == 2
    # Observed 6/8; agent-1 includes none: chance 0 * 2/8 + 1 * 6/8; kappa 0.
    assert agreement["kappa"] == 0.0
    assert agreement["unresolved"] == 2
    disputed = {item["paper_id"] for item in agreement["disagreements"]}
    assert disputed == set(list(titles)[6:])
    assert all(item["votes"] == {"agent-1": "exclude", "ann": "include"}
               for item in agreement["disagreements"])  # fmt: skip

    # The screen stage cannot be closed while they are unresolved; nothing changes.
    sequence = state["checkpoint"]["sequence"]
    refused = tool_error(await call(url, "decide", session_id=session_id, action="approve",
                                    checkpoint=sequence))  # fmt: skip
    assert (
        refused["code"] == "invalid_decision"
        and "2 screening disagreements" in (refused["message"])
    )
    assert sorted(refused["papers"]) == sorted(str(pk) for pk in disputed)
    assert "resolve" in (await ok(url, "screen_next", session_id=session_id))["next"]

    # A third decision resolves them: the reason is required, and only disputed records.
    resolve = [{"paper": pk, "decision": "include"} for pk in disputed]
    async with mcp_client(url) as client:
        with pytest.raises(MCPError) as no_reason:
            await client.call_tool("screen_decide", {
                "session_id": session_id, "decisions": resolve, "screener": "lead",
                "resolve": True,
            })  # fmt: skip
    assert no_reason.value.error.code == -32602 and "reason" in no_reason.value.error.message
    agreed = next(iter(titles))
    wrong = tool_error(await call(url, "screen_decide", session_id=session_id, screener="lead",
                                  resolve=True, decisions=[
        {"paper": agreed, "decision": "include", "reason": "on second thought"},
    ]))  # fmt: skip
    assert wrong["code"] == "invalid_decision" and "not in disagreement" in wrong["message"]
    resolve = [{**item, "reason": "sparse attention for long texts: on topic"} for item in resolve]
    answer = await ok(url, "screen_decide", session_id=session_id, screener="lead",
                      resolve=True, decisions=resolve)  # fmt: skip
    assert answer["resolved"] == 2 and answer["included"] == 2
    again = tool_error(await call(url, "screen_decide", session_id=session_id, screener="lead",
                                  resolve=True, decisions=resolve[:1]))  # fmt: skip
    assert "already resolved" in again["message"]

    agreement = (await ok(url, "get_session", session_id=session_id))["screening"]["agreement"]
    assert agreement["unresolved"] == 0 and agreement["disagreements"] == []
    assert agreement["kappa"] == 0.0 and agreement["screeners"] == {"agent-1": 8, "ann": 8}
    assert {(r["paper_id"], r["decision"], r["by"]) for r in agreement["resolutions"]} == {
        (pk, "include", "lead") for pk in disputed
    }
    assert {r["reason"] for r in agreement["resolutions"]} == {resolve[0]["reason"]}
    # The resolution is the final decision of the disputed records.
    state = await ok(url, "decide", session_id=session_id, action="approve", checkpoint=sequence)
    assert state["is_complete"] and state["result"]["included"] == 2
    exported = await ok(url, "export_results", session_id=session_id, format="json")
    assert {paper["title"] for paper in json.loads(exported["content"])["papers"]} == {
        titles[pk] for pk in disputed
    }


async def test_a_maybe_over_mcp_comes_back_last_and_holds_the_checkpoint_open(
    screening_server: LiveServer,
) -> None:
    url = screening_server.mcp_url
    session_id = (await at_screen(url))["session_id"]
    first = await ok(url, "screen_next", session_id=session_id, limit=40)
    order = [r["paper_id"] for r in first["records"]]
    unsure = order[0]
    answer = await ok(url, "screen_decide", session_id=session_id, screener="ann", decisions=[
        {"paper": unsure, "decision": "maybe", "reason": "the methods section decides"},
    ])  # fmt: skip
    assert (answer["recorded"], answer["pending"], answer["maybe"]) == (1, 40, 1)
    assert answer["stopping"] == first["stopping"]  # not a screening decision
    again = await ok(url, "screen_next", session_id=session_id, limit=40, screener="ann")
    assert [r["paper_id"] for r in again["records"]] == [*order[1:], unsure]
    assert "maybe" in again["records"][-1]["rank_reason"]
    state = await ok(url, "get_session", session_id=session_id)
    assert state["screening"]["maybe"] == 1
    refused = tool_error(await call(url, "decide", session_id=session_id, action="approve",
                                    checkpoint=state["checkpoint"]["sequence"]))  # fmt: skip
    assert refused["code"] == "invalid_decision" and refused["papers"] == [str(unsure)]
    await ok(url, "screen_decide", session_id=session_id, screener="ann",
             decisions=[{"paper": unsure, "decision": "include"}])  # fmt: skip
    state = await ok(url, "decide", session_id=session_id, action="approve",
                     checkpoint=state["checkpoint"]["sequence"])  # fmt: skip
    assert state["is_complete"] and state["result"]["included"] == 1


# --- Two people screening one review over /mcp, each with their own API token (issue 39
# items 4-5, docs/AUTH.md "Attribution and the audit log"), on this module's server. Each
# is a screener of their own (`user:alice`, `user:bob`) whatever name their client gives;
# kappa compares them by name; the audit log names each person and the token they used,
# and the decisions, the checkpoint approval and the start of the review are theirs.

TOKENS = """
import json
from django.contrib.auth.models import User
from research_site.tokens import api_token_create
tokens = {}
for name in ("alice", "bob"):
    user = User.objects.create_user(name, password=None)
    _, tokens[name] = api_token_create(user=user, name=f"{name}-laptop", scope="write")
print(json.dumps(tokens))
"""


class Lab:
    def __init__(self, server: LiveServer, env: dict[str, str]) -> None:
        self.server = server
        self.env = env
        self.tokens: dict[str, str] = json.loads(self.manage("shell", "-c", TOKENS))

    def manage(self, *args: str) -> str:
        done = subprocess.run(
            [PYTHON, "manage.py", *args],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.strip().splitlines()[-1] if args[0] == "shell" else done.stdout

    async def ok(self, person: str, tool: str, **arguments: Any) -> dict[str, Any]:
        headers = {"Authorization": f"Bearer {self.tokens[person]}"}
        async with mcp_client(self.server.mcp_url, headers=headers) as client:
            result = await client.call_tool(tool, arguments)
        assert not result.is_error, getattr(result.content[0], "text", "")
        return tool_data(result)


@pytest.fixture(scope="module")
def lab(screening_site: ScreeningSite) -> Lab:
    """The module's server, with two people who have API tokens of their own."""
    return Lab(screening_site.server, screening_site.env)


def verdicts(page: dict[str, Any], *, flip: int = 0) -> list[dict[str, Any]]:
    """Include the relevant records; the first `flip` decisions the other way round."""
    out = []
    for number, record in enumerate(page["records"]):
        include = (record["title"] in RELEVANT) != (number < flip)
        out.append({"paper": record["paper_id"], "decision": "include" if include else "exclude",
                    **({} if include else {"reason": "off topic"})})  # fmt: skip
    return out


async def test_two_people_screen_one_review_with_their_own_tokens(lab: Lab) -> None:
    state = await lab.ok("alice", "start_review", query=QUESTION, max_results=40)
    session_id = state["session_id"]
    edit = {"engines": [ENGINE], "queries": ["long documents"]}
    state = await lab.ok("alice", "decide", session_id=session_id, action="edit", data=edit,
                         checkpoint=1)  # fmt: skip
    assert state["current_checkpoint_kind"] == "screen", state

    # Alice screens 12 records; her client leaves the screener at its default.
    page = await lab.ok("alice", "screen_next", session_id=session_id, limit=12)
    hers = {r["paper_id"] for r in page["records"]}
    answer = await lab.ok("alice", "screen_decide", session_id=session_id,
                          decisions=verdicts(page))  # fmt: skip
    assert answer["recorded"] == 12
    # Bob's client calls itself "agent" too: he is still a screener of his own, shown
    # Alice's records first, for his independent opinion.
    page = await lab.ok("bob", "screen_next", session_id=session_id, limit=12, screener="agent")
    assert {r["paper_id"] for r in page["records"]} == hers
    answer = await lab.ok("bob", "screen_decide", session_id=session_id,
                          decisions=verdicts(page, flip=3), screener="agent")  # fmt: skip
    agreement = answer["agreement"]
    assert set(agreement["compared"]) == {"user:alice", "user:bob"}
    assert agreement["screeners"] == {"user:alice": 12, "user:bob": 12}
    assert agreement["both_screened"] == 12 and agreement["agreed"] == 9
    assert agreement["kappa"] is not None and agreement["kappa"] < 1
    assert agreement["unresolved"] == 3
    # A client of Bob's naming itself is another screener of Bob's, never Alice.
    page = await lab.ok("bob", "screen_next", session_id=session_id, limit=1, screener="gpt")
    decided = await lab.ok("bob", "screen_decide", session_id=session_id,
                           decisions=verdicts(page), screener="gpt")  # fmt: skip
    assert decided["agreement"]["screeners"]["user:bob+agent:gpt"] == 1
    # A client that is not a signed-in person cannot pass itself off as one.
    arguments = {"session_id": session_id, "decisions": verdicts(page), "screener": "user:alice"}
    async with mcp_client(lab.server.mcp_url) as owner:
        with pytest.raises(MCPError, match="screener cannot start with 'user:'"):
            await owner.call_tool("screen_decide", arguments)

    # The audit log names each person and their token.
    # One process for the audit log (`audit_export --format json --user NAME`, as a person
    # would run it) and who decided what (WHO): a Django start-up each before.
    after = json.loads(lab.manage("shell", "-c", WHO.replace("SESSION", session_id)))
    alice, bob = after["audit"]["alice"], after["audit"]["bob"]
    assert alice and bob
    assert all(e["client"].startswith("API token alice-laptop") for e in alice)
    assert all(e["client"].startswith("API token bob-laptop") for e in bob)
    assert {e["kind"] for e in alice + bob} == {"api-token"}
    screened = [e for e in bob if e["model"] == "projects.reviewcandidate"]
    assert [e["action"] for e in screened] == ["bulk-update", "bulk-update"]
    assert [e["count"] for e in screened] == [12, 1]
    assert "votes" in screened[0]["summary"] and "off topic" not in json.dumps(bob)
    started = [e for e in alice if e["model"] == "projects.reviewsession"]
    assert started[0]["action"] == "create" and started[0]["object_id"] == session_id
    decisions = [e for e in alice if e["model"] == "projects.reviewdecision"]
    assert [e["action"] for e in decisions] == ["create"]
    # Who decided what, as the admin shows it: the person and the client.
    who = after
    assert who["decisions"] == [["user:alice", "alice", "API token alice-laptop"]]
    assert {(s["screener"], s["user"]) for s in who["screeners"]} == {
        ("user:alice", "alice"),
        ("user:bob", "bob"),
        ("user:bob+agent:gpt", "bob"),
    }
    assert who["screened_by_user"] == ["alice"]


WHO = """
import io
import json
from django.core.management import call_command
from projects.models import ReviewDecision, ReviewCandidate, ReviewSession
from projects.review.selectors import screeners
def audit(user):
    out = io.StringIO()
    call_command("audit_export", "--format", "json", "--user", user, stdout=out)
    return json.loads(out.getvalue())
audit_log = {name: audit(name) for name in ("alice", "bob")}
session = ReviewSession.objects.get(pk="SESSION")
decisions = [
    [d.decided_by, d.user.username, d.client.split(" (")[0]]
    for d in ReviewDecision.objects.filter(checkpoint__session=session).order_by("created_at")
]
people = screeners(session)
users = sorted({c.screened_by_user.username for c in ReviewCandidate.objects.filter(
    session=session, screened_by_user__isnull=False)})
print(json.dumps({"decisions": decisions, "screeners": people["screeners"],
                  "screened_by_user": users, "audit": audit_log}))
"""
