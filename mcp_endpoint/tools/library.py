"""Tool set `library`: papers, projects, keywords and exports (and the
resources `papers://{project_id}` and `paper://{paper_id}/metadata`).

Each tool parses its arguments (the schema enforces the limits), calls one selector or
service with the client's collection scope, and shapes the answer. Service errors are
mapped by `mcp_endpoint.registry`.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from django.conf import settings
from mcp_types import ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field

from core.errors import InvalidInput
from core.markdown import escape_markdown as md
from core.paging import next_offset
from mcp_endpoint.registry import READ_ONLY, Registry, mcp_resource, mcp_tool, serving_read_only
from mcp_endpoint.scope import current_scope
from papers import selectors as paper_selectors
from papers import services as paper_services
from papers.exports import export_search_results, render_export
from projects import selectors as project_selectors
from projects import services as project_services

MAX_REF_CHARS = paper_selectors.MAX_REF_LENGTH
MAX_PAPERS_PER_CALL = settings.MAX_PAGE_SIZE
RESOURCE_LIST_LIMIT = 100

PaperRefValue = paper_selectors.PaperRefValue
# What a paper or project argument takes is told once, in the server's instructions
# (registry.INSTRUCTIONS), not in every schema.
PaperRef = PaperRefValue
ProjectRef = Annotated[str, Field(min_length=1, max_length=200)]
Keyword = Annotated[str, Field(min_length=1, max_length=100)]

WRITE = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
)
WRITE_IDEMPOTENT = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
KEYWORDS_WRITE = ToolAnnotations(
    # 'remove' and 'set' drop keywords, so clients should confirm; repeating a call is harmless.
    read_only_hint=False,
    destructive_hint=True,
    idempotent_hint=True,
    open_world_hint=False,
)


class PaperRecord(BaseModel):
    """A paper record; the selectors decide the full field list (extra fields allowed)."""

    model_config = ConfigDict(extra="allow")

    paper_id: int = Field(description="Integer id; the cheapest way to refer to the paper.")
    id: str = Field(description="Human-readable id, e.g. '[Vaswani, A., Shazeer, N. 2017]'.")
    citekey: str = Field(description="BibTeX citation key.")
    title: str
    year: int | None = None
    authors: list[str] = Field(default_factory=list)


class PaperMetadata(PaperRecord):
    """The compact record plus what get_paper_summary needs to know."""

    preferred_summary_template: str | None = Field(
        default=None,
        description="The template get_paper_summary returns when none is named; null if unset.",
    )
    available_summary_templates: list[str] = Field(
        default_factory=list,
        description="Templates this paper has a summary for (pass one to get_paper_summary).",
    )


class ProjectPapersPage(BaseModel):
    project_id: str
    project_name: str
    total: int = Field(description="How many papers the project holds.")
    limit: int
    offset: int
    next_offset: int | None = Field(
        description="Pass as offset to get the next page; null on the last page."
    )
    papers: list[PaperRecord]


class ProjectCreated(BaseModel):
    project_id: str = Field(description="The new project's id; use it as project_id elsewhere.")
    name: str
    description: str


class KeywordsUpdated(BaseModel):
    action: Literal["add", "remove", "set"]
    keywords_by_paper: dict[str, list[str]] = Field(
        description="paper_id (as text) -> the paper's keywords after the change."
    )


class BibtexEntry(BaseModel):
    paper_id: int
    citekey: str
    bibtex: str


Abstracts = Annotated[bool, Field(description="false: without abstracts (most of the size).")]
ExportFormat = Literal["bibtex", "csv", "json", "jsonl", "markdown", "ris"]
# Exports up to this size come back inline (about 5,000 tokens); larger ones go to a file.
INLINE_EXPORT_BYTES = 20_000


def _export(
    *,
    fmt: str,
    refs: list[str | int] | None,
    project: str | None,
    filename: str | None,
    to_file: bool,
    read_only: bool,
    abstracts: bool = True,
) -> dict[str, Any]:
    if read_only and to_file:
        raise InvalidInput(
            "This server is read-only: exports come back inline only; omit to_file.",
            field="to_file",
        )
    return export_search_results(
        fmt=fmt, refs=refs, project=project, filename=filename,
        inline_max_bytes=0 if to_file else INLINE_EXPORT_BYTES, scope=current_scope(),
        write=not read_only, abstracts=abstracts,
    )  # fmt: skip


def _record(data: dict[str, Any]) -> PaperRecord:
    return PaperRecord.model_validate(data)


def _paper_metadata(ref: str | int) -> dict[str, Any]:
    return paper_selectors.paper_metadata(ref=ref, scope=current_scope())


def _project_papers_markdown(project_ref: str) -> str:
    project = project_selectors.project_get(ref=project_ref, scope=current_scope())
    papers, total = project_selectors.project_papers(
        project=project, limit=RESOURCE_LIST_LIMIT, offset=0
    )
    lines = [f"# {md(project.name)}", ""]
    if project.description:
        lines += [md(project.description), ""]
    lines += [f"Project id: `{project.id}` - {total} paper(s).", ""]
    for paper in papers:
        brief = paper_selectors.paper_brief(paper)
        # Titles, names and keywords are other people's words: escaped, never markup.
        authors = ", ".join(brief["authors"][:6]) + (" et al." if len(brief["authors"]) > 6 else "")
        where = ", ".join(str(part) for part in (brief["venue"], brief["year"]) if part)
        lines.append(f"- **{md(brief['title'])}** ({md(where) or 'n.d.'})")
        human_id = brief["id"].replace("`", "'")
        lines.append(
            f"  {md(authors) or 'Unknown authors'} - `{human_id}`, paper_id {brief['paper_id']}"
        )
        if brief["keywords"]:
            lines.append(f"  Keywords: {md(', '.join(brief['keywords']))}")
    if total > len(papers):
        lines += [
            "",
            f"... {total - len(papers)} more; call list_project_papers with offset "
            f"{len(papers)} to page through them.",
        ]
    return "\n".join(lines) + "\n"


DESTRUCTIVE = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
)
PaperRefs = Annotated[list[PaperRefValue], Field(min_length=1, max_length=MAX_PAPERS_PER_CALL)]
Limit = Annotated[int, Field(ge=1, le=settings.MAX_PAGE_SIZE)]
Offset = Annotated[int, Field(ge=0, le=settings.MAX_OFFSET)]


@mcp_tool(
    name="get_paper_details",
    title="Paper details",
    description=(
        "A library paper's full record: abstract, authors with affiliations, identifiers, "
        "urls, has_pdf, projects, keywords, summaries, annotation_count."
    ),
    annotations=READ_ONLY,
)
def get_paper_details(paper_id: PaperRef) -> PaperRecord:
    return _record(paper_selectors.paper_detail(ref=paper_id, scope=current_scope()))


@mcp_tool(
    name="get_paper_metadata",
    title="Paper metadata",
    description=(
        "A paper's record without abstract and free text, plus its summary templates "
        "(for get_paper_summary)."
    ),
    annotations=READ_ONLY,
)
def get_paper_metadata(paper_id: PaperRef) -> PaperMetadata:
    return PaperMetadata.model_validate(_paper_metadata(paper_id))


@mcp_tool(
    name="list_projects",
    title="List projects",
    description="Every project (collection) you can see, with its paper_count.",
    annotations=READ_ONLY,
)
def list_projects() -> dict[str, Any]:
    listed = project_selectors.project_list(scope=current_scope())
    return {"projects": [project_selectors.project_brief(p) for p in listed]}


@mcp_tool(
    name="get_project",
    title="Project",
    description="One project: description, paper_count, years and top keywords.",
    annotations=READ_ONLY,
)
def get_project(project_id: ProjectRef) -> dict[str, Any]:
    return project_selectors.project_detail(ref=project_id, scope=current_scope())


@mcp_tool(
    name="list_project_papers",
    title="Project papers",
    description="A project's papers, most recently added first, a page at a time.",
    annotations=READ_ONLY,
)
def list_project_papers(
    project_id: ProjectRef, limit: Limit = 20, offset: Offset = 0
) -> ProjectPapersPage:
    project = project_selectors.project_get(ref=project_id, scope=current_scope())
    papers, total = project_selectors.project_papers(project=project, limit=limit, offset=offset)
    return ProjectPapersPage(
        project_id=project.id,
        project_name=project.name,
        total=total,
        limit=limit,
        offset=offset,
        next_offset=next_offset(offset, len(papers), total),
        papers=[_record(paper_selectors.paper_brief(p)) for p in papers],
    )


@mcp_tool(
    name="create_project",
    title="Create a project",
    description=(
        "Create a project (a named collection of papers); returns its project_id. An "
        "existing name is a 'conflict' error."
    ),
    annotations=WRITE,
)
def create_project(
    name: Annotated[str, Field(min_length=1, max_length=200)],
    description: Annotated[str, Field(max_length=5000)] = "",
) -> ProjectCreated:
    project = project_services.project_create(name=name, description=description)
    return ProjectCreated(project_id=project.id, name=project.name, description=project.description)


@mcp_tool(
    name="add_papers_to_project",
    title="Add papers to a project",
    description=(
        "File library papers in a project (add_paper adds new ones). All or nothing: an "
        "unknown paper changes nothing."
    ),
    annotations=WRITE_IDEMPOTENT,
)
def add_papers_to_project(project_id: ProjectRef, paper_ids: PaperRefs) -> dict[str, Any]:
    scope = current_scope()
    project = project_selectors.project_get(ref=project_id, scope=scope)
    return project_services.project_papers_add(project=project, refs=paper_ids, scope=scope)


@mcp_tool(
    name="remove_papers_from_project",
    title="Remove papers from a project",
    description="Take papers out of a project; they stay in the library.",
    annotations=WRITE_IDEMPOTENT,
)
def remove_papers_from_project(project_id: ProjectRef, paper_ids: PaperRefs) -> dict[str, Any]:
    scope = current_scope()
    project = project_selectors.project_get(ref=project_id, scope=scope)
    return project_services.project_papers_remove(project=project, refs=paper_ids, scope=scope)


@mcp_tool(
    name="delete_project",
    title="Delete a project",
    description=(
        "Delete a project; its papers stay in the library. confirm_name must repeat the "
        "project's name exactly."
    ),
    annotations=DESTRUCTIVE,
)
def delete_project(
    project_id: ProjectRef, confirm_name: Annotated[str, Field(min_length=1, max_length=200)]
) -> dict[str, Any]:
    scope = current_scope()
    project = project_selectors.project_get(ref=project_id, scope=scope)
    return project_services.project_delete_confirmed(
        project=project, confirm_name=confirm_name, scope=scope
    )


@mcp_tool(
    name="manage_paper_keywords",
    title="Edit paper keywords",
    description=(
        "Add, remove or set (replace; [] clears) the keywords of one or more papers. All "
        "or nothing. Returns each paper's keywords."
    ),
    annotations=KEYWORDS_WRITE,
)
def manage_paper_keywords(
    paper_ids: PaperRefValue
    | Annotated[list[PaperRefValue], Field(min_length=1, max_length=MAX_PAPERS_PER_CALL)],
    action: Literal["add", "remove", "set"],
    keywords: Annotated[list[Keyword], Field(max_length=50)],
) -> KeywordsUpdated:
    refs = paper_ids if isinstance(paper_ids, list) else [paper_ids]
    updated = paper_services.paper_keywords_update(
        refs=refs, action=action, keywords=keywords, scope=current_scope()
    )
    return KeywordsUpdated(
        action=action,
        keywords_by_paper={str(pid): names for pid, names in updated.items()},
    )


@mcp_tool(
    name="export_paper_bibtex",
    title="Paper BibTeX",
    description="One paper's BibTeX entry, keyed by its citekey.",
    annotations=READ_ONLY,
)
def export_paper_bibtex(paper_id: PaperRef, abstracts: Abstracts = True) -> BibtexEntry:
    papers = list(paper_selectors.papers_filter(refs=[paper_id], scope=current_scope()))
    paper = papers[0]
    bibtex = render_export(papers, "bibtex", abstracts=abstracts)
    return BibtexEntry(paper_id=paper.pk, citekey=paper.citekey, bibtex=bibtex)


@mcp_tool(
    name="export_search_results",
    title="Export papers",
    description=(
        "Export papers (paper_ids, a project_id, or both) as BibTeX, CSV, JSON, JSONL, "
        "Markdown or RIS: inline when small, else (or with to_file) a new file in exports/."
    ),
    annotations=WRITE_IDEMPOTENT,
    saves_results=True,
)
def export_search_results_tool(
    format: ExportFormat,
    paper_ids: Annotated[list[PaperRefValue] | None, Field(max_length=MAX_PAPERS_PER_CALL)] = None,
    project_id: Annotated[str | None, Field(max_length=200)] = None,
    filename: Annotated[str | None, Field(max_length=100, description="Without extension.")] = None,
    to_file: Annotated[bool, Field(description="Write a file even when small.")] = False,
    abstracts: Abstracts = True,
) -> dict[str, Any]:
    return _export(
        fmt=format, refs=list(paper_ids) if paper_ids else None,
        project=project_id or None, filename=filename, to_file=to_file,
        read_only=serving_read_only(), abstracts=abstracts,
    )  # fmt: skip


@mcp_resource(
    "papers://{project_id}",
    name="project_papers",
    title="Papers of a project",
    description=(
        "Markdown list of a research project's papers (first 100; page with list_project_papers)."
    ),
    mime_type="text/markdown",
)
def project_papers_resource(project_id: str) -> str:
    return _project_papers_markdown(project_id)


@mcp_resource(
    "paper://{paper_id}/metadata",
    name="paper_metadata",
    title="Paper metadata",
    description="The structured record of one paper as JSON (as get_paper_metadata).",
    mime_type="application/json",
)
def paper_metadata_resource(paper_id: str) -> str:
    return json.dumps(_paper_metadata(paper_id), ensure_ascii=False, default=str)


def register(registry: Registry) -> None:
    registry.add_tools(
        get_paper_details,
        get_paper_metadata,
        list_projects,
        get_project,
        list_project_papers,
        create_project,
        add_papers_to_project,
        remove_papers_from_project,
        delete_project,
        manage_paper_keywords,
        export_paper_bibtex,
        export_search_results_tool,
    )
    registry.add_resources(project_papers_resource, paper_metadata_resource)
