"""Tool set `assets`: paper summaries (by template), source markdown and translations
(seed 000 "Paper detail tools with static asset proxy", "Paper resources with
template-aware summaries", "Content size limits", "Asset fetch errors").

The content comes back as text; where it is stored (a file, ASSET_BASE_URL) never does.
Reading and the errors are `papers.assets`; the registry maps its errors: an unknown
template, a missing asset, a failed fetch or parse are `isError` results for tools; for
resources the first two (NotFound subclasses) are -32602 and the others -32603, each with
the message (the registry's resource errors carry no details).
"""

from __future__ import annotations

from typing import Annotated

from django.conf import settings
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field

from mcp_endpoint.registry import READ_ONLY, Registry
from mcp_endpoint.scope import current_scope
from mcp_endpoint.tools.library import PaperRef
from papers import assets
from papers.selectors import paper_get

# Large enough for any asset (ASSET_MAX_BYTES is 5 MB by default); a bigger value is a
# -32602 validation error rather than a silent clamp.
MAX_CHARS_LIMIT = 10_000_000

SAVE_SUMMARY = ToolAnnotations(
    # Replaces the summary of the same template, so repeating a call changes nothing more.
    read_only_hint=False,
    destructive_hint=True,
    idempotent_hint=True,
    open_world_hint=False,
)
Template = Annotated[
    str,
    Field(
        pattern=assets.TEMPLATE_PATTERN,
        description=(
            "Summary template name, e.g. 'brief' or 'deep_read' (letters, digits, '_', '-', "
            "'.'); see available_summary_templates in get_paper_metadata."
        ),
    ),
]
MaxChars = Annotated[
    int | None,
    Field(
        ge=1,
        le=MAX_CHARS_LIMIT,
        description=(
            "Return at most this many characters; longer content is cut and ends with a "
            "[TRUNCATED: ...] marker saying how much was cut. Omit for the full content."
        ),
    ),
]


class SummaryContent(BaseModel):
    paper_id: int
    template: str = Field(description="The template returned (the preferred one by default).")
    content: str = Field(description="The summary: its full JSON text (unless truncated).")
    total_chars: int = Field(description="Length of the whole summary in characters.")
    truncated: bool


class SourceContent(BaseModel):
    paper_id: int
    lang: str | None = Field(description="The translation's language; null for the original.")
    content: str = Field(description="The paper's source markdown (unless truncated).")
    total_chars: int = Field(description="Length of the whole source in characters.")
    truncated: bool


class SummarySaved(BaseModel):
    paper_id: int
    template: str
    size: int = Field(description="Bytes stored.")
    preferred_summary_template: str | None
    available_summary_templates: list[str]


def _content_result(
    text: str, max_chars: int | None, more: str, **fields: object
) -> CallToolResult:
    """The content as the text block an LLM reads, and the same with its facts as
    structured content."""
    shown = assets.truncate(text, max_chars, more=more)
    structured = {**fields, "content": shown, "total_chars": len(text), "truncated": shown != text}
    return CallToolResult(
        content=[TextContent(type="text", text=shown)], structured_content=structured
    )


def _resource_more(tool: str, total: int) -> str:
    return (
        f"Resources return at most {settings.RESOURCE_DEFAULT_MAX_CHARS} characters; "
        f"call {tool} with max_chars={total} for the rest."
    )


def register(registry: Registry) -> None:
    @registry.tool(
        name="get_paper_summary",
        title="Get a paper summary",
        description=(
            "Return a stored summary of one paper as its full JSON text. Papers can have "
            "several summaries made with different templates (e.g. 'brief', 'deep_read'): "
            "call get_paper_metadata first to see available_summary_templates and the "
            "preferred_summary_template, which is returned when template is omitted. "
            "An unknown template is a 'template_not_available' error listing the available "
            "ones. Use max_chars to limit the size; cut content ends with a truncation marker."
        ),
        annotations=READ_ONLY,
    )
    def get_paper_summary(
        paper_id: PaperRef,
        template: Template | None = None,
        max_chars: MaxChars = None,
    ) -> Annotated[CallToolResult, SummaryContent]:
        paper = paper_get(ref=paper_id, scope=current_scope())
        summary = assets.summary_get(paper=paper, template=template)
        more = (
            f"Call get_paper_summary with template='{summary.name}' and "
            f"max_chars={len(summary.text)} for the full summary."
        )
        return _content_result(
            summary.text, max_chars, more, paper_id=paper.pk, template=summary.name
        )

    @registry.tool(
        name="get_paper_source",
        title="Get a paper's full text (markdown)",
        description=(
            "Return the full text of one paper as markdown (converted from its PDF or source). "
            "Warning: this can be very large (hundreds of thousands of characters); pass "
            "max_chars (e.g. 10000) to limit it, and prefer get_paper_summary when a summary "
            "is enough. Cut content ends with a truncation marker saying how much was cut. "
            "With lang (e.g. 'zh', 'pt-BR') it returns the paper's translation into that "
            "language instead. A paper without source markdown (or without that translation) "
            "gives an 'asset_not_found' error."
        ),
        annotations=READ_ONLY,
    )
    def get_paper_source(
        paper_id: PaperRef,
        max_chars: MaxChars = None,
        lang: Annotated[
            str | None,
            Field(
                pattern=assets.LANGUAGE_PATTERN,
                description="A language code: return the translation into it instead.",
            ),
        ] = None,
    ) -> Annotated[CallToolResult, SourceContent]:
        paper = paper_get(ref=paper_id, scope=current_scope())
        if lang is None:
            source = assets.source_get(paper=paper)
        else:
            source = assets.translation_get(paper=paper, lang=lang)
        language = f"lang='{source.name}' and " if lang else ""
        more = f"Call get_paper_source with {language}max_chars={len(source.text)} for all of it."
        return _content_result(
            source.text, max_chars, more, paper_id=paper.pk, lang=source.name or None
        )

    @registry.tool(
        name="save_paper_summary",
        title="Save a paper summary",
        description=(
            "Store a summary you wrote for one paper under a template name (e.g. 'brief'), "
            "replacing an earlier summary of that template. content must be a JSON object "
            "(the summary itself, not a string holding JSON), at most "
            f"{settings.ASSET_MAX_BYTES} bytes. The paper's first summary becomes its "
            "preferred one; set_preferred=true makes this one preferred. Returns the "
            "paper's templates after saving."
        ),
        annotations=SAVE_SUMMARY,
    )
    def save_paper_summary(
        paper_id: PaperRef,
        template: Template,
        content: Annotated[
            str,
            Field(
                min_length=2,
                max_length=settings.ASSET_MAX_BYTES,
                description='The summary as JSON text, e.g. \'{"tldr": "...", "findings": []}\'.',
            ),
        ],
        set_preferred: Annotated[
            bool, Field(description="Make this template the paper's preferred summary.")
        ] = False,
    ) -> SummarySaved:
        paper = paper_get(ref=paper_id, scope=current_scope())
        asset = assets.asset_save(
            paper=paper,
            kind=assets.Kind.SUMMARY,
            name=template,
            content=content,
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

    def read_summary(paper_id: str, template: str | None) -> str:
        paper = paper_get(ref=paper_id, scope=current_scope())
        summary = assets.summary_get(paper=paper, template=template)
        more = _resource_more(f"get_paper_summary (template='{summary.name}')", len(summary.text))
        return assets.truncate(summary.text, settings.RESOURCE_DEFAULT_MAX_CHARS, more=more)

    @registry.resource(
        "paper://{paper_id}/summary",
        name="paper_summary",
        title="Paper summary (preferred template)",
        description="The paper's summary in its preferred template, as JSON.",
        mime_type="application/json",
    )
    def paper_summary_resource(paper_id: str) -> str:
        return read_summary(paper_id, None)

    @registry.resource(
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
        return read_summary(paper_id, template)

    @registry.resource(
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

    @registry.resource(
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
        more = _resource_more(
            f"get_paper_source (lang='{translation.name}')", len(translation.text)
        )
        return assets.truncate(translation.text, settings.RESOURCE_DEFAULT_MAX_CHARS, more=more)
