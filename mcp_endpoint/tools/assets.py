"""Tool set `assets`: paper summaries (by template), source markdown and translations, as
tools and resources, cut to the content size limits (docs/MCP.md).

The content comes back as text; where it is stored (a file, ASSET_BASE_URL) never does.
Reading and the errors are `papers.assets`; the registry maps its errors: an unknown
template, a missing asset, a failed fetch or parse are `isError` results for tools; for
resources the first two (NotFound subclasses) are -32602 and the others -32603, each with
the message (the registry's resource errors carry no details).
"""

from __future__ import annotations

import json
import re
from typing import Annotated, Any

from django.conf import settings
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import AfterValidator, BaseModel, Field

from mcp_endpoint.registry import READ_ONLY, Registry, mcp_resource, mcp_tool
from mcp_endpoint.scope import current_scope
from mcp_endpoint.tools.library import PaperRef
from papers import assets
from papers.selectors import paper_get

# Large enough for any asset (ASSET_MAX_BYTES is 5 MB by default); a bigger value is a
# -32602 validation error rather than a silent clamp.
MAX_CHARS_LIMIT = 10_000_000
# What a content tool returns when max_chars is omitted (about 5,000 tokens); the marker
# at the cut says how to read on.
DEFAULT_MAX_CHARS = 20_000


SummaryText = Annotated[str, Field(min_length=2, max_length=settings.ASSET_MAX_BYTES)]


def _summary_text(content: dict[str, Any]) -> str:
    return json.dumps(content, ensure_ascii=False)


SAVE_SUMMARY = ToolAnnotations(
    # Replaces the summary of the same template, so repeating a call changes nothing more.
    read_only_hint=False,
    destructive_hint=True,
    idempotent_hint=True,
    open_world_hint=False,
)


def _form(pattern: str, what: str) -> AfterValidator:
    """A check of a name's form, made here rather than as a schema `pattern` (tokens in
    every tools/list): an agent needs only an example, and the error says the form in words."""
    compiled = re.compile(pattern)

    def check(value: str | None) -> str | None:
        if value is not None and not compiled.fullmatch(value):
            raise ValueError(what)
        return value

    return AfterValidator(check)


Template = Annotated[
    str,
    _form(
        assets.TEMPLATE_PATTERN,
        "a template is 1-64 letters, digits, '_', '-' or '.', starting with a letter or digit",
    ),
    Field(description="e.g. 'brief'."),
]
Language = Annotated[
    str | None, _form(assets.LANGUAGE_PATTERN, "lang is a code such as 'zh', 'pt-BR', 'zh-Hans'")
]
MaxChars = Annotated[int | None, Field(ge=1, le=MAX_CHARS_LIMIT)]


class SummarySaved(BaseModel):
    paper_id: int
    template: str
    size: int = Field(description="Bytes stored.")
    preferred_summary_template: str | None
    available_summary_templates: list[str]


def _content_result(text: str, max_chars: int | None, more: str) -> CallToolResult:
    """The content as the one text block an LLM reads, cut at max_chars (a default budget
    when omitted) with a marker that says how much is left and how to get it."""
    shown = assets.truncate(text, max_chars or DEFAULT_MAX_CHARS, more=more)
    return CallToolResult(content=[TextContent(type="text", text=shown)])


def _resource_more(tool: str, total: int) -> str:
    return (
        f"Resources return at most {settings.RESOURCE_DEFAULT_MAX_CHARS} characters; "
        f"call {tool} with max_chars={total} for the rest."
    )


@mcp_tool(
    name="get_paper_summary",
    title="Paper summary",
    description=(
        "A paper's stored summary (JSON text) in a template, default its preferred one; "
        "get_paper_metadata lists the templates."
    ),
    annotations=READ_ONLY,
)
def get_paper_summary(
    paper_id: PaperRef,
    template: Template | None = None,
    max_chars: MaxChars = None,
) -> CallToolResult:
    paper = paper_get(ref=paper_id, scope=current_scope())
    summary = assets.summary_get(paper=paper, template=template)
    more = (
        f"Call get_paper_summary with template='{summary.name}' and "
        f"max_chars={len(summary.text)} for the full summary."
    )
    return _content_result(summary.text, max_chars, more)


@mcp_tool(
    name="get_paper_source",
    title="Paper full text",
    description=(
        "A paper's full text as markdown, or its translation with lang ('zh', 'pt-BR'). "
        "Large: read it in parts with max_chars."
    ),
    annotations=READ_ONLY,
)
def get_paper_source(
    paper_id: PaperRef,
    max_chars: MaxChars = None,
    lang: Language = None,
) -> CallToolResult:
    paper = paper_get(ref=paper_id, scope=current_scope())
    if lang is None:
        source = assets.source_get(paper=paper)
    else:
        source = assets.translation_get(paper=paper, lang=lang)
    language = f"lang='{source.name}' and " if lang else ""
    more = f"Call get_paper_source with {language}max_chars={len(source.text)} for all of it."
    return _content_result(source.text, max_chars, more)


@mcp_tool(
    name="save_paper_summary",
    title="Save a paper summary",
    description=(
        "Store your summary of a paper under a template name, replacing that template's "
        "earlier one."
    ),
    annotations=SAVE_SUMMARY,
)
def save_paper_summary(
    paper_id: PaperRef,
    template: Template,
    content: Annotated[
        dict[str, Any] | Annotated[str, Field(min_length=2, max_length=settings.ASSET_MAX_BYTES)],
        Field(description='JSON, e.g. {"tldr": "...", "findings": []}'),
    ],
    set_preferred: bool = False,
) -> SummarySaved:
    paper = paper_get(ref=paper_id, scope=current_scope())
    asset = assets.asset_save(
        paper=paper,
        kind=assets.Kind.SUMMARY,
        name=template,
        content=content if isinstance(content, str) else _summary_text(content),
        set_preferred=set_preferred,
    )
    info = assets.summary_templates_info(paper_id=paper.pk)
    return SummarySaved(
        paper_id=paper.pk,
        template=asset.name,
        size=asset.size,
        preferred_summary_template=info["preferred_summary_template"],  # type: ignore[arg-type]
        available_summary_templates=info["available_summary_templates"],  # type: ignore[arg-type]
    )


def _read_summary(paper_id: str, template: str | None) -> str:
    paper = paper_get(ref=paper_id, scope=current_scope())
    summary = assets.summary_get(paper=paper, template=template)
    more = _resource_more(f"get_paper_summary (template='{summary.name}')", len(summary.text))
    return assets.truncate(summary.text, settings.RESOURCE_DEFAULT_MAX_CHARS, more=more)


@mcp_resource(
    "paper://{paper_id}/summary",
    name="paper_summary",
    title="Paper summary (preferred template)",
    description="The paper's summary in its preferred template, as JSON.",
    mime_type="application/json",
)
def paper_summary_resource(paper_id: str) -> str:
    return _read_summary(paper_id, None)


@mcp_resource(
    "paper://{paper_id}/summary/{template}",
    name="paper_summary_template",
    title="Paper summary by template",
    description=(
        "The paper's summary made with one template (e.g. deep_read), as JSON; "
        "get_paper_metadata lists the available templates."
    ),
    mime_type="application/json",
)
def paper_summary_template_resource(paper_id: str, template: str) -> str:
    return _read_summary(paper_id, template)


@mcp_resource(
    "paper://{paper_id}/source",
    name="paper_source",
    title="Paper full text (markdown)",
    description=(
        f"The paper's full text as markdown, cut after "
        f"{settings.RESOURCE_DEFAULT_MAX_CHARS} characters (get_paper_source takes "
        "max_chars)."
    ),
    mime_type="text/markdown",
)
def paper_source_resource(paper_id: str) -> str:
    paper = paper_get(ref=paper_id, scope=current_scope())
    source = assets.source_get(paper=paper)
    more = _resource_more("get_paper_source", len(source.text))
    return assets.truncate(source.text, settings.RESOURCE_DEFAULT_MAX_CHARS, more=more)


@mcp_resource(
    "paper://{paper_id}/translation/{lang}",
    name="paper_translation",
    title="Paper translation (markdown)",
    description=(
        "The paper translated into a language (code such as zh or pt-BR), as markdown, "
        f"cut after {settings.RESOURCE_DEFAULT_MAX_CHARS} characters."
    ),
    mime_type="text/markdown",
)
def paper_translation_resource(paper_id: str, lang: str) -> str:
    paper = paper_get(ref=paper_id, scope=current_scope())
    translation = assets.translation_get(paper=paper, lang=lang)
    more = _resource_more(f"get_paper_source (lang='{translation.name}')", len(translation.text))
    return assets.truncate(translation.text, settings.RESOURCE_DEFAULT_MAX_CHARS, more=more)


def register(registry: Registry) -> None:
    registry.add_tools(get_paper_summary, get_paper_source, save_paper_summary)
    registry.add_resources(
        paper_summary_resource,
        paper_summary_template_resource,
        paper_source_resource,
        paper_translation_resource,
    )
