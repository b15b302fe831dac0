"""Two people screening one review over /mcp, each with their own API token (issue 39
items 4-5, docs/AUTH.md "Attribution and the audit log"): a real server process, the MCP
SDK's own client. Each is a screener of their own (`user:alice`, `user:bob`) whatever
name their client gives; kappa compares them by name; the audit log names each person and
the token they used, and the decisions, the checkpoint approval and the start of the
review are theirs.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
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
)
from tests.mcp.test_screening_tools import ENGINE, QUESTION, RELEVANT, records

pytestmark = [pytest.mark.server, pytest.mark.anyio]

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

    def audit(self, *args: str) -> list[dict[str, Any]]:
        return json.loads(self.manage("audit_export", "--format", "json", *args))


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    source = ReplayServer().start()
    source.add(f"/{ENGINE}/search", Reply(200, records()))
    directory = tmp_path_factory.mktemp("named-screeners-kb")
    write_plugin(directory / "engines", ENGINE, f"{source.url}/{ENGINE}", timeout=30)
    try:
        with server_database("named") as database_url:
            env = base_env(directory, database_url)
            env.update(ENGINES_ENABLED=f"local,{ENGINE}", EMBEDDINGS_ENABLED="false")
            kb = KnowledgeBase(directory, env)
            with review_backend(kb) as (extra, _), running_server(kb, env=extra) as server:
                yield Lab(server, {**env, **extra})
    finally:
        source.stop()


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
    alice = lab.audit("--user", "alice")
    bob = lab.audit("--user", "bob")
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
    who = json.loads(lab.manage("shell", "-c", WHO.replace("SESSION", session_id)))
    assert who["decisions"] == [["user:alice", "alice", "API token alice-laptop"]]
    assert {(s["screener"], s["user"]) for s in who["screeners"]} == {
        ("user:alice", "alice"),
        ("user:bob", "bob"),
        ("user:bob+agent:gpt", "bob"),
    }
    assert who["screened_by_user"] == ["alice"]


WHO = """
import json
from projects.models import ReviewDecision, ReviewCandidate, ReviewSession
from projects.review.selectors import screeners
session = ReviewSession.objects.get(pk="SESSION")
decisions = [
    [d.decided_by, d.user.username, d.client.split(" (")[0]]
    for d in ReviewDecision.objects.filter(checkpoint__session=session).order_by("created_at")
]
people = screeners(session)
users = sorted({c.screened_by_user.username for c in ReviewCandidate.objects.filter(
    session=session, screened_by_user__isnull=False)})
print(json.dumps({"decisions": decisions, "screeners": people["screeners"],
                  "screened_by_user": users}))
"""
