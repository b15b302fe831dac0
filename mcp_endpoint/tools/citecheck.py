"""Tool set `search`, part 3: `check_citations`, a thin adapter over
engines/citecheck/selectors.py; docs/CITATION-CHECK.md explains the statuses and the
support thresholds."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from mcp_types import ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field

from engines.base import SEARCH
from engines.citecheck.selectors import MAX_TEXT_CHARS, citations_check
from mcp_endpoint.registry import Registry, mcp_tool
from mcp_endpoint.scope import current_scope
from mcp_endpoint.tools.engines_search import Engines, engine_ids

# Reads the library and may ask the external engines; keeps nothing.
CHECK = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=True
)


class CitationReport(BaseModel):
    model_config = ConfigDict(extra="allow")

    citations: list[dict[str, Any]] = Field(
        description="Per cited work: marker, key, at (offset), status, paper, metadata "
        "('ok' or mismatching fields), flags (retracted/corrected/wrong_paper), support, "
        "page, similarity, fit."
    )
    summary: dict[str, Any]
    references: int = Field(description="Entries read from the reference list.")
    engines: dict[str, dict[str, Any]] = Field(description="Status of each engine asked.")


@mcp_tool(
    name="check_citations",
    title="Check citations",
    description=(
        "Verify a draft's citations ((Author, 2020), Author (2020), [3] with a reference "
        "list, \\cite{key}, [@key], DOIs, arXiv ids), library first. Per citation: status "
        "(exists, not_found, ambiguous; unresolved: could not tell), metadata mismatches, "
        "flags (retracted, corrected, wrong_paper: the sentence fits another paper of the "
        "author, given as paper) and whether the PDF supports the sentence (supported, "
        "unsupported, uncertain, no_pdf; fit: vs title+abstract). Keeps nothing."
    ),
    annotations=CHECK,
)
def check_citations(
    text: Annotated[
        str,
        Field(
            min_length=1,
            max_length=MAX_TEXT_CHARS,
            description="With its reference list, if any.",
        ),
    ],
    style_hint: Annotated[
        Literal["author_year", "numeric", "latex", "pandoc"] | None,
        Field(description="Only this style (default: all)."),
    ] = None,
    engines: Engines = None,
) -> CitationReport:
    return CitationReport.model_validate(
        citations_check(
            text=text,
            style_hint=style_hint,
            engine_ids=engine_ids(engines, operation=SEARCH),
            scope=current_scope(),
        )
    )


def register(registry: Registry) -> None:
    registry.add_tools(check_citations)
