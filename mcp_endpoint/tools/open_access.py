"""Tool set `pdf`, open-access PDFs (docs/OPEN-ACCESS.md): `find_open_access_pdf`.

A thin adapter over engines.open_access.find_and_attach, which looks in the paper's own
record, arXiv, the ACL Anthology, OpenAlex, Unpaywall (with UNPAYWALL_EMAIL) and Semantic
Scholar, best first, and attaches the first real PDF through the guarded download (its
passages are then indexed for search_passages). It attaches by default, so read-only mode
hides it, as it hides attach_pdf; `attach: false` only says where the PDF is.
"""

from __future__ import annotations

from typing import Any

from mcp_types import ToolAnnotations

from engines.open_access import find_and_attach
from mcp_endpoint.registry import Registry
from mcp_endpoint.scope import current_scope
from mcp_endpoint.tools.library import PaperRefValue
from papers.selectors import paper_get

# Asks outside sources and adds a PDF where the paper had none (never replaces one).
FIND_AND_ATTACH = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=True
)


def register(registry: Registry) -> None:
    registry.tool(
        name="find_open_access_pdf",
        title="Find open-access PDF",
        description=(
            "Find and attach a paper's free PDF (arXiv, ACL, OpenAlex, Unpaywall, Semantic "
            "Scholar) for search_passages. attach=false: locate only."
        ),
        annotations=FIND_AND_ATTACH,
    )(find_open_access_pdf)


def find_open_access_pdf(
    paper_id: PaperRefValue,
    attach: bool = True,
) -> dict[str, Any]:
    paper = paper_get(ref=paper_id, scope=current_scope())
    return lean_answer(find_and_attach(paper, attach=attach))


def lean_answer(result: dict[str, Any]) -> dict[str, Any]:
    """find_and_attach's answer without what an agent cannot act on: the notes of sources
    that worked or were skipped, and empty fields."""
    answer = {
        key: result[key]
        for key in ("paper_id", "status", "source", "url", "pages")
        if result.get(key) is not None
    }
    if result.get("tried"):
        answer["tried"] = [f"{t['url']} ({t['reason']})" for t in result["tried"]]
    failed = {
        source: note.removeprefix("failed: ")
        for source, note in (result.get("notes") or {}).items()
        if note.startswith("failed: ")
    }
    if failed:
        answer["failed_sources"] = failed
    return answer
