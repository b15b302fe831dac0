"""Tool set `library`, citations: `format_citations`, each paper's reference and
in-text citation in any CSL style. A thin adapter over papers/citations/csl.py
(docs/CITATIONS.md); errors are mapped by `mcp_endpoint.registry`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from django.conf import settings
from pydantic import Field

from mcp_endpoint.registry import READ_ONLY, Registry, mcp_tool
from mcp_endpoint.scope import current_scope
from papers import selectors as paper_selectors
from papers.citations import csl
from papers.citations.styles import MAX_CSL_BYTES
from projects.citations import citations_for_project

PaperRefValue = paper_selectors.PaperRefValue
Page = Annotated[str, Field(min_length=1, max_length=csl.MAX_LOCATOR_LENGTH)]


@mcp_tool(
    name="format_citations",
    title="Format citations",
    description=(
        "Reference-list entries and in-text citations, e.g. '(Vaswani et al., 2017, p. "
        "5)', of library papers in a CSL style, as text or html."
    ),
    annotations=READ_ONLY,
)
def format_citations(
    paper_ids: Annotated[
        list[PaperRefValue] | None,
        Field(min_length=1, max_length=settings.MAX_PAGE_SIZE),
    ] = None,
    project_id: Annotated[
        str | None,
        Field(min_length=1, max_length=200, description="Cite all its papers (and paper_ids)."),
    ] = None,
    style: Annotated[
        str,
        Field(
            min_length=1,
            max_length=MAX_CSL_BYTES,
            description="A CSL style id (apa, ieee, chicago, harvard, mla, vancouver, ...) or "
            "CSL XML.",
        ),
    ] = "apa",
    locale: Annotated[
        str | None, Field(max_length=20, description="e.g. en-GB; default: the style's.")
    ] = None,
    locators: Annotated[
        dict[str, Page] | None,
        Field(
            max_length=settings.MAX_PAGE_SIZE,
            description='In-text page per paper, keyed as in paper_ids: {"vaswani2017": "5"}.',
        ),
    ] = None,
    format: Literal["text", "html"] = "text",
) -> dict[str, Any]:
    result = citations_for_project(
        project=project_id, refs=paper_ids or [], style=style, locale=locale,
        locators=locators, output=format, scope=current_scope(),
    )  # fmt: skip
    answer = result.as_dict()
    del answer["format"]
    return answer


def register(registry: Registry) -> None:
    registry.add_tools(format_citations)
