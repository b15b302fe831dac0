"""The `assets` tools and the paper:// asset resources over /mcp, against a real server
process whose ASSET_BASE_URL is a local HTTP server (tests.papers.assets.builders.AssetServer).

The knowledge base is this module's own (seeded like the shared one, then given assets
with `manage.py import_assets` and `asset_register_remote`), so the assets never leak
into other modules' expectations. Paper `attention` has local assets, `bert` remote ones
(plus a local summary whose file is broken afterwards), `resnet` none, `unfiled` is
where summaries are saved.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from mcp import MCPError

from tests.mcp.builders import run
from tests.mcp.conftest import (
    SEED_SCRIPT,
    KnowledgeBase,
    LiveServer,
    base_env,
    call_tool_raw,
    mcp_client,
    post,
    running_server,
    server_database,
    tool_data,
    tool_error,
)
from tests.papers.assets.builders import ATTENTION, BRIEF, DEEP_READ, SOURCE, ZH, AssetServer

pytestmark = [pytest.mark.server, pytest.mark.anyio]

RESOURCE_MAX_CHARS = 500
REMOTE_BRIEF = '{"template": "brief", "tldr": "BERT pre-trains bidirectional encoders."}'
REMOTE_SOURCE = "# BERT\n\nWe introduce a new language representation model called BERT.\n"
REMOTE_PT = "# BERT\n\nApresentamos um novo modelo de representação de linguagem.\n"

REGISTER_REMOTE = """
from papers.assets import asset_register_remote
from papers.models import Paper
paper = Paper.objects.get(pk={paper_id})
for kind, name in {assets!r}:
    asset_register_remote(paper=paper, kind=kind, name=name)
"""


@dataclass
class AssetsSetup:
    kb: KnowledgeBase
    server: LiveServer
    remote: AssetServer
    elsewhere: AssetServer

    def paper_id(self, name: str) -> int:
        return int(self.kb.paper(name)["paper_id"])


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AssetsSetup]:
    directory = tmp_path_factory.mktemp("assets-kb")
    with (
        server_database("mcp_assets") as database_url,
        AssetServer(directory / "served") as remote,
        AssetServer(directory / "elsewhere") as elsewhere,
    ):
        env = base_env(directory, database_url)
        data = json.loads(run(env, str(SEED_SCRIPT)).strip().splitlines()[-1])
        kb = KnowledgeBase(directory, env, data)
        bert = int(data["papers"]["bert"]["paper_id"])

        # bert: remote assets, registered while the asset host serves them all.
        for relative, content in {
            "summary/brief.json": REMOTE_BRIEF,
            "summary/deep_read.json": DEEP_READ,
            "summary/slow.json": BRIEF,
            "summary/away.json": BRIEF,
            "canonical/moved.json": DEEP_READ,
            "source.md": REMOTE_SOURCE,
            "translation/pt-BR.md": REMOTE_PT,
        }.items():
            remote.put(f"{bert}/{relative}", content)
        remote.behaviours[f"{bert}/summary/moved.json"] = ("redirect", "../canonical/moved.json")
        names = [("summary", n) for n in ("brief", "deep_read", "slow", "away", "moved")]
        names += [("source", ""), ("translation", "pt-BR")]
        env_remote = {**env, "ASSET_BASE_URL": remote.base_url}
        run(
            env_remote,
            "manage.py",
            "shell",
            "-c",
            REGISTER_REMOTE.format(paper_id=bert, assets=names),
        )

        # attention: local assets, imported as a folder; bert: one local summary.
        folder = directory / "import"
        shutil.copytree(ATTENTION, folder / data["papers"]["attention"]["citekey"])
        (folder / str(bert) / "summary").mkdir(parents=True)
        (folder / str(bert) / "summary" / "broken.json").write_text('{"ok": true}')
        out = run(env, "manage.py", "import_assets", str(folder), "--no-progress")
        assert "Imported 5 assets, 0 failed." in out

        # Then the failures the tests expect.
        (directory / "assets" / str(bert) / "summary" / "broken.json").write_text('{"tldr": ')
        (remote.root / str(bert) / "summary" / "deep_read.json").unlink()
        remote.behaviours[f"{bert}/summary/slow.json"] = ("hang",)
        remote.behaviours[f"{bert}/summary/away.json"] = (
            "redirect",
            f"{elsewhere.base_url}/{bert}/summary/away.json",
        )
        elsewhere.put(f"{bert}/summary/away.json", '{"attacker": true}')

        server_env = {
            "ASSET_BASE_URL": remote.base_url,
            "ASSET_FETCH_TIMEOUT": "1",
            "RESOURCE_DEFAULT_MAX_CHARS": str(RESOURCE_MAX_CHARS),
        }
        with running_server(kb, env=server_env) as server:
            yield AssetsSetup(kb, server, remote, elsewhere)


async def call(setup: AssetsSetup, tool: str, arguments: dict[str, Any]) -> Any:
    async with mcp_client(setup.server.mcp_url) as client:
        return await client.call_tool(tool, arguments)


async def read(setup: AssetsSetup, uri: str) -> Any:
    async with mcp_client(setup.server.mcp_url) as client:
        return (await client.read_resource(uri)).contents[0]


async def read_error(setup: AssetsSetup, uri: str) -> Any:
    async with mcp_client(setup.server.mcp_url) as client:
        with pytest.raises(MCPError) as raised:
            await client.read_resource(uri)
    return raised.value.error


# --- listing -----------------------------------------------------------------------------


async def test_asset_tools_and_resources_are_listed_with_llm_descriptions(
    setup: AssetsSetup,
) -> None:
    async with mcp_client(setup.server.mcp_url, mode="auto") as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        templates = {
            t.uri_template: t for t in (await client.list_resource_templates()).resource_templates
        }
    summary, source, save = (
        tools["get_paper_summary"], tools["get_paper_source"], tools["save_paper_summary"]
    )  # fmt: skip
    assert summary.description and source.description
    assert "get_paper_metadata" in summary.description
    assert "Large" in source.description and "max_chars" in source.description
    assert summary.annotations and source.annotations and save.annotations
    assert summary.annotations.read_only_hint is True and source.annotations.read_only_hint
    assert save.annotations.read_only_hint is False
    assert summary.input_schema["properties"]["max_chars"]["minimum"] == 1
    assert summary.input_schema["properties"]["max_chars"]["maximum"] > 1
    assert set(templates) >= {
        "paper://{paper_id}/metadata", "paper://{paper_id}/summary",
        "paper://{paper_id}/summary/{template}", "paper://{paper_id}/source",
        "paper://{paper_id}/translation/{lang}",
    }  # fmt: skip
    assert templates["paper://{paper_id}/summary"].mime_type == "application/json"
    assert templates["paper://{paper_id}/source"].mime_type == "text/markdown"


# --- get_paper_metadata ------------------------------------------------------------------


async def test_metadata_includes_preferred_and_available_templates(setup: AssetsSetup) -> None:
    attention = await call(setup, "get_paper_metadata", {"paper_id": setup.paper_id("attention")})
    resnet = await call(setup, "get_paper_metadata", {"paper_id": setup.paper_id("resnet")})
    bert = await read(setup, f"paper://{setup.paper_id('bert')}/metadata")
    assert tool_data(attention)["preferred_summary_template"] == "brief"
    assert tool_data(attention)["available_summary_templates"] == ["brief", "deep_read"]
    assert "abstract" not in tool_data(attention)
    assert "preferred_summary_template" not in tool_data(resnet)
    assert tool_data(resnet)["available_summary_templates"] == []
    record = json.loads(bert.text)
    assert record["preferred_summary_template"] == "brief"
    assert record["available_summary_templates"] == [
        "away", "brief", "broken", "deep_read", "moved", "slow",
    ]  # fmt: skip


# --- get_paper_summary -------------------------------------------------------------------


async def test_summary_defaults_to_the_preferred_template_as_full_json_text(
    setup: AssetsSetup,
) -> None:
    result = await call(setup, "get_paper_summary", {"paper_id": setup.paper_id("attention")})
    assert not result.is_error
    assert result.content[0].text == BRIEF
    assert result.structured_content is None and len(result.content) == 1


async def test_summary_by_template_accepts_any_paper_reference(setup: AssetsSetup) -> None:
    citekey = setup.kb.paper("attention")["citekey"]
    result = await call(setup, "get_paper_summary", {"paper_id": citekey, "template": "deep_read"})
    assert json.loads(result.content[0].text) == json.loads(DEEP_READ)
    assert "http" not in result.content[0].text.split('"notes"')[0]


async def test_summary_max_chars_truncates_with_a_marker(setup: AssetsSetup) -> None:
    result = await call(
        setup,
        "get_paper_summary",
        {"paper_id": setup.paper_id("attention"), "template": "deep_read", "max_chars": 100},
    )
    text = result.content[0].text
    assert text.startswith(DEEP_READ[:100] + "\n\n[TRUNCATED: showed the first 100 of ")
    assert f"{len(DEEP_READ) - 100} characters were cut" in text
    assert f"template='deep_read' and max_chars={len(DEEP_READ)}" in text


async def test_unknown_template_is_template_not_available_with_the_list(
    setup: AssetsSetup,
) -> None:
    paper_id = setup.paper_id("attention")
    result = await call(setup, "get_paper_summary", {"paper_id": paper_id, "template": "tldr"})
    assert tool_error(result) == {
        "code": "template_not_available",
        "message": (
            f"Paper {paper_id} has no 'tldr' summary; available templates: brief, deep_read."
        ),
        "paper_id": paper_id,
        "template": "tldr",
        "available_summary_templates": ["brief", "deep_read"],
    }


async def test_paper_without_summaries_is_template_not_available(setup: AssetsSetup) -> None:
    result = await call(setup, "get_paper_summary", {"paper_id": setup.paper_id("resnet")})
    error = tool_error(result)
    assert error["code"] == "template_not_available"
    assert error["available_summary_templates"] == []


async def test_remote_summary_is_proxied_without_its_url(setup: AssetsSetup) -> None:
    before = len(setup.remote.requests)
    paper_id = setup.paper_id("bert")
    result = await call(setup, "get_paper_summary", {"paper_id": paper_id})
    moved = await call(setup, "get_paper_summary", {"paper_id": paper_id, "template": "moved"})
    assert result.content[0].text == REMOTE_BRIEF
    assert moved.content[0].text == DEEP_READ  # a same-host redirect is followed
    assert f"/assets/{paper_id}/summary/brief.json" in setup.remote.requests[before:]


@pytest.mark.parametrize(
    ("template", "reason"),
    [("deep_read", "not_found"), ("slow", "timeout"), ("away", "redirect_refused")],
)
def test_remote_failures_are_asset_fetch_failed_without_the_url(
    setup: AssetsSetup, template: str, reason: str
) -> None:
    paper_id = setup.paper_id("bert")
    response = call_tool_raw(
        setup.server.mcp_url, "get_paper_summary", {"paper_id": paper_id, "template": template}
    )
    result = response.json()["result"]
    assert result["isError"] is True and "structuredContent" not in result
    error = json.loads(result["content"][0]["text"])["error"]
    assert (error["code"], error["reason"]) == ("asset_fetch_failed", reason)
    assert (error["paper_id"], error["template"]) == (paper_id, template)
    assert "http" not in response.text and setup.remote.origin.split("//")[1] not in response.text
    assert setup.elsewhere.requests == []


async def test_summary_file_that_is_not_json_is_asset_parse_failed(setup: AssetsSetup) -> None:
    paper_id = setup.paper_id("bert")
    result = await call(setup, "get_paper_summary", {"paper_id": paper_id, "template": "broken"})
    error = tool_error(result)
    assert error["code"] == "asset_parse_failed"
    assert (error["paper_id"], error["template"]) == (paper_id, "broken")
    assert str(setup.kb.directory) not in json.dumps(error)


@pytest.mark.parametrize(
    ("tool", "arguments", "field"),
    [
        ("get_paper_summary", {"paper_id": 1, "template": "../../etc/passwd"}, "template"),
        ("get_paper_summary", {"paper_id": 1, "template": "/etc/passwd"}, "template"),
        ("get_paper_summary", {"paper_id": 1, "template": "a%2F..%2Fb"}, "template"),
        ("get_paper_summary", {"paper_id": 1, "max_chars": 0}, "max_chars"),
        ("get_paper_source", {"paper_id": 1, "max_chars": 10_000_001}, "max_chars"),
        ("get_paper_source", {"paper_id": 1, "lang": "../zh"}, "lang"),
        ("save_paper_summary", {"paper_id": 1, "template": "..", "content": "{}"}, "template"),
        ("save_paper_summary", {"paper_id": 1, "template": "brief"}, "content"),
    ],
)
async def test_bad_asset_arguments_are_32602(
    setup: AssetsSetup, tool: str, arguments: dict[str, Any], field: str
) -> None:
    async with mcp_client(setup.server.mcp_url) as client:
        with pytest.raises(MCPError) as raised:
            await client.call_tool(tool, arguments)
    assert raised.value.error.code == -32602
    assert any(e["field"].startswith(field) for e in raised.value.error.data["errors"])


# --- get_paper_source --------------------------------------------------------------------


async def test_source_is_markdown_text(setup: AssetsSetup) -> None:
    local = await call(setup, "get_paper_source", {"paper_id": setup.paper_id("attention")})
    remote = await call(setup, "get_paper_source", {"paper_id": setup.kb.paper("bert")["id"]})
    assert local.content[0].text == SOURCE
    assert "[TRUNCATED" not in local.content[0].text
    assert remote.content[0].text == REMOTE_SOURCE


async def test_source_max_chars_returns_the_first_characters_and_a_marker(
    setup: AssetsSetup,
) -> None:
    result = await call(
        setup, "get_paper_source", {"paper_id": setup.paper_id("attention"), "max_chars": 200}
    )
    text = result.content[0].text
    kept, marker = text.split("\n\n[TRUNCATED: ", 1)
    assert kept == SOURCE[:200]
    assert marker.startswith(f"showed the first 200 of {len(SOURCE)} characters; ")
    assert "get_paper_source" in marker


async def test_source_with_lang_is_the_translation(setup: AssetsSetup) -> None:
    paper_id = setup.paper_id("attention")
    zh = await call(setup, "get_paper_source", {"paper_id": paper_id, "lang": "ZH"})
    cut = await call(
        setup, "get_paper_source", {"paper_id": paper_id, "lang": "zh", "max_chars": 5}
    )
    french = await call(setup, "get_paper_source", {"paper_id": paper_id, "lang": "fr"})
    assert zh.content[0].text == ZH
    assert f"lang='zh' and max_chars={len(ZH)}" in cut.content[0].text
    error = tool_error(french)
    assert (error["code"], error["lang"]) == ("asset_not_found", "fr")
    assert error["available_translations"] == ["zh"]


async def test_missing_source_is_asset_not_found(setup: AssetsSetup) -> None:
    paper_id = setup.paper_id("resnet")
    result = await call(setup, "get_paper_source", {"paper_id": paper_id})
    assert tool_error(result) == {
        "code": "asset_not_found",
        "message": f"The source markdown of paper {paper_id} is not available.",
        "paper_id": paper_id,
        "kind": "source",
    }


async def test_unknown_paper_is_not_found(setup: AssetsSetup) -> None:
    result = await call(setup, "get_paper_source", {"paper_id": 999999})
    assert tool_error(result)["code"] == "not_found"


async def test_papers_outside_the_client_collections_are_not_found(setup: AssetsSetup) -> None:
    async with mcp_client(f"{setup.server.mcp_url}?collections=vision") as client:
        summary = await client.call_tool(
            "get_paper_summary", {"paper_id": setup.paper_id("attention")}
        )
        with pytest.raises(MCPError) as raised:
            await client.read_resource(f"paper://{setup.paper_id('attention')}/source")
    assert tool_error(summary)["code"] == "not_found"
    # A resource not found: -32002 for handshake-era clients (docs/MCP.md "Errors").
    assert raised.value.error.code == -32002


# --- save_paper_summary ------------------------------------------------------------------


async def test_saved_summary_is_stored_preferred_and_readable(setup: AssetsSetup) -> None:
    paper_id = setup.paper_id("unfiled")
    content = '{"tldr": "Notes on the Analytical Engine.", "written_by": "agent"}'
    async with mcp_client(setup.server.mcp_url) as client:
        saved = await client.call_tool(
            "save_paper_summary",
            {"paper_id": paper_id, "template": "Agent_Brief", "content": content},
        )
        again = await client.call_tool(
            "save_paper_summary",
            {"paper_id": paper_id, "template": "second", "content": '{"a": 1}'},
        )
        read_back = await client.call_tool("get_paper_summary", {"paper_id": paper_id})
    assert tool_data(saved) == {
        "paper_id": paper_id,
        "template": "agent_brief",
        "size": len(content),
        "preferred_summary_template": "agent_brief",
        "available_summary_templates": ["agent_brief"],
    }
    assert tool_data(again)["preferred_summary_template"] == "agent_brief"
    assert read_back.content[0].text == content
    stored = setup.kb.directory / "assets" / str(paper_id) / "summary" / "agent_brief.json"
    assert stored.read_text() == content


@pytest.mark.parametrize("content", ["{not json", '"a string"', "[1, 2]"])
async def test_save_summary_rejects_what_is_not_a_json_object(
    setup: AssetsSetup, content: str
) -> None:
    async with mcp_client(setup.server.mcp_url) as client:
        with pytest.raises(MCPError) as raised:
            await client.call_tool(
                "save_paper_summary",
                {"paper_id": setup.paper_id("resnet"), "template": "bad", "content": content},
            )
        after = await client.call_tool("get_paper_metadata", {"paper_id": setup.paper_id("resnet")})
    assert raised.value.error.code == -32602
    data = raised.value.error.data
    fields = [data.get("field", ""), *(e["field"] for e in data.get("errors", []))]
    assert any(field.startswith("content") for field in fields), data
    assert tool_data(after)["available_summary_templates"] == []


# --- resources ---------------------------------------------------------------------------


async def test_summary_resources_return_the_json_directly(setup: AssetsSetup) -> None:
    paper_id = setup.paper_id("attention")
    preferred = await read(setup, f"paper://{paper_id}/summary")
    deep = await read(setup, f"paper://{paper_id}/summary/deep_read")
    assert (preferred.mime_type, preferred.text) == ("application/json", BRIEF)
    # deep_read is longer than the servers' RESOURCE_DEFAULT_MAX_CHARS of 500.
    assert deep.text.startswith(DEEP_READ[:RESOURCE_MAX_CHARS] + "\n\n[TRUNCATED: ")
    assert f"get_paper_summary (template='deep_read') with max_chars={len(DEEP_READ)}" in deep.text


async def test_source_resource_applies_the_default_truncation(setup: AssetsSetup) -> None:
    content = await read(setup, f"paper://{setup.paper_id('attention')}/source")
    kept, marker = content.text.split("\n\n[TRUNCATED: ", 1)
    assert content.mime_type == "text/markdown"
    assert kept == SOURCE[:RESOURCE_MAX_CHARS]
    assert f"showed the first {RESOURCE_MAX_CHARS} of {len(SOURCE)} characters" in marker
    assert f"call get_paper_source with max_chars={len(SOURCE)}" in marker


async def test_translation_resources_return_markdown(setup: AssetsSetup) -> None:
    zh = await read(setup, f"paper://{setup.paper_id('attention')}/translation/zh")
    pt = await read(setup, f"paper://{setup.paper_id('bert')}/translation/pt-br")
    assert (zh.mime_type, zh.text) == ("text/markdown", ZH)
    assert pt.text == REMOTE_PT


@pytest.mark.parametrize(
    ("path", "words"),
    [("translation/fr", "not available"), ("summary/tldr", "available templates: brief"),
     ("summary/Bad%20Name", "template must be"), ("summary/-x", "template must be"),
     ("translation/en_US", "language code")],
)  # fmt: skip
async def test_missing_resources_are_32602_with_the_reason(
    setup: AssetsSetup, path: str, words: str
) -> None:
    error = await read_error(setup, f"paper://{setup.paper_id('attention')}/{path}")
    assert error.code == -32602
    assert words in error.message


@pytest.mark.parametrize(
    "path",
    ["summary/..%2F..%2F..%2Fresearch.db", "summary/%2Fetc%2Fpasswd", "translation/..",
     "translation/..%2F..%2Fsource", "summary/..%5Csecret", "source/..%2F..%2Fresearch.db"],
)  # fmt: skip
async def test_resource_paths_cannot_traverse(setup: AssetsSetup, path: str) -> None:
    error = await read_error(setup, f"paper://{setup.paper_id('attention')}/{path}")
    assert error.code in (-32002, -32602)  # not found, or a name that cannot be one
    assert str(setup.kb.directory) not in error.message and "SQLite" not in error.message


async def test_resource_fetch_failure_is_an_error_without_the_url(setup: AssetsSetup) -> None:
    error = await read_error(setup, f"paper://{setup.paper_id('bert')}/summary/deep_read")
    assert "404" in error.message
    assert "http" not in error.message and "127.0.0.1" not in error.message


# Last: it gives resnet a summary, which the tests above expect it not to have.
async def test_summary_may_be_sent_as_a_json_object(setup: AssetsSetup) -> None:
    paper_id = setup.paper_id("resnet")
    async with mcp_client(setup.server.mcp_url) as client:
        saved = await client.call_tool(
            "save_paper_summary",
            {"paper_id": paper_id, "template": "as_object", "content": {"tldr": "Deeper nets."}},
        )
        read_back = await client.call_tool(
            "get_paper_summary", {"paper_id": paper_id, "template": "as_object"}
        )
    assert tool_data(saved)["template"] == "as_object"
    assert json.loads(read_back.content[0].text) == {"tldr": "Deeper nets."}
    # 500 levels: deeper than any schema, within what JSON parsers take (json.dumps and
    # json.loads stop near 1,000; the transport answers deeper bodies -32700).
    deep = '{"x":' * 500 + "{}" + "}" * 500
    body = (
        '{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"save_paper_summary",'
        f'"arguments":{{"paper_id":{paper_id},"template":"deep","content":{deep}}}}}}}'
    )
    answer = post(
        setup.server.mcp_url, content=body.encode(), headers={"mcp-protocol-version": "2025-06-18"}
    ).json()
    assert answer["error"]["code"] == -32602, answer
    assert "nested" in answer["error"]["message"] or "depth" in answer["error"]["message"]
