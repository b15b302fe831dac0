"""attach_pdf from a local file (`path`), through the SDK clients against real servers:
stdio and loopback HTTP clients with an import folder may attach a PDF from it; nothing
outside that folder is ever read, and remote or unconfigured clients are refused.

Also `has_pdf`: true only for a stored PDF; a `pdf_url` alone is `has_pdf_url`."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mcp
import pytest
from mcp import MCPError, StdioServerParameters

from tests.mcp.conftest import (
    PYTHON,
    ROOT,
    KnowledgeBase,
    LiveServer,
    mcp_client,
    running_server,
    seeded_knowledge_base,
    tool_data,
    tool_error,
)

pytestmark = [pytest.mark.server, pytest.mark.anyio]

PDF = ROOT / "tests" / "fixtures" / "pdfs" / "2304.02623v1.pdf"  # 4 pages


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KnowledgeBase]:
    with seeded_knowledge_base(tmp_path_factory.mktemp("local-pdf-kb"), "mcp_local_pdf") as kb:
        # Tasks after an attach (markdown, passages) run in the serving process: a broker
        # would hand them to the suite's worker, which has another database.
        for name in ("REDIS_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND"):
            kb.env.pop(name, None)
        yield kb


@pytest.fixture(scope="module")
def import_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("imports")
    shutil.copy(PDF, folder / "paper.pdf")
    (folder / "notes.txt").write_text("not a pdf")
    return folder


@pytest.fixture(scope="module")
def import_server(kb: KnowledgeBase, import_dir: Path) -> Iterator[LiveServer]:
    """One server with PDF_IMPORT_DIR for the tests that read from the import folder."""
    with running_server(kb, env={"PDF_IMPORT_DIR": str(import_dir)}) as server:
        yield server


def paper_id(kb: KnowledgeBase, name: str) -> int:
    return int(kb.paper(name)["paper_id"])


async def attach(url: str, arguments: dict[str, Any]) -> Any:
    async with mcp_client(url) as client:
        return await client.call_tool("attach_pdf", arguments)


async def invalid(url: str, arguments: dict[str, Any]) -> Any:
    async with mcp_client(url) as client:
        with pytest.raises(MCPError) as raised:
            await client.call_tool("attach_pdf", arguments)
    assert raised.value.error.code == -32602
    return raised.value.error


async def test_a_loopback_client_attaches_a_pdf_from_the_import_folder(
    kb: KnowledgeBase, import_dir: Path, import_server: LiveServer
) -> None:
    before = tool_data(await _details(import_server.mcp_url, paper_id(kb, "bert")))
    assert before["has_pdf"] is False
    result = await attach(
        import_server.mcp_url, {"paper_id": paper_id(kb, "bert"), "path": "paper.pdf"}
    )
    data = tool_data(result)
    assert data["has_pdf"] is True and data["pdf"]["page_count"] == 4
    assert data["pdf"]["origin"] == "attached"
    # The PDF tools now work on it; the import folder keeps its file.
    async with mcp_client(import_server.mcp_url) as client:
        outline = tool_data(
            await client.call_tool("get_pdf_outline", {"paper_id": paper_id(kb, "bert")})
        )
    assert outline["total_pages"] == 4
    assert (import_dir / "paper.pdf").is_file()


@pytest.mark.parametrize(
    "path",
    ["../outside.pdf", "/etc/passwd", "sub/../../outside.pdf", "link.pdf"],
)
async def test_nothing_outside_the_import_folder_is_read(
    kb: KnowledgeBase, import_dir: Path, import_server: LiveServer, path: str
) -> None:
    outside = import_dir.parent / "outside.pdf"
    shutil.copy(PDF, outside)
    link = import_dir / "link.pdf"
    if not link.exists():
        link.symlink_to(outside)
    error = tool_error(
        await attach(import_server.mcp_url, {"paper_id": paper_id(kb, "resnet"), "path": path})
    )
    assert error["code"] == "local_file_refused", error
    assert (
        tool_data(await _details(import_server.mcp_url, paper_id(kb, "resnet")))["has_pdf"] is False
    )


async def test_a_file_that_is_not_a_pdf_or_missing_is_a_clear_error(
    kb: KnowledgeBase, import_server: LiveServer
) -> None:
    not_pdf = tool_error(
        await attach(
            import_server.mcp_url, {"paper_id": paper_id(kb, "resnet"), "path": "notes.txt"}
        )
    )
    assert not_pdf["code"] == "not_a_pdf"
    missing = await invalid(
        import_server.mcp_url, {"paper_id": paper_id(kb, "resnet"), "path": "no.pdf"}
    )
    assert "no.pdf" in missing.message


async def test_http_clients_get_no_local_files_unless_the_operator_names_a_folder(
    kb: KnowledgeBase, import_dir: Path
) -> None:
    # Behind a reverse proxy on this machine every HTTP client looks local: only an
    # explicit PDF_IMPORT_DIR opens local files to loopback HTTP clients.
    shutil.copy(PDF, kb.directory / "imports" / "paper.pdf")
    with running_server(kb) as server:
        error = tool_error(
            await attach(server.mcp_url, {"paper_id": paper_id(kb, "resnet"), "path": "paper.pdf"})
        )
    assert error["code"] == "local_file_refused"
    assert str(kb.directory) not in error["message"]


async def test_a_stdio_client_attaches_from_the_knowledge_base_import_folder(
    kb: KnowledgeBase,
) -> None:
    shutil.copy(PDF, kb.directory / "imports" / "stdio.pdf")
    params = StdioServerParameters(
        command=PYTHON,
        args=["manage.py", "serve", "--transport", "stdio"],
        env=kb.env,
        cwd=str(ROOT),
    )
    async with mcp.Client(params) as client:
        refused = await client.call_tool(
            "attach_pdf",
            {"paper_id": paper_id(kb, "resnet"), "path": str(kb.directory / "research.db")},
        )
        assert tool_error(refused)["code"] == "local_file_refused"
        with pytest.raises(MCPError) as both:
            await client.call_tool(
                "attach_pdf",
                {
                    "paper_id": paper_id(kb, "resnet"),
                    "path": "stdio.pdf",
                    "url": "https://x.org/a.pdf",
                },
            )
        assert both.value.error.code == -32602
        data = tool_data(
            await client.call_tool(
                "attach_pdf", {"paper_id": paper_id(kb, "resnet"), "path": "stdio.pdf"}
            )
        )
    assert data["has_pdf"] is True and data["paper_id"] == paper_id(kb, "resnet")


async def test_has_pdf_is_a_stored_pdf_and_a_link_is_has_pdf_url(kb: KnowledgeBase) -> None:
    # A known download link on one paper, as an import from a source with PDF links gives.
    subprocess.run(
        [PYTHON, "manage.py", "shell", "-c",
         "from papers.models import Paper; "
         "Paper.objects.filter(citekey='vaswani2017attention')"
         ".update(pdf_url='https://arxiv.org/pdf/1706.03762')"],
        env=kb.env, cwd=ROOT, check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    with running_server(kb) as server:
        async with mcp_client(server.mcp_url) as client:
            linked = tool_data(
                await client.call_tool(
                    "search_papers_by_payload",
                    {"payload": {"has_pdf_url": True, "has_pdf": False}, "limit": 50},
                )
            )
            stored = tool_data(
                await client.call_tool(
                    "search_papers_by_payload", {"payload": {"has_pdf": True}, "limit": 50}
                )
            )
    assert [r["citekey"] for r in linked["results"]] == ["vaswani2017attention"]
    assert linked["results"][0]["has_pdf"] is False
    assert linked["results"][0]["pdf_url"] == "https://arxiv.org/pdf/1706.03762"
    assert stored["results"], "earlier tests attached PDFs"
    assert all(record["has_pdf"] is True for record in stored["results"])


async def _details(url: str, ref: int) -> Any:
    async with mcp_client(url) as client:
        return await client.call_tool("get_paper_details", {"paper_id": ref})
