"""Project roles on every MCP tool and resource, generated from the tool registry, called
over a real /mcp server by five users with their own API tokens: the owner, an editor, a
screener and a viewer of the private project "NLP Reading", and `bob`, who is no member
(seed_roles.py; the rules are docs/AUTH.md's).

RULES names, for every registered tool, the least role its representative call (one that
names "NLP Reading", its review, its saved search) needs, or None for a tool that touches
no project (the shared library). A tool added later without a rule fails the test. Each
user's answer must then be: allowed for a role at or above the rule's; `forbidden` for a
member below it; "not found" for bob, as for a project that does not exist. Whatever bob
calls, nothing private to "NLP Reading" (its name, id, review, saved search, alert) shows.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
from mcp import MCPError

from tests.mcp.conftest import KnowledgeBase, LiveServer, mcp_client, running_server
from tests.security.registry_walk import (
    NOT_CALLED,
    Answer,
    call_tool,
    markers_shown,
    registry,
    targets,
    tool_calls,
    walk_registry,
)

pytestmark = [pytest.mark.server, pytest.mark.anyio]

READ, SCREEN, EDIT, MANAGE = "read", "screen", "edit", "manage"
ROLES = ("viewer", "screener", "editor", "owner")  # lowest first
LEAST = {READ: "viewer", SCREEN: "screener", EDIT: "editor", MANAGE: "owner"}

# Tool -> the least role its representative call needs (None: no project is touched).
RULES: dict[str, str | None] = {
    # the shared library: papers, their keywords, PDFs, summaries, annotations
    "get_paper_details": None,
    "get_paper_metadata": None,
    "manage_paper_keywords": None,
    "export_paper_bibtex": None,
    "get_paper_summary": None,
    "get_paper_source": None,
    "save_paper_summary": None,
    "attach_pdf": None,
    "get_pdf_outline": None,
    "read_pdf_pages": None,
    "create_highlight": None,
    "create_area_annotation": None,
    "list_annotations": None,
    "export_annotations": None,
    "find_quote": None,
    "verify_quote": None,
    "find_open_access_pdf": None,
    "search_papers_by_keyword": None,
    "search_papers_by_payload": None,
    "check_citations": None,
    "list_search_engines": None,
    "get_search_engine_categories": None,
    # a project filter narrows to nothing for a project one may not see (no error)
    "search_papers_semantic": None,
    "list_top_facets": None,
    # lists: only what the user may see
    "list_projects": None,
    "list_saved_searches": None,
    "get_alerts": None,
    "create_project": None,  # anyone who may write; the creator owns the new project
    "start_review": None,  # in the projects the user edits (none: an open review)
    # a project's contents
    "get_project": READ,
    "list_project_papers": READ,
    "export_search_results": READ,
    "analyze_paper_trends": READ,
    "format_citations": READ,
    "search_passages": READ,
    "check_retractions": READ,
    "add_papers_to_project": EDIT,
    "remove_papers_from_project": EDIT,
    "delete_project": MANAGE,
    # searches that file their results into the project named
    "add_paper": EDIT,
    "search_papers": EDIT,
    "search_by_author": EDIT,
    "get_citing_papers": EDIT,
    "find_related_papers": EDIT,
    "expand_by_citations": EDIT,
    # reviews of the project
    "get_session": READ,
    "export_results": READ,
    "screen_next": READ,
    "screen_decide": SCREEN,
    "decide": EDIT,
    "cleanup_review": EDIT,
    "split_duplicate": EDIT,
    "extract_next": READ,
    "export_evidence_table": READ,
    "extract_record": SCREEN,
    "extraction_form": EDIT,
    # saved searches filed into the project
    "save_search": EDIT,
    "run_saved_search": EDIT,
    "delete_saved_search": EDIT,
}
# Resource template -> the least role (None: the shared library).
RESOURCE_RULES: dict[str, str | None] = {
    "papers://{project_id}": READ,
    "paper://{paper_id}/metadata": None,
    "engines://list": None,
    "paper://{paper_id}/summary": None,
    "paper://{paper_id}/summary/{template}": None,
    "paper://{paper_id}/source": None,
    "paper://{paper_id}/translation/{lang}": None,
    "paper://{paper_id}/passages{?page}": None,
    "review://{session_id}/prisma.svg": READ,
    "review://{session_id}/search-log": READ,
    "review://{session_id}/extraction-form": READ,
    "review://{session_id}/evidence.csv": READ,
    "alerts://recent": None,
}

# What only "NLP Reading" holds (seed_scope.py, seed_roles.py): never shown to bob.
PRIVATE_MARKERS = (
    "nlp-reading",
    "NLP Reading",
    "Language models.",
    "SECRET-REVIEW-QUESTION",
    "SECRET-WATCH-QUERY",
    "secret-watch",
    "SECRET-ALERT-TITLE",
)
REFUSAL_PREFIXES = ("No project", "No review session", "No saved search")


def representative_call(
    name: str, schema: dict[str, Any], kb: KnowledgeBase, user: str
) -> dict[str, Any]:
    """One call naming everything of "NLP Reading" the tool takes (the scope test's
    arguments, merged), with what each user removes or creates of its own."""
    calls = tool_calls(name, schema, targets(kb))
    assert not isinstance(calls, str), calls
    arguments: dict[str, Any] = {}
    for call in calls:
        arguments.update(call)
    if name.startswith("extract") or name == "export_evidence_table":
        arguments.pop("project_id", None)  # a review or a project, not both: the review
    if name == "cleanup_review":
        arguments["session_id"] = kb.data["throwaway_reviews"][user]
    if name == "delete_saved_search":
        arguments["name"] = kb.data["throwaway_searches"][user]
    if name == "create_project":
        arguments["name"] = f"Probe of {user}"
    if name == "expand_by_citations":
        arguments["add_to_project"] = True  # files into project_id
    if "paper_ids" in arguments and name == "search_passages":
        arguments["paper_ids"] = [kb.paper("attention")["paper_id"]]
    if name == "add_paper":
        arguments.pop("url", None)
    if name == "delete_project":
        arguments["confirm_name"] = "not its name"  # allowed: 400 asking for the name
    return arguments


def outcome(text: str, error: dict[str, Any] | None) -> str:
    """allowed, forbidden or hidden (not found as a project, review or saved search)."""
    if error is None:
        return "allowed"
    if error.get("code") == "forbidden":
        return "forbidden"
    if error.get("code") == "not_found" and str(error.get("message", "")).startswith(
        REFUSAL_PREFIXES
    ):
        return "hidden"
    return "allowed"


def expected(rule: str | None, role: str | None) -> str:
    if rule is None:
        return "allowed"
    if role is None:
        return "hidden"
    return "allowed" if ROLES.index(role) >= ROLES.index(LEAST[rule]) else "forbidden"


def private_shown(text: str, arguments: dict[str, Any]) -> list[str]:
    return markers_shown(text, arguments, PRIVATE_MARKERS)


@pytest.fixture(scope="module")
def roles_server(roles_kb: KnowledgeBase) -> Iterator[LiveServer]:
    with running_server(roles_kb, env={"AUTH_FAILURE_LIMIT": "100000"}) as server:
        yield server


def _bearer(kb: KnowledgeBase, user: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {kb.data['tokens'][user]}"}


async def _call(
    client: Any, name: str, arguments: dict[str, Any]
) -> tuple[str, dict[str, Any] | None]:
    answer = await call_tool(client, name, arguments)
    return answer.text, answer.error


def judged(answer: Answer, role: str | None, user: str) -> list[str]:
    """What is wrong with one user's answer: its outcome, and for bob what it shows."""
    problems = []
    if answer.kind == "tool":
        got, want = outcome(answer.text, answer.error), expected(RULES[answer.name], role)
        what, shows = answer.name, f"{answer.name}{answer.arguments}"
    else:
        got = outcome(answer.text, answer.error)
        want = expected(RESOURCE_RULES[answer.name], role)
        if want == "forbidden":
            want = "allowed"  # resources only read: every member may
        what, shows = answer.target, f"resource {answer.target}"
    if got != want:
        problems.append(f"{user} ({role}) {what}: {got}, not {want}: {answer.text[:300]}")
    if role is None and (found := private_shown(answer.text, answer.arguments)):
        problems.append(f"{user} {shows} shows {found}: {answer.text[:300]}")
    return problems


async def test_every_tool_and_resource_follows_the_role_rules(
    roles_server: LiveServer, roles_kb: KnowledgeBase
) -> None:
    tools = registry()
    called = set(tools.tools) - set(NOT_CALLED)
    assert set(RULES) == called, (
        f"tools without a rule: {sorted(called - set(RULES))}; "
        f"rules of no tool: {sorted(set(RULES) - called)} (add them to RULES, docs/AUTH.md)"
    )
    assert set(RESOURCE_RULES) == {r.uri for r in tools.resources}
    users = roles_kb.data["users"]  # role (or "outsider") -> user name
    problems: list[str] = []
    # One MCP session per user, calling every tool and reading every resource.
    for role in (None, *ROLES):
        user = users[role or "outsider"]
        calls = {
            name: [representative_call(name, tool.parameters, roles_kb, user)]
            for name, tool in tools.tools.items()
            if name not in NOT_CALLED
        }
        async with mcp_client(roles_server.mcp_url, headers=_bearer(roles_kb, user)) as client:
            async for answer in walk_registry(client, tools, calls, roles_kb):
                problems += judged(answer, role, user)
    assert not problems, "\n".join(problems)


def test_a_token_for_another_user_cannot_reach_a_private_project(
    roles_server: LiveServer, roles_kb: KnowledgeBase
) -> None:
    """bob's token, every way of naming "NLP Reading" or what it holds: by id, by name,
    through a paper's citekey, a resource URI, an export (by project and by file name),
    its saved search's name and its feed; the REST API the same. The owner's token reaches
    each, so the refusals are about bob."""
    import anyio

    nlp = roles_kb.project("nlp")
    attention = roles_kb.paper("attention")

    async def calls(user: str) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        async with mcp_client(roles_server.mcp_url, headers=_bearer(roles_kb, user)) as client:
            for key, name, arguments in (
                ("by id", "get_project", {"project_id": nlp}),
                ("by name", "get_project", {"project_id": "nlp reading"}),
                ("papers by name", "list_project_papers", {"project_id": "NLP Reading"}),
                ("export", "export_search_results", {"format": "json", "project_id": nlp}),
                (
                    "export to a file",
                    "export_search_results",
                    {
                        "format": "bibtex",
                        "project_id": nlp,
                        "to_file": True,
                        "filename": f"nlp-{user}",
                    },
                ),
                ("saved search", "run_saved_search", {"name": "secret-watch"}),
                ("saved search by project", "run_saved_search", {"name": f"{nlp}/secret-watch"}),
                ("review", "get_session", {"session_id": roles_kb.data["review"]}),
            ):
                seen[key] = await _call(client, name, arguments)
            details = await _call(client, "get_paper_details", {"paper_id": attention["citekey"]})
            seen["citekey"] = details
            try:
                read = await client.read_resource(f"papers://{nlp}")
                seen["resource"] = ("".join(getattr(c, "text", "") for c in read.contents), None)
            except MCPError as exc:
                seen["resource"] = (exc.error.message, exc.error.data)
        return seen

    bob = anyio.run(calls, "bob")
    olga = anyio.run(calls, "olga")
    for key, (text, error) in bob.items():
        if key == "citekey":  # the paper is the shared library's; its projects are not
            assert error is None and nlp not in json.loads(text).get("projects", []), text
            assert "projects" not in json.loads(text) or json.loads(text)["projects"] == []
            continue
        assert error is not None and error.get("code") == "not_found", (key, text)
        assert not private_shown(
            text,
            {
                "a": nlp,
                "b": "secret-watch",
                "c": "nlp reading",
                "d": "NLP Reading",
                "e": f"{nlp}/secret-watch",
            },
        ), text
    for key, (text, error) in olga.items():
        if key in ("saved search", "saved search by project"):
            continue  # runs it: not a refusal, whatever the engines answer
        assert error is None, (key, text)
    assert nlp in json.loads(olga["citekey"][0])["projects"]
    # The feed needs its token, which only the search's readers see.
    feed = httpx2.get(f"{roles_server.base_url}/feeds/saved/secret-watch.atom", timeout=20)
    assert feed.status_code == 404
    token = roles_kb.data["feed_token"]
    feed = httpx2.get(
        f"{roles_server.base_url}/feeds/saved/secret-watch.atom?token={token}", timeout=20
    )
    assert feed.status_code == 200
    # REST with bob's token: the project by id and name, its papers, an export of it.
    rest = httpx2.Client(
        base_url=roles_server.base_url, headers=_bearer(roles_kb, "bob"), timeout=20
    )
    for path in (
        f"/api/projects/{nlp}",
        "/api/projects/NLP%20Reading",
        f"/api/projects/{nlp}/papers",
        f"/api/projects/{nlp}/members",
        f"/api/papers/export?format=json&project_id={nlp}",
        f"/api/projects/reviews/{roles_kb.data['review']}/prisma",
    ):
        answer = rest.get(path)
        assert answer.status_code == 404, (path, answer.text[:300])
    listed = rest.get("/api/projects").json()
    assert nlp not in {p["project_id"] for p in listed}
    exported = rest.post(
        "/api/papers/export", json={"format": "json", "project_id": nlp, "filename": "x"}
    )
    assert exported.status_code == 404, exported.text[:300]
