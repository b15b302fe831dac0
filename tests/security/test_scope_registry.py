"""Every tool and resource, generated from the tool registry, called by a client scoped to
one collection ("Vision") with the paper, project, review, saved search and alert of
another ("NLP Reading"), through the real /mcp server and the SDK client.

Nothing of "NLP Reading" may appear in any answer, and nothing of it may change
(tests/security/scope_snapshot.py). A tool added later is called here automatically when
its required arguments are ones registry_walk.py knows; otherwise the test fails until the
tool is given arguments in TOOL_ARGUMENTS there, or a reason in NOT_CALLED.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.mcp.conftest import KnowledgeBase, LiveServer, mcp_client
from tests.security.conftest import scope_snapshot
from tests.security.registry_walk import (
    NOT_CALLED,
    markers_shown,
    registry,
    targets,
    tool_calls,
    walk_registry,
)

pytestmark = [pytest.mark.server, pytest.mark.anyio]

# Texts only "NLP Reading" holds (seed_scope.py, seed_library.py); searched for in every
# answer after the client's own argument strings are taken out of it (errors echo them).
MARKERS = (
    "Attention Is All You Need",
    "dominant sequence transduction",
    "BERT: Pre-training",
    "We introduce a new language representation",
    "A Paper In No Project",
    "SECRET-",
    "secret-watch",
    "nlp-reading",
    "NLP Reading",
    "Language models.",
)


async def test_every_tool_and_resource_keeps_a_scoped_client_inside_its_collection(
    scope_server: LiveServer, scope_kb: KnowledgeBase
) -> None:
    tools = registry()
    assert tools.tools, "the registry lists no tool"
    named = targets(scope_kb)
    problems: list[str] = []
    calls: dict[str, list[dict[str, Any]]] = {}
    for name, tool in tools.tools.items():
        if name in NOT_CALLED:
            continue
        built = tool_calls(name, tool.parameters, named)
        if isinstance(built, str):
            problems.append(built)
        else:
            calls[name] = built
    before = scope_snapshot(scope_kb)
    async with mcp_client(f"{scope_server.mcp_url}?collections=Vision") as client:
        listed = {tool.name for tool in (await client.list_tools()).tools}
        for name in NOT_CALLED:
            assert name not in listed, f"{name} is listed: call it here"
        for name in calls:
            assert name in listed, f"{name} is registered but not listed to the client"
        async for answer in walk_registry(client, tools, calls, scope_kb):
            if found := markers_shown(answer.text, answer.arguments, MARKERS):
                what = f"resource {answer.target}" if answer.kind == "resource" else answer.name
                args = "" if answer.kind == "resource" else str(answer.arguments)
                problems.append(f"{what}{args} shows {found}: {answer.text[:300]}")
    assert not problems, "\n".join(problems)
    assert set(calls) == set(tools.tools) - set(NOT_CALLED)
    assert scope_snapshot(scope_kb) == before
