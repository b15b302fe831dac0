"""The stdio transport (`serve --transport stdio`): the same registry, driven by the SDK's
stdio client and by hand, with nothing but protocol on stdout."""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path

import mcp
import pytest
from mcp import MCPError

from tests.mcp.conftest import PYTHON, ROOT, KnowledgeBase, result_json, tool_data, tool_error
from tests.mcp.stdio_builders import INITIALIZE, INITIALIZED, run_raw, stdio_params

pytestmark = [pytest.mark.server]


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_stdio_serves_the_library_tools(knowledge_base: KnowledgeBase, mode: str) -> None:
    async with mcp.Client(stdio_params(knowledge_base), mode=mode) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        details = await client.call_tool("get_paper_details", {"paper_id": "he2016deep"})
        missing = await client.call_tool("get_paper_details", {"paper_id": 999999})
        with pytest.raises(MCPError) as unknown:
            await client.call_tool("no_such_tool", {})
        with pytest.raises(MCPError) as over_limit:
            await client.call_tool("list_project_papers", {"project_id": "vision", "limit": 500})
        assert client.server_capabilities.prompts is None
    assert "create_project" in names
    assert tool_data(details)["title"].startswith("Deep Residual")
    assert tool_error(missing)["code"] == "not_found"
    assert unknown.value.error.code == -32602
    assert over_limit.value.error.code == -32602


@pytest.mark.anyio
async def test_stdio_collections_flag_scopes_the_client(knowledge_base: KnowledgeBase) -> None:
    params = stdio_params(knowledge_base, "--collections", "nlp-reading,Nothing-Else")
    async with mcp.Client(params) as client:
        inside = await client.call_tool("get_paper_metadata", {"paper_id": "devlin2019bert"})
        outside = await client.call_tool("get_paper_metadata", {"paper_id": "he2016deep"})
    assert not inside.is_error
    assert tool_error(outside)["code"] == "not_found"


@pytest.mark.anyio
async def test_stdio_without_collection_when_required_is_32603(
    knowledge_base: KnowledgeBase,
) -> None:
    params = stdio_params(knowledge_base, env={"MCP_REQUIRE_COLLECTION": "true"})
    async with mcp.Client(params) as client:
        with pytest.raises(MCPError) as raised:
            await client.call_tool("get_paper_details", {"paper_id": "he2016deep"})
    assert raised.value.error.code == -32603
    assert "--collections" in raised.value.error.message


def test_nothing_but_protocol_reaches_stdout(knowledge_base: KnowledgeBase, tmp_path: Path) -> None:
    messages = [
        INITIALIZE,
        INITIALIZED,
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "nope"}},
        {"jsonrpc": "2.0", "id": 4, "method": "tools/call",
         "params": {"name": "get_paper_details", "arguments": {"paper_id": "he2016deep"}}},
    ]  # fmt: skip
    stderr_path = tmp_path / "stderr.log"
    with stderr_path.open("w") as stderr_file:  # a file: a full stderr pipe would block it
        process = subprocess.Popen(
            [PYTHON, "manage.py", "serve", "--transport", "stdio", "--verbose"],
            cwd=ROOT, env=knowledge_base.env, text=True,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr_file,
        )  # fmt: skip
    watchdog = threading.Timer(60, process.kill)
    watchdog.start()
    try:
        assert process.stdin is not None and process.stdout is not None
        for message in messages:
            process.stdin.write(json.dumps(message) + "\n")
        process.stdin.flush()
        lines = [process.stdout.readline() for _ in range(4)]  # one per request, in any order
        process.stdin.close()  # end of input ends the server
        rest = process.stdout.read()
        process.wait(30)
    finally:
        watchdog.cancel()
    stderr = stderr_path.read_text()
    assert process.returncode == 0, stderr
    assert rest == ""
    replies = {reply["id"]: reply for reply in map(json.loads, lines)}  # every line is JSON
    assert sorted(replies) == [1, 2, 3, 4]
    assert all(r["jsonrpc"] == "2.0" for r in replies.values())
    assert replies[3]["error"]["code"] == -32602
    assert result_json(replies[4]["result"])["year"] == 2016
    assert "DEBUG" in stderr  # --verbose logs, on stderr only


def test_stdio_refuses_to_start_when_mcp_is_disabled(knowledge_base: KnowledgeBase) -> None:
    done = run_raw(
        [PYTHON, "manage.py", "serve", "--transport", "stdio"],
        {**knowledge_base.env, "MCP_ENABLED": "false"},
        [INITIALIZE],
    )
    assert done.returncode != 0
    assert done.stdout == ""
    assert "MCP_ENABLED" in done.stderr


def _assert_served_from(directory: Path, done: subprocess.CompletedProcess[str]) -> None:
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[0])["result"]["serverInfo"]["name"]
    assert (directory / "exports").is_dir() and (directory / "cache").is_dir()


def test_manage_py_directory_option_takes_effect_before_settings(
    knowledge_base: KnowledgeBase, tmp_path: Path
) -> None:
    elsewhere, chosen = tmp_path / "from-env", tmp_path / "from-option"
    done = run_raw(
        [PYTHON, "manage.py", "serve", "--transport", "stdio", "--directory", str(chosen)],
        {**knowledge_base.env, "RESEARCH_DIRECTORY": str(elsewhere)},
        [INITIALIZE],
    )
    _assert_served_from(chosen, done)
    # Settings loaded once with the environment's directory before the command restarted
    # itself, but nothing was served from there.
    assert not (elsewhere / "research.db").exists()


def test_research_mcp_script_accepts_the_serve_arguments(
    knowledge_base: KnowledgeBase, tmp_path: Path
) -> None:
    elsewhere, chosen = tmp_path / "from-env", tmp_path / "kb"
    script = "import sys; from research_site.cli import main; main(sys.argv[1:])"
    done = run_raw(
        [PYTHON, "-c", script, "--transport", "stdio", "--directory", str(chosen)],
        {**knowledge_base.env, "RESEARCH_DIRECTORY": str(elsewhere)},
        [INITIALIZE],
    )
    _assert_served_from(chosen, done)
    assert not elsewhere.exists()
